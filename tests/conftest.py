"""Test tiers: markers skip cleanly when the tier's hardware or toolchain is absent. How many pytest-xdist
workers `-n auto` (pyproject's addopts) starts."""
from __future__ import annotations

import os
import shutil

import pytest

MAX_AUTO_WORKERS = 4


def _cuda_ok() -> bool:
    from compiler_core.runtime.cuda_runtime import cuda_available

    return cuda_available()


def pytest_collection_modifyitems(config, items):
    nvcc = shutil.which("nvcc") is not None
    gpu = None
    for item in items:
        if "nvcc" in item.keywords and not nvcc:
            item.add_marker(pytest.mark.skip(reason="nvcc not on PATH"))
        if "gpu" in item.keywords:
            gpu = _cuda_ok() if gpu is None else gpu
            if not gpu:
                item.add_marker(pytest.mark.skip(reason="no CUDA device or pycuda"))


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_auto_num_workers(config):
    """One worker per core this process may run on (a container or taskset may allow fewer than the host has), at
    most MAX_AUTO_WORKERS: every farm's agent times its kernels on all of those cores, so more workers crowd them.
    One core: none (the tests run in this process). $PYTEST_XDIST_AUTO_NUM_WORKERS, when set, decides instead."""
    if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS"):
        return None
    cores = len(os.sched_getaffinity(0))
    return 0 if cores < 2 else min(cores, MAX_AUTO_WORKERS)


def pytest_addoption(parser):
    parser.addoption("--update-golden", action="store_true", help="rewrite tests/golden from the current codegen")


@pytest.fixture(scope="session")
def pg_cluster():
    """One throwaway PostgreSQL cluster for the whole test session, started by the first test that needs it."""
    from tests.db.pg_cluster import find_bin_dir, start_cluster

    if find_bin_dir() is None:
        pytest.skip("PostgreSQL binaries (initdb, pg_ctl) not installed")
    try:
        cluster = start_cluster()
    except (RuntimeError, KeyError, OSError) as exc:
        pytest.skip(f"could not start a PostgreSQL cluster: {exc}")
    yield cluster
    cluster.stop()
