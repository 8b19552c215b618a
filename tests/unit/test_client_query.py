"""The client puts an op's params into /v1/best*'s query beside the request's own options, so a param named like
one of those options (predict, version, enqueue, ...) is refused before any request: sent, it would silently ask
for a prediction, another version or a tuning job."""
from __future__ import annotations

import httpx
import pytest

from tunefarm_client import TunefarmClient
from tunefarm_client.client import CONTROLS


def _never(request: httpx.Request) -> httpx.Response:
    raise AssertionError(f"a request was sent: {request.url}")


@pytest.fixture
def client():
    with TunefarmClient("http://farm.invalid", "t", http=httpx.Client(transport=httpx.MockTransport(_never))) as c:
        yield c


@pytest.mark.parametrize("name", ["predict", "enqueue", "version", "op", "device"])
def test_a_param_named_like_an_option_is_refused(client, name):
    params = {"M": 33, "N": 33, "K": 33, name: "true"}
    with pytest.raises(ValueError, match=f"params '{name}': no op has such a parameter"):
        client.best("matmul", params, "cpu-x")
    with pytest.raises(ValueError, match=f"'{name}'"):
        client.history("matmul", params, "cpu-x")
    with pytest.raises(ValueError, match=f"'{name}'"):
        client.diff("matmul", params, "cpu-x", 1, 2)


def test_every_option_of_the_best_requests_is_reserved():
    import inspect

    for method in (TunefarmClient.best, TunefarmClient.history, TunefarmClient.diff):
        options = set(inspect.signature(method).parameters) - {"self", "op", "params", "device"}
        assert options - {"include_source"} <= CONTROLS | {"include_source"}, method.__name__
