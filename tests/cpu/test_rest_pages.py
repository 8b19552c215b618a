"""The pages the tuner serves besides the API: /docs and /redoc with their assets from the installed packages (no
CDN), and the dashboard's files with their security headers. In a browser: tests/farm/test_dashboard_browser.py."""
from __future__ import annotations

import re

import pytest
from fastapi.testclient import TestClient

from tuner_server.api.app import create_app
from tuner_server.db import Base, make_engine, make_session_factory
from tuner_server.settings import Settings

DASHBOARD_FILES = ("app.js", "api.js", "dom.js", "curve.js", "farm.js", "jobs.js", "schedules.js", "ops.js",
                   "style.css")


@pytest.fixture(scope="module")
def client():
    engine = make_engine("sqlite://")
    Base.metadata.create_all(engine)
    return TestClient(create_app(Settings(database_url="sqlite://"), make_session_factory(engine), None))


def _urls(html: str) -> list[str]:
    return re.findall(r"""(?:src|href)\s*=\s*["']([^"']+)["']|url:\s*['"]([^'"]+)['"]""", html)


@pytest.mark.parametrize("path, asset", [("/docs", "swagger-ui-bundle.js"), ("/redoc", "redoc.standalone.js")])
def test_docs_pages_load_every_asset_from_this_server(client, path, asset):
    page = client.get(path)
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    urls = [u for pair in _urls(page.text) for u in pair if u]
    assert f"/docs-assets/{asset}" in urls
    assert urls and all(u.startswith("/") and not u.startswith("//") for u in urls), urls
    assert "fonts.googleapis" not in page.text and "cdn.jsdelivr" not in page.text
    # what the assets themselves would fetch (ReDoc's logo from cdn.redoc.ly) the browser must refuse
    csp = page.headers["content-security-policy"]
    assert "default-src 'self'" in csp and "img-src 'self' data:;" in csp and "connect-src 'self'" in csp
    for url in urls:
        fetched = client.get(url)
        assert fetched.status_code == 200 and len(fetched.content) > 1000, url


def test_swagger_ui_is_told_not_to_call_the_online_validator(client):
    assert '"validatorUrl": null' in client.get("/docs").text


def test_dashboard_page_is_public_and_locked_to_this_origin(client):
    page = client.get("/dashboard")
    assert page.status_code == 200 and '<form id="login-form"' in page.text
    csp = page.headers["content-security-policy"]
    assert "default-src 'self'" in csp and "script-src 'self'" in csp and "unsafe-inline" not in csp
    assert page.headers["referrer-policy"] == "no-referrer"
    root = client.get("/", follow_redirects=False)
    assert root.status_code == 307 and root.headers["location"] == "/dashboard"


@pytest.mark.parametrize("name", DASHBOARD_FILES)
def test_dashboard_files_are_served_from_the_package(client, name):
    got = client.get(f"/dashboard/static/{name}")
    assert got.status_code == 200
    kind = "text/css" if name.endswith(".css") else "javascript"
    assert kind in got.headers["content-type"]
    text = got.text.replace('"http://www.w3.org/2000/svg"', "")  # a namespace name, not a fetch
    assert "http://" not in text and "https://" not in text  # nothing fetched from elsewhere


def test_dashboard_never_puts_the_token_in_a_url_or_the_console():
    """The token goes into sessionStorage and the Authorization header only."""
    from tuner_server.api.dashboard import STATIC_DIR

    source = "\n".join((STATIC_DIR / name).read_text() for name in DASHBOARD_FILES if name.endswith(".js"))
    assert "localStorage" not in source and "console." not in source
    assert re.search(r"Authorization: `Bearer \$\{token\}`", source)
    assert not re.search(r"[?&]token=", source)


def test_missing_dashboard_file_is_a_404_json_error(client):
    missing = client.get("/dashboard/static/nope.js")
    assert missing.status_code == 404 and missing.json() == {"error": "Not Found", "detail": None}
