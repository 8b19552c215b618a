"""Every job measures some configs before its strategy's: the template's untuned default (so each job can report its
speed-up over it) and, when the head was measured by another code generator, the head's config (re-validation)."""
from __future__ import annotations

from compiler_core.space import config_key
from tuner_server.search.base import Observation, SearchStrategy


class DefaultFirst:
    """Wraps a strategy: proposes each of `firsts` once (unless the history already has it), then delegates.

    The inner strategy may propose them again later; the job's queue skips configs it already holds.
    """

    def __init__(self, inner: SearchStrategy, firsts: list[dict], history: list[Observation]) -> None:
        self.inner = inner
        seen = {config_key(o.config) for o in history}
        self._pending: list[dict] = []
        for config in firsts:
            if config_key(config) not in seen:
                seen.add(config_key(config))
                self._pending.append(dict(config))

    def propose(self, n: int) -> list[dict]:
        if n <= 0 or not self._pending:
            return self.inner.propose(n)
        first, self._pending = self._pending[:n], self._pending[n:]
        keys = {config_key(c) for c in first}
        rest = [c for c in self.inner.propose(n - len(first)) if config_key(c) not in keys] if n > len(first) else []
        return [*first, *rest]

    def observe(self, results: list[Observation]) -> None:
        measured = {config_key(r.config) for r in results}
        self._pending = [c for c in self._pending if config_key(c) not in measured]
        self.inner.observe(results)
