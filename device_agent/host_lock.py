"""One measurement at a time per physical device, across agents and farms: an flock on a file per device.

The file's name carries the kernel's boot id, which every container on a host shares (machine-id may differ
between containers), so agents in separate containers exclude each other when they share the lock directory
(a host path mounted at the same place). A lock held by a killed process is released by the kernel.
"""
from __future__ import annotations

import fcntl
import os
import re
import socket
import time
from pathlib import Path

BOOT_ID = "/proc/sys/kernel/random/boot_id"
POLL_S = 0.005


class HostLockTimeout(TimeoutError):
    """Another measurement held the device for longer than we could wait."""


def host_key() -> str:
    """This physical host's identity: the kernel's boot id, else the host name."""
    try:
        with open(BOOT_ID) as f:
            key = f.read().strip()
    except OSError:
        key = socket.gethostname()
    return re.sub(r"[^A-Za-z0-9_.-]", "_", key) or "host"


def lock_path(lock_dir: str | Path, device_key: str) -> Path:
    safe = re.sub(r"[^A-Za-z0-9_.-]", "_", device_key)
    return Path(lock_dir) / f"tunefarm-measure-{host_key()}-{safe}.lock"


class HostLock:
    """`with lock.hold(timeout_s):` times nothing else on this device of this host meanwhile."""

    def __init__(self, lock_dir: str | Path, device_key: str) -> None:
        self.path = lock_path(lock_dir, device_key)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._fd: int | None = None
        self.waited_s = 0.0  # how long the last acquire waited for another holder

    def acquire(self, timeout_s: float) -> None:
        fd = _open_shared(self.path)
        start = time.monotonic()
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() - start >= timeout_s:
                    os.close(fd)
                    raise HostLockTimeout(f"{self.path} held by another measurement for {timeout_s:.0f} s") from None
                time.sleep(POLL_S)
        self.waited_s = time.monotonic() - start
        self._fd = fd

    def release(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)

    def hold(self, timeout_s: float) -> _Held:
        return _Held(self, timeout_s)


def _open_shared(path: Path) -> int:
    """A descriptor to flock `path`, whoever made the file: agents of one host may run as different users (root on
    the host, uid 10001 in the images). flock needs only read access, and opening an existing file without O_CREAT
    passes the kernel's protected_regular check in sticky directories such as /tmp; a new file is made readable by
    all."""
    for _ in range(3):
        try:
            return os.open(path, os.O_RDONLY)
        except FileNotFoundError:
            pass
        try:
            fd = os.open(path, os.O_RDONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            continue  # another agent made it meanwhile: open theirs
        os.fchmod(fd, 0o644)  # whatever the umask
        return fd
    return os.open(path, os.O_RDONLY)


class _Held:
    def __init__(self, lock: HostLock, timeout_s: float) -> None:
        self.lock, self.timeout_s = lock, timeout_s

    def __enter__(self) -> HostLock:
        self.lock.acquire(self.timeout_s)
        return self.lock

    def __exit__(self, *exc) -> None:
        self.lock.release()
