"""Every job measures its template's untuned default config first, so each job can report its speed-up over it."""
from __future__ import annotations

from compiler_core.space import config_key
from tuner_server.search.base import Observation, SearchStrategy


class DefaultFirst:
    """Wraps a strategy: proposes `default` once (unless the history already has it), then delegates.

    The inner strategy may propose the default again later; the job's queue skips configs it already holds.
    """

    def __init__(self, inner: SearchStrategy, default: dict, history: list[Observation]) -> None:
        self.inner = inner
        seen = {config_key(o.config) for o in history}
        self._pending = None if config_key(default) in seen else dict(default)

    def propose(self, n: int) -> list[dict]:
        if n <= 0 or self._pending is None:
            return self.inner.propose(n)
        first, self._pending = self._pending, None
        rest = [c for c in self.inner.propose(n - 1) if config_key(c) != config_key(first)] if n > 1 else []
        return [first, *rest]

    def observe(self, results: list[Observation]) -> None:
        if self._pending is not None and any(config_key(r.config) == config_key(self._pending) for r in results):
            self._pending = None
        self.inner.observe(results)
