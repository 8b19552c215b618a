"""A built kernel called from numpy refuses arrays it cannot run on safely: the wrong shape, dtype or layout, an
output it may not write (a read-only mapping would crash the process, a buffer of bytes would be overwritten), and an
output that shares memory with another array (a wrong result, silently)."""
from __future__ import annotations

import mmap

import numpy as np
import pytest

import compiler_core as cc

W = cc.make_workload("matmul", {"M": 24, "N": 40, "K": 16})


@pytest.fixture(scope="module")
def kernel():
    target = cc.cpu_target(cores=2)
    return cc.build(W, cc.default_config(W, target), target)


def _arrays():
    a, b = cc.random_inputs(W, 0)
    return a, b, np.zeros((24, 40), np.float32)


def test_good_arrays_run(kernel):
    a, b, c = _arrays()
    kernel(a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("make", [
    lambda: np.frombuffer(bytes(24 * 40 * 4), np.float32).reshape(24, 40),  # an immutable bytes object's memory
    lambda: _read_only(),
], ids=["bytes", "flag"])
def test_a_read_only_output_is_refused(kernel, make):
    a, b, _ = _arrays()
    c = make()
    with pytest.raises(ValueError, match="C: the output array is read-only"):
        kernel(a, b, c)
    with pytest.raises(ValueError, match="read-only"):
        kernel.bind(a, b, c)


def _read_only() -> np.ndarray:
    c = np.zeros((24, 40), np.float32)
    c.flags.writeable = False
    return c


def test_a_read_only_memory_map_is_refused_not_a_crash(kernel, tmp_path):
    path = tmp_path / "c.bin"
    path.write_bytes(bytes(24 * 40 * 4))
    with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
        c = np.frombuffer(m, np.float32).reshape(24, 40)
        a, b, _ = _arrays()
        with pytest.raises(ValueError, match="read-only"):
            kernel(a, b, c)
        del c


def test_an_output_that_overlaps_an_input_is_refused(kernel):
    a, b, _ = _arrays()
    buf = np.zeros(24 * 40 + 24 * 16, np.float32)
    a_view = buf[:24 * 16].reshape(24, 16)
    a_view[:] = a
    c_view = buf[24 * 16 - 8: 24 * 16 - 8 + 24 * 40].reshape(24, 40)  # its first 8 floats are A's last
    with pytest.raises(ValueError, match="output C shares memory with A"):
        kernel(a_view, b, c_view)
    c_apart = buf[24 * 16:].reshape(24, 40)  # adjacent, not overlapping: fine
    kernel(a_view, b, c_apart)
    np.testing.assert_allclose(c_apart, a @ b, rtol=1e-5, atol=1e-5)
