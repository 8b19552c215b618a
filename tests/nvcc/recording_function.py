"""RecordingFunction: a TEST DOUBLE for a pycuda Function, so OpaqueLaunch's packed parameter buffer and grid can be
checked without a GPU (it records what `prepare` and `prepared_async_call` were given)."""
from __future__ import annotations


class RecordingFunction:
    def __init__(self) -> None:
        self.formats, self.calls = [], []

    def prepare(self, fmt) -> None:
        self.formats.append(fmt)

    def prepared_async_call(self, grid, block, stream, buf, shared_size=0) -> None:
        self.calls.append((grid, block, stream, buf, shared_size))
