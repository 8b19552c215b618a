"""Inputs and expected outputs, made once per (workload, input seed) and reused by every trial of it.

A worker keeps the most recently used workloads in memory, up to a byte budget (inputs of every input set, their
Expected: reference outputs and per-element tolerances): several jobs of one device interleave their trials, and
a workload evicted between two of its trials would cost its inputs, references and device copies again each
time. Expectations also go to disk, keyed by workload, seed, set and the
compiler_core version that computed them, so a restarted worker (after a crash) or a second agent on the host
does not recompute a large float64 reference; so do the inputs (generating tens of millions of random numbers
costs seconds, reading them back a fraction of that). A builder process fills the disk cache ahead of the first
trial of a workload (prebuild.prepare_references). Device copies (CUDA) hang off the entry via `device`.
"""
from __future__ import annotations

import hashlib
import logging
import os
import threading
import zipfile
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

import compiler_core as cc
from compiler_core.dtypes import numpy_dtype

log = logging.getLogger("tunefarm.agent")
DEFAULT_BUDGET_BYTES = 8 << 30
UNREADABLE = (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile)  # a torn or foreign cache file


@dataclass
class InputSetData:
    name: str  # "random", "hard", ...
    inputs: list[np.ndarray]
    expected: cc.Expected


@dataclass
class WorkloadData:
    workload: cc.Workload
    seed: int
    sets: list[InputSetData]
    device: dict = field(default_factory=dict)  # what a bench keeps on its device for this workload

    @property
    def nbytes(self) -> int:
        return sum(a.nbytes for s in self.sets for a in (*s.inputs, *s.expected.outputs, *s.expected.tolerance))

    @property
    def timing_inputs(self) -> list[np.ndarray]:
        """Kernels are timed on the first (random) set: the adversarial ones exist to catch wrong answers."""
        return self.sets[0].inputs


class WorkloadCache:
    """`budget_bytes` bounds the host arrays kept (the newest workload always stays); `on_evict(data)` lets the
    bench free what it keeps on its device for an evicted workload."""

    def __init__(self, disk_dir: Path | None, budget_bytes: int = DEFAULT_BUDGET_BYTES, on_evict=None) -> None:
        self.disk_dir, self.budget_bytes, self.on_evict = disk_dir, budget_bytes, on_evict
        self._entries: OrderedDict[tuple[str, int], WorkloadData] = OrderedDict()
        self.misses = 0

    def get(self, workload: cc.Workload, seed: int) -> WorkloadData:
        key = (workload.key, seed)
        entry = self._entries.get(key)
        if entry is not None:
            self._entries.move_to_end(key)
            return entry
        self.misses += 1
        entry = WorkloadData(workload, seed, [InputSetData(s.name, s.arrays, self._expected(workload, seed, s))
                                              for s in self._input_sets(workload, seed)])
        self._entries[key] = entry
        while len(self._entries) > 1 and sum(e.nbytes for e in self._entries.values()) > self.budget_bytes:
            _, old = self._entries.popitem(last=False)
            if self.on_evict is not None:
                self.on_evict(old)
        return entry

    def _input_sets(self, workload: cc.Workload, seed: int) -> list[cc.InputSet]:
        path = self._path(workload, seed, "inputs")
        if path is not None and path.exists():
            try:
                # .npz keeps a bfloat16 array as its raw 2-byte records (numpy's format has no name for it): the
                # op's input dtypes give them back their type
                dtypes = [numpy_dtype(spec.dtype) for spec in cc.get_op(workload.op).input_specs(workload)]
                with np.load(path, allow_pickle=False) as data:
                    return [cc.InputSet(str(name), [data[f"{k}_{i}"].view(dtypes[i]) for i in range(int(count))])
                            for k, (name, count) in enumerate(zip(data["names"], data["counts"], strict=True))]
            except UNREADABLE as exc:
                log.warning("input cache %s unreadable (%s); regenerating", path, exc)
        sets = cc.input_sets(workload, seed)
        if path is not None:
            arrays = {f"{k}_{i}": a for k, s in enumerate(sets) for i, a in enumerate(s.arrays)}
            self._store(path, lambda f: np.savez(f, names=np.array([s.name for s in sets]),
                                                 counts=np.array([len(s.arrays) for s in sets]), **arrays))
        return sets

    def _expected(self, workload: cc.Workload, seed: int, input_set) -> cc.Expected:
        path = self._path(workload, seed, input_set.name)
        if path is not None and path.exists():
            try:
                return cc.Expected.load(path)
            except UNREADABLE as exc:  # a torn or foreign file: recompute it
                log.warning("reference cache %s unreadable (%s); recomputing", path, exc)
        expected = cc.expect(workload, input_set.arrays)
        if path is not None:
            self._store(path, expected.save)
        return expected

    @staticmethod
    def _store(path: Path, write) -> None:
        """`write(file)` into a temporary file, then renamed: a concurrent reader sees the whole file or none."""
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_name(f"{path.stem}.{os.getpid()}.{threading.get_ident()}.tmp.npz")
            with open(tmp, "wb") as f:  # a file object: np.savez would append .npz to a bare name
                write(f)
            tmp.replace(path)
        except OSError as exc:
            log.warning("cannot cache %s: %s", path, exc)

    def _path(self, workload: cc.Workload, seed: int, name: str) -> Path | None:
        if self.disk_dir is None:
            return None
        key = f"{workload.key}|{seed}|{name}|{cc.codegen_version()}"
        return self.disk_dir / f"{hashlib.sha256(key.encode()).hexdigest()[:32]}.npz"
