"""Errors repository functions raise; the REST/gRPC edges map them to status codes (404, 422, 409)."""
from __future__ import annotations


class RepoError(Exception):
    """Base of every repository error."""


class NotFound(RepoError):
    """The named job, workload, version, ... does not exist (404)."""


class InvalidRequest(RepoError, ValueError):
    """The request itself is wrong: bad workload key, budget over the limit, unknown device class (422)."""


class Conflict(RepoError):
    """The request is well-formed but the current state forbids it: cancelling a finished job (409)."""


class ImportFormatError(InvalidRequest):
    """An import stream is malformed; `problems` lists 'line N: what is wrong'. Nothing was written."""

    def __init__(self, problems: list[str]):
        self.problems = problems
        shown = "; ".join(problems[:10]) + (f"; ... {len(problems) - 10} more" if len(problems) > 10 else "")
        super().__init__(f"malformed import ({len(problems)} problem(s)): {shown}")
