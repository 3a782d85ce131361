"""Read queries of the REST service (SQLAlchemy selects over the shared models)."""
