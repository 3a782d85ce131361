"""The API's request and response models (pydantic), one module per resource."""
