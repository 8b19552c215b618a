"""When the client tries a request again: the farm was briefly unable to answer (503) or could not be reached.

A 503 from the tuner means its database was down or busy and nothing was written (DESIGN §5), and a balancer's 503
means no tuner got the request: any method is tried again, after the server's `Retry-After` when it names seconds.
A request that may have reached a tuner without an answer (no connection, 502, 504) is tried again only when doing
it twice is harmless (GET, HEAD, DELETE: cancelling a job or revoking a token twice changes nothing). Waits grow
from `first_wait_s` to `max_wait_s`, and the tries stop once `budget_s` of waiting is spent: the last error is
raised as it came.
"""
from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

IDEMPOTENT_METHODS = frozenset({"GET", "HEAD", "DELETE", "OPTIONS"})
NOTHING_WRITTEN = frozenset({503})  # the tuner's outage answer, or a balancer with no tuner behind it
MAYBE_WRITTEN = frozenset({502, 504})  # a balancer lost the tuner mid-request


@dataclass(frozen=True)
class RetryPolicy:
    budget_s: float = 10.0  # waiting between tries, in all, per request (a tuner restart takes a few seconds)
    first_wait_s: float = 0.5
    max_wait_s: float = 8.0
    sleep: Callable[[float], None] = field(default=time.sleep, compare=False, repr=False)

    def should_retry(self, method: str, status: int | None) -> bool:
        """`status` None: the server was not reached (or did not answer)."""
        if status in NOTHING_WRITTEN:
            return True
        return (status is None or status in MAYBE_WRITTEN) and method.upper() in IDEMPOTENT_METHODS

    def wait_s(self, tries: int, retry_after: str | None, waited_s: float) -> float | None:
        """How long to wait before try number `tries + 1` (None: the budget is spent)."""
        left = self.budget_s - waited_s
        if left <= 0:
            return None
        wait = min(self.max_wait_s, self.first_wait_s * 2 ** (tries - 1))
        if retry_after is not None and retry_after.strip().isdigit():
            wait = min(self.max_wait_s, float(retry_after.strip()))
        return min(wait, left)


NO_RETRY = RetryPolicy(budget_s=0.0)
