"""Debian's chromium, driven by Selenium through Debian's chromedriver, for the dashboard tests.

Both paths are given explicitly, so Selenium Manager never downloads a browser or a driver; with neither
installed the tests skip, saying what to install. The browser may reach 127.0.0.1 only: every other host name
resolves to nothing, and `requests_left_loopback` reads Chrome's network log to prove no request went elsewhere.
"""
from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from tests.ports import free_port

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage", "--window-size=1280,1000",
         "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1")
SCREENSHOTS_ENV = "TUNEFARM_SCREENSHOTS"  # a directory the run's screenshots are copied to (docs/screenshots)


def skip_reason() -> str | None:
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed (pip install -e '.[dev]')"
    missing = [str(p) for p in (CHROMIUM, CHROMEDRIVER) if not os.access(p, os.X_OK)]
    if missing:
        return f"{' and '.join(missing)} missing: apt-get install chromium chromium-driver"
    return None


def start_browser():
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for flag in FLAGS:
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"performance": "ALL"})
    # chromedriver's port from tests/ports.py: Selenium's own is one the kernel handed out and took back
    service = Service(executable_path=str(CHROMEDRIVER), port=free_port())
    return webdriver.Chrome(service=service, options=options)


def requested_urls(driver) -> list[str]:
    """Every URL the browser sent a request for since the last call (reading drains Chrome's performance log);
    requests the browser refused itself (a Content-Security-Policy, for one) never left it and are not listed."""
    asked: dict[str, str] = {}
    refused: set[str] = set()
    for entry in driver.get_log("performance"):
        message = json.loads(entry["message"])["message"]
        params = message.get("params", {})
        if message["method"] == "Network.requestWillBeSent":
            asked[params["requestId"]] = params["request"]["url"]
        elif message["method"] == "Network.loadingFailed" and params.get("blockedReason"):
            refused.add(params["requestId"])
    return [url for request_id, url in asked.items() if request_id not in refused]


def requests_left_loopback(urls: list[str]) -> list[str]:
    return [u for u in urls if not (u.startswith("http://127.0.0.1:") or u.startswith(("data:", "blob:")))]


class Screenshots:
    """Saved under the test's tmp dir; copied to $TUNEFARM_SCREENSHOTS too when it is set."""

    def __init__(self, tmp: Path):
        self.dir = tmp / "screenshots"
        self.dir.mkdir(parents=True, exist_ok=True)
        target = os.environ.get(SCREENSHOTS_ENV)
        self.copy_to = Path(target) if target else None

    def take(self, driver, name: str) -> Path:
        path = self.dir / f"{name}.png"
        assert driver.save_screenshot(str(path)), f"screenshot {name} failed"
        if self.copy_to is not None:
            self.copy_to.mkdir(parents=True, exist_ok=True)
            shutil.copy(path, self.copy_to / path.name)
        return path

