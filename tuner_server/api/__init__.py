"""The tuner's REST API (FastAPI): `create_app(settings, session_factory, driver)` in `app.py`.

`schemas.py` is the contract (pydantic only) that the Python client (`tunefarm_client`) also validates against;
importing it does not import FastAPI or the database layer.
"""
