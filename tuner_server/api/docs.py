"""/docs (Swagger UI) and /redoc with their scripts and styles served by the tuner itself, from the pinned
fastapi-offline package: FastAPI's defaults load them from a CDN, which a farm on a closed network cannot reach."""
from __future__ import annotations

from importlib.resources import files

from fastapi import FastAPI
from fastapi.openapi.docs import get_redoc_html, get_swagger_ui_html
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles

DOCS_ASSETS = "/docs-assets"
# FastAPI's pages start Swagger UI and ReDoc with inline scripts, and both inject styles; every fetch stays on this
# origin. The policy also keeps ReDoc from loading its sidebar logo from cdn.redoc.ly (hard-coded in its bundle).
DOCS_POLICY = {"Content-Security-Policy": "default-src 'self'; script-src 'self' 'unsafe-inline'; "
                                          "style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
                                          "worker-src 'self' blob:; connect-src 'self'; frame-ancestors 'none'"}
# fastapi-offline ships swagger-ui-bundle.js, swagger-ui.css, redoc.standalone.js and a favicon.
ASSETS_DIR = files("fastapi_offline") / "static"


def install_docs(app: FastAPI) -> None:
    """Create the app with docs_url=None and redoc_url=None, then call this."""
    app.mount(DOCS_ASSETS, StaticFiles(directory=str(ASSETS_DIR)), name="docs-assets")
    favicon = f"{DOCS_ASSETS}/favicon.png"

    @app.get("/docs", include_in_schema=False)
    async def swagger_ui() -> HTMLResponse:
        # validatorUrl null: Swagger UI would otherwise send the schema to validator.swagger.io
        page = get_swagger_ui_html(openapi_url=app.openapi_url, title=f"{app.title} - Swagger UI",
                                   swagger_js_url=f"{DOCS_ASSETS}/swagger-ui-bundle.js",
                                   swagger_css_url=f"{DOCS_ASSETS}/swagger-ui.css", swagger_favicon_url=favicon,
                                   swagger_ui_parameters={"validatorUrl": None})
        page.headers.update(DOCS_POLICY)
        return page

    @app.get("/redoc", include_in_schema=False)
    async def redoc() -> HTMLResponse:
        page = get_redoc_html(openapi_url=app.openapi_url, title=f"{app.title} - ReDoc",
                              redoc_js_url=f"{DOCS_ASSETS}/redoc.standalone.js", redoc_favicon_url=favicon,
                              with_google_fonts=False)
        page.headers.update(DOCS_POLICY)
        return page
