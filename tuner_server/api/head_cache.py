"""Answers of GET /v1/best for heads, kept per app and checked against the key's head version on every request.

Versions are append-only and every change of a key's head (a promotion, a rollback, a pin or an unpin) appends one,
so (workload, device class, head version) names the answer exactly. A request reads the key's head version (one
indexed query, no ORM objects) and, when a kept answer carries that version, sends its JSON as it is: no version,
trial, target or source is loaded, rendered or validated again. Kept only for classes with a compiler target (the one
part of the answer that can appear without a new version) and at most `size` of them, least recently used first out.
"""
from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Hashable


def kept_key(workload_key: str, device_class: str, include_source: bool) -> tuple[str, str, bool]:
    """What a kept answer is found by: the canonical workload key, the device class, and whether it has the source."""
    return (workload_key, device_class, include_source)


class HeadCache:
    def __init__(self, size: int = 1024) -> None:
        self.size = size
        self._answers: OrderedDict[Hashable, tuple[int, bytes]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Hashable, head_version: int) -> bytes | None:
        """The kept answer for `key` if it was made for `head_version`."""
        with self._lock:
            kept = self._answers.get(key)
            if kept is None or kept[0] != head_version:
                return None
            self._answers.move_to_end(key)
            return kept[1]

    def put(self, key: Hashable, head_version: int, body: bytes) -> None:
        with self._lock:
            self._answers[key] = (head_version, body)
            self._answers.move_to_end(key)
            while len(self._answers) > self.size:
                self._answers.popitem(last=False)
