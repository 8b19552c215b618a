"""TunefarmClient tries again where the farm was briefly unable to answer, and only where a second try is harmless.

The server here is httpx.MockTransport (a TEST DOUBLE answering from a script); the sleeps are recorded, not slept."""
from __future__ import annotations

import httpx
import pytest

from tunefarm_client import TunefarmClient, TunefarmError
from tunefarm_client.retrying import NO_RETRY, RetryPolicy

HEALTH = {"status": "ok", "database": "ok", "codegen_version": "test"}


def scripted(*answers):
    """A transport answering each request with the next of `answers`: a status (with Retry-After when a tuple) or an
    exception to raise; it records the methods it saw."""
    seen: list[str] = []
    queue = list(answers)

    def handle(request: httpx.Request) -> httpx.Response:
        seen.append(request.method)
        answer = queue.pop(0)
        if isinstance(answer, Exception):
            raise answer
        status, headers = (answer, {}) if isinstance(answer, int) else (answer[0], {"Retry-After": answer[1]})
        body = HEALTH if status == 200 else {"error": f"status {status}"}
        if request.method == "DELETE" and status == 200:
            body = None
        return httpx.Response(status, json=body, headers=headers)

    return httpx.Client(transport=httpx.MockTransport(handle)), seen


def client(http, waits, budget_s=10.0):
    return TunefarmClient("http://farm", "t", http=http, retry=RetryPolicy(budget_s=budget_s, sleep=waits.append))


def test_a_503_is_tried_again_after_its_retry_after_for_any_method():
    http, seen = scripted((503, "2"), (503, "1"), 200)
    waits: list[float] = []
    assert client(http, waits).health().status == "ok"
    assert seen == ["GET"] * 3 and waits == [2.0, 1.0]
    http, seen = scripted((503, "3"), 500)
    with pytest.raises(TunefarmError) as err:
        client(http, waits := []).create_job("matmul", {"M": 8, "N": 8, "K": 8}, "cpu", 4)
    assert seen == ["POST", "POST"] and waits == [3.0] and err.value.status == 500  # a 500 is not tried again


def test_waits_grow_without_retry_after_and_stop_at_the_budget():
    http, seen = scripted(*[503] * 10)
    waits: list[float] = []
    with pytest.raises(TunefarmError) as err:
        client(http, waits, budget_s=5.0).health()
    assert waits == [0.5, 1.0, 2.0, 1.5] and len(seen) == 5 and err.value.status == 503


def test_a_request_that_may_have_been_done_is_tried_again_only_when_idempotent():
    lost = httpx.ReadError("connection reset")
    http, seen = scripted(lost, 502, 200)
    assert client(http, waits := []).health().status == "ok" and seen == ["GET"] * 3 and waits == [0.5, 1.0]
    for answer in (httpx.ReadError("connection reset"), 502, 504):
        http, seen = scripted(answer, 200)
        with pytest.raises(TunefarmError):
            client(http, waits := []).create_job("matmul", {"M": 8, "N": 8, "K": 8}, "cpu", 4)
        assert seen == ["POST"] and waits == []


def test_4xx_and_no_retry_fail_at_once():
    http, seen = scripted(404)
    with pytest.raises(TunefarmError) as err:
        client(http, waits := []).health()
    assert err.value.status == 404 and seen == ["GET"] and waits == []
    http, seen = scripted(503, 200)
    with pytest.raises(TunefarmError):
        TunefarmClient("http://farm", "t", http=http, retry=NO_RETRY).health()
    assert seen == ["GET"]


def test_retry_after_is_capped_and_dates_fall_back_to_the_backoff():
    policy = RetryPolicy(max_wait_s=8.0)
    assert policy.wait_s(1, "3600", 0.0) == 8.0
    assert policy.wait_s(3, "Wed, 21 Oct 2026 07:28:00 GMT", 0.0) == 2.0
    assert policy.wait_s(1, None, 9.8) == pytest.approx(0.2) and policy.wait_s(1, None, 10.0) is None


def test_a_redirect_is_an_error_not_an_answer():
    """DELETE /v1/tokens/ (an empty id) is no route: the server redirects to /v1/tokens with no body. The client
    follows no redirect, and one is a TunefarmError naming it, not a JSON parse error."""
    seen: list[str] = []

    def handle(request: httpx.Request) -> httpx.Response:
        seen.append(f"{request.method} {request.url.path}")
        return httpx.Response(307, headers={"Location": "http://farm/v1/tokens"})

    waits: list[float] = []
    with pytest.raises(TunefarmError) as err:
        client(httpx.Client(transport=httpx.MockTransport(handle)), waits).revoke_token("")
    assert seen == ["DELETE /v1/tokens/"] and waits == [] and err.value.status == 307
    assert "unexpected redirect (307 Temporary Redirect to http://farm/v1/tokens): no API route answers this path" \
        in str(err.value)
