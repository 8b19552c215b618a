"""The dashboard: a static single-page app at /dashboard (files in static/dashboard, shipped as package data).

The page holds no data and needs no auth; everything it shows it reads from the REST API in the browser with the
user's bearer token (typed into its login form, kept in sessionStorage, sent as `Authorization: Bearer`), so it
sees exactly what that token may see and admin buttons work only for admin tokens.
"""
from __future__ import annotations

from importlib.resources import files

from fastapi import FastAPI
from fastapi.responses import FileResponse, RedirectResponse
from fastapi.staticfiles import StaticFiles

STATIC_DIR = files("tuner_server.api") / "static" / "dashboard"
# Everything from this origin, nothing inline: injected markup could neither run nor send data elsewhere.
SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
                               "connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'",
    "Referrer-Policy": "no-referrer",
    "X-Content-Type-Options": "nosniff",
    "Cache-Control": "no-cache",
}


def install_dashboard(app: FastAPI) -> None:
    app.mount("/dashboard/static", StaticFiles(directory=str(STATIC_DIR)), name="dashboard-static")

    @app.get("/dashboard", include_in_schema=False)
    async def dashboard() -> FileResponse:
        return FileResponse(STATIC_DIR / "index.html", media_type="text/html", headers=SECURITY_HEADERS)

    @app.get("/", include_in_schema=False)
    async def root() -> RedirectResponse:
        return RedirectResponse("/dashboard")
