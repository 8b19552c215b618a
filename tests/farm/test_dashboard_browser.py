"""The dashboard and the API docs in a real browser (Debian's headless chromium) against a real tuner process and
a CPU agent process running a real matmul 64^3 job:

- without a token the page shows only its sign-in form, and a wrong token is refused;
- a read token sees the farm (the agent, its class, the task it holds) and the jobs, but no admin buttons;
- as admin, a job's tuning curve gains points while the job runs, and its cancel button cancels it;
- as admin, the new-job form submits a job with strategy options, and shows the server's refusal of bad ones
  without making a job (a read token is not offered the form);
- the schedule key's history lists its versions with a diff; pin and rollback append versions;
- /docs and /redoc render, and no request of the whole session left 127.0.0.1 (other hosts do not resolve, and
  Chrome's network log is checked too).

Screenshots go to the test's tmp dir, and to $TUNEFARM_SCREENSHOTS when set (docs/screenshots in the README).
"""
from __future__ import annotations

import time

import pytest

from tests.farm.browser_support import (
    Screenshots,
    requested_urls,
    requests_left_loopback,
    skip_reason,
    start_browser,
)
from tests.farm.farm_support import FAST_MEASURE, MATMUL

pytestmark = pytest.mark.skipif(skip_reason() is not None, reason=skip_reason() or "")
READ_TOKEN = "tfr_dashboard_test_read_token_0123456789"
BUDGET = 300  # far more than the test lets run: it is cancelled while running
WAIT_S = 30


@pytest.fixture
def browser():
    driver = start_browser()
    yield driver
    driver.quit()


def _wait(driver, what: str, predicate, timeout_s: float = WAIT_S):
    """Until `predicate(driver)` is truthy; the polled pages redraw every 2 s, so an element found may be replaced
    before it is read: that read is simply tried again."""
    from selenium.common.exceptions import NoSuchElementException, StaleElementReferenceException, TimeoutException
    from selenium.webdriver.support.ui import WebDriverWait

    try:
        return WebDriverWait(driver, timeout_s, poll_frequency=0.2,
                             ignored_exceptions=(NoSuchElementException, StaleElementReferenceException)).until(
            lambda d: predicate(d))
    except TimeoutException:
        raise AssertionError(f"timed out after {timeout_s} s waiting for {what}; the page's status line: "
                             f"{_text(driver, 'status')!r}; it shows:\n{_text(driver, 'view')[:1500]}") from None


def _text(driver, element_id: str) -> str:
    return driver.execute_script("return document.getElementById(arguments[0])?.textContent ?? ''", element_id)


def _css(driver, selector: str):
    from selenium.webdriver.common.by import By

    return driver.find_elements(By.CSS_SELECTOR, selector)


def _sign_in(driver, token: str) -> None:
    _wait(driver, "the sign-in form", lambda d: d.find_element("id", "login").is_displayed())
    driver.find_element("id", "token").send_keys(token)
    driver.find_element("css selector", "#login-form button").click()


def _go(driver, url: str, selector: str, what: str):
    driver.get(url)
    return _wait(driver, what, lambda d: _css(d, selector))


def _curve_points(driver) -> int:
    return driver.execute_script("return Number(document.getElementById('curve')?.dataset.points ?? -1)")


def _curve_drawn(driver) -> tuple[int, int]:
    """(points the API returned, marks drawn), read in one go: the page may redraw between two reads."""
    return tuple(driver.execute_script(
        "const c = document.getElementById('curve');"
        "return [Number(c.dataset.points), c.querySelectorAll('svg .trial').length];"))


def _submit_job_form(driver, page: str, device_class: str, params: dict, options: str) -> None:
    from selenium.webdriver.support.ui import Select

    _go(driver, f"{page}#/new", "#new-job #params legend", "the new-job form")
    Select(driver.find_element("id", "op")).select_by_value("matmul")
    _wait(driver, "matmul's params", lambda d: d.execute_script(
        "return document.querySelector('#params legend')?.textContent.startsWith('matmul:')"))
    for name, value in params.items():
        field = driver.find_element("id", f"param-{name}")
        field.clear()
        field.send_keys(str(value))
    Select(driver.find_element("id", "device")).select_by_value(device_class)
    driver.find_element("id", "trials").clear()
    driver.find_element("id", "trials").send_keys("3")
    _wait(driver, "the model strategy's options", lambda d: "members" in _text(d, "strategy-option-list"))
    driver.find_element("id", "strategy-options").send_keys(options)
    driver.find_element("css selector", '#new-job button[type="submit"]').click()


def test_dashboard_follows_a_live_job_and_docs_stay_offline(farm, browser, tmp_path):
    shots = Screenshots(tmp_path)
    f = farm(agents=1, env={"TUNEFARM_READ_TOKEN": READ_TOKEN})
    page = f"{f.url}/dashboard"

    # no token: the sign-in form and nothing else; a wrong token is refused
    browser.get(f"{page}#/farm")
    _sign_in(browser, "tf_not_a_token")
    _wait(browser, "the refusal", lambda d: "refused" in _text(d, "login-error"))
    assert not browser.find_element("id", "nav").is_displayed() and not _css(browser, "#agents")
    shots.take(browser, "sign-in")

    # a read token sees the agent, what it works on, and the job, without admin buttons
    _sign_in(browser, READ_TOKEN)
    _wait(browser, "the agent row", lambda d: _css(d, '#agents tr[data-agent-name="agent-0"][data-status="active"]'))
    with f.client() as c:
        job = c.create_job("matmul", MATMUL, "cpu", BUDGET, seed=3, measure=FAST_MEASURE)
    _wait(browser, "the agent holding a task of the job",
          lambda d: _css(d, f'#agents tr[data-agent-name="agent-0"] td.task a[href="#/job/{job.id}"]'))
    device_class = f.device_class()
    _wait(browser, "the agent's class", lambda d: device_class in _text(d, "agents"))
    shots.take(browser, "farm")
    _go(browser, f"{page}#/jobs", f'#jobs tr[data-job-id="{job.id}"][data-state="running"]', "the running job")
    assert not _css(browser, "button.cancel") and not browser.find_element("id", "nav-new").is_displayed()

    # as admin: the curve grows while the job runs, then the cancel button cancels it
    browser.find_element("id", "logout").click()
    _sign_in(browser, f.admin_token)
    _go(browser, f"{page}#/job/{job.id}", "#curve", "the job's curve")
    first = _wait(browser, "two trials on the curve", lambda d: (n := _curve_points(d)) >= 2 and n)
    _wait(browser, "more trials on the curve", lambda d: _curve_points(d) > first)
    assert _text(browser, "job-state") == "running"
    points, drawn = _curve_drawn(browser)
    assert drawn == points > first
    assert _css(browser, "#curve svg path.best")
    shots.take(browser, "job-curve")
    browser.find_element("css selector", f'button.cancel[data-job-id="{job.id}"]').click()
    browser.switch_to.alert.accept()
    _wait(browser, "the job shown cancelled", lambda d: _text(d, "job-state") == "cancelled")
    with f.client() as c:
        assert c.job(job.id).state == "cancelled"

    # a new job from the form: a refused option shows the server's line and makes nothing; then a job is made
    _submit_job_form(browser, page, device_class, {"M": 48, "N": 40, "K": 56}, '{"members": 1000}')
    _wait(browser, "the refusal", lambda d: "must be at most 32" in _text(d, "new-job-error"))
    shots.take(browser, "new-job")
    with f.client() as c:
        assert c.jobs().total == 1
    browser.find_element("id", "strategy-options").clear()
    browser.find_element("id", "strategy-options").send_keys('{"acquisition": "ei", "members": 3}')
    # an int param with a leading zero is sent as typed, and the server's refusal names the param's range
    browser.find_element("id", "param-M").clear()
    browser.find_element("id", "param-M").send_keys("048")
    browser.find_element("css selector", '#new-job button[type="submit"]').click()
    _wait(browser, "the param's refusal", lambda d: "body.params.M: '048'" in _text(d, "new-job-error"))
    assert "M is an integer from 1 to" in _text(browser, "new-job-error")
    with f.client() as c:
        assert c.jobs().total == 1
    browser.find_element("id", "param-M").clear()
    browser.find_element("id", "param-M").send_keys("48")
    browser.find_element("css selector", '#new-job button[type="submit"]').click()
    _wait(browser, "the new job's page", lambda d: "#/job/" in d.current_url and _css(d, "#curve"))
    with f.client() as c:
        made = c.job(browser.current_url.rsplit("/", 1)[1])
        assert made.workload == "matmul(M=48,N=40,K=56,dtype=float32)" and made.trial_budget == 3
        assert made.strategy_options["acquisition"] == "ei" and made.strategy_options["members"] == 3
        c.cancel_job(made.id)  # the key's history below is another key's, but the agent is wanted there

    # the key's history: versions, a diff, then pin and rollback from the page
    _go(browser, f"{page}#/schedules", "#keys a", "the schedule key")
    time.sleep(2.5)  # a refresh of the job page left behind (it polls every 2 s) must not draw over this one
    assert _css(browser, "#keys a") and not _css(browser, "#curve")
    _css(browser, "#keys a")[0].click()
    _wait(browser, "version 1", lambda d: _css(d, '#versions tr[data-version="1"]'))
    versions = len(_css(browser, "#versions tbody tr"))
    _css(browser, 'button.pin[data-version="1"]')[0].click()
    _wait(browser, "the pin's version",
          lambda d: _css(d, f'#versions tr[data-version="{versions + 1}"][data-reason="pin"]'))
    assert not _css(browser, "button.rollback")  # a pinned key refuses rollbacks: the page offers none
    browser.find_element("id", "unpin").click()
    _wait(browser, "the unpin's version", lambda d: _css(d, f'#versions tr[data-version="{versions + 2}"]'))
    _css(browser, 'button.rollback[data-version="1"]')[0].click()
    _wait(browser, "the rollback's version",
          lambda d: _css(d, f'#versions tr[data-version="{versions + 3}"][data-reason="rollback"]'))
    _wait(browser, "the diff", lambda d: f"v{versions + 3} against v{versions + 2}" in _text(d, "diff"))
    with f.client() as c:
        history = c.history("matmul", MATMUL, device_class)
    assert [v.reason for v in history.items[:3]] == ["rollback", "pin", "pin"]
    assert _text(browser, "status") == ""
    shots.take(browser, "history")
    _go(browser, f"{page}#/ops", '.op[data-op="matmul"] .space[data-target="c"]', "the ops")
    shots.take(browser, "ops")

    # the docs render from this server alone
    _go(browser, f"{f.url}/docs", ".swagger-ui .opblock", "Swagger UI's operations")
    assert "/v1/jobs/{job_id}/curve" in browser.page_source
    shots.take(browser, "docs")
    _go(browser, f"{f.url}/redoc", "redoc-wrap, .redoc-wrap", "ReDoc's page")
    _wait(browser, "ReDoc's operations", lambda d: "/v1/agents" in d.page_source)
    urls = requested_urls(browser)
    assert any(u.endswith("/docs-assets/swagger-ui-bundle.js") for u in urls)
    assert requests_left_loopback(urls) == []
