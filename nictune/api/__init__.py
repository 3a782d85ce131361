"""nictune's REST service: FastAPI app factory, routers, schemas, auth, job runner, client.

Typical use::

    from nictune.api import ApiSettings, create_app
    app = create_app(ApiSettings(db_url="sqlite:///history.db"))
"""

from nictune.api.app import create_app
from nictune.api.settings import ApiSettings

__all__ = ["ApiSettings", "create_app"]
