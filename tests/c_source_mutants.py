"""Planted bugs in a CPU kernel's generated C: the edited source compiled beside the real kernel, and the input sets
whose verification catches it (shared by the CPU template tests that plant them)."""
from __future__ import annotations

import dataclasses
from collections.abc import Callable

import numpy as np

import compiler_core as cc
from compiler_core.runtime.c_runtime import CLibrary, compile_shared_library


def catching_input_sets(w: cc.Workload, kernel, edit: Callable[[str], tuple[str, int]], seed: int,
                        march: tuple[str, ...] | None = None) -> list[str]:
    """The verifier's input sets on which the kernel edited by `edit` (re.subn-like: (source, count)) fails while
    the kernel itself passes; asserts the edit found its pattern. `march`: the edited source's compiler flags (None:
    the host's), for a kernel built for another ISA than the host's (tests/amx_emulation.py's)."""
    source, count = edit(kernel.source)
    assert count, "the planted bug's pattern is not in the generated source"
    wrong = dataclasses.replace(kernel, source=source,
                                _impl=CLibrary(compile_shared_library(source, march=march), len(kernel.module.args)))
    caught = []
    for s in cc.input_sets(w, seed=seed):
        expected = cc.expect(w, s.arrays)
        assert cc.verify(w, kernel.run(*s.arrays), expected).ok
        with np.errstate(all="ignore"):
            if not cc.verify(w, wrong.run(*s.arrays), expected).ok:
                caught.append(s.name)
    return caught
