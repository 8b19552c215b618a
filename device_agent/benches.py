"""Where a worker runs kernels: one bench per device kind, with the same five verbs.

`build` a config into a Kernel, `verify` it on every input set of the workload (outputs poisoned with NaN
first, so a kernel that writes nothing cannot pass on a previous kernel's answer), `timed` gives the callable
the timer samples, `baseline` the reference library's version, `sample` times callables in interleaved rounds.
Each bench owns the host lock of its device and the contention meter of its cores.
"""
from __future__ import annotations

import numpy as np

import compiler_core as cc
from compiler_core.build import build_module
from compiler_core.dtypes import numpy_dtype
from device_agent import affinity, measure
from device_agent.baselines import Baseline, cpu_baseline, cuda_baseline, warm_cuda_reference
from device_agent.contention import ContentionMeter
from device_agent.device_check import DeviceChecker, download, upload
from device_agent.host_lock import HostLock
from device_agent.records import MeasureOptions
from device_agent.workload_data import WorkloadData


def _first_failure(workload: cc.Workload, data: WorkloadData, outputs_of) -> cc.VerifyResult:
    """Verify on every input set; the first failure names its set. `outputs_of(i, set)` runs the kernel."""
    worst = 0.0
    for i, s in enumerate(data.sets):
        check = cc.verify(workload, outputs_of(i, s), s.expected)
        worst = max(worst, check.max_abs_error)
        if not check.ok:
            return cc.VerifyResult(False, check.max_abs_error, f"{s.name} inputs: {check.message}")
    return cc.VerifyResult(True, worst, "ok")


class CpuBench:
    kind = "cpu"

    def __init__(self, cores: frozenset[int], lock_dir: str) -> None:
        self.cores = frozenset(cores)
        self.threads = affinity.pin(self.cores)
        self.cpus = affinity.format_cpus(self.cores)
        self.target = cc.cpu_target(cores=self.threads)
        self.flusher = measure.CacheFlusher()
        self.lock = HostLock(lock_dir, "cpu")
        self.meter = ContentionMeter(self.cores)

    def build(self, workload: cc.Workload, config: dict, cubin: bytes | None = None) -> cc.Kernel:
        return cc.build(workload, config, self.target)  # a cache hit when the build pool compiled it ahead

    def verify(self, kernel: cc.Kernel, data: WorkloadData) -> cc.VerifyResult:
        def outputs_of(_, s) -> list[np.ndarray]:
            outs = [np.full(spec.shape, np.nan, dtype=numpy_dtype(spec.dtype)) for spec in kernel.specs[len(s.inputs):]]
            kernel(*s.inputs, *outs)
            return outs
        return _first_failure(kernel.workload, data, outputs_of)

    def timed(self, kernel: cc.Kernel, data: WorkloadData):
        outs = data.device.setdefault("outputs", [np.empty(s.shape, numpy_dtype(s.dtype))
                                                  for s in kernel.specs[len(data.timing_inputs):]])
        return kernel.bind(*data.timing_inputs, *outs)  # bind() checks once: per-call checks would be timed

    def baseline(self, data: WorkloadData) -> Baseline | None:
        return cpu_baseline(data.workload, data.timing_inputs)

    def sample(self, fns, opts: MeasureOptions, watched: int | None = None) -> measure.Sampling:
        return measure.time_cpu([f.run if isinstance(f, Baseline) else f for f in fns], opts,
                                self.flusher if opts.flush_cache else None, watched)

    def usable(self) -> bool:
        return True  # a C kernel that raised left nothing behind

    def release(self, data: WorkloadData) -> None:
        data.device.clear()


class CudaBench:
    kind = "cuda"

    def __init__(self, index: int, lock_dir: str) -> None:
        from compiler_core.runtime.cuda_runtime import device_target, driver

        self.drv = driver(index)
        self.index = index
        warm_cuda_reference(index)
        self.target = device_target(index)  # the target the agent registered (its fingerprint's)
        self.lock = HostLock(lock_dir, f"cuda-{self.drv.Context.get_device().pci_bus_id()}")
        self.meter = ContentionMeter(frozenset())  # GPU time is not shared through /proc: no CPU signal
        self.threads, self.cpus = 0, ""
        self._flusher: measure.L2Flusher | None = None
        self._spin: measure.GpuSpin | None = None
        try:
            self.checker: DeviceChecker | None = DeviceChecker(self.drv, self.target.arch)
        except cc.BuildError:  # no nvcc in the worker's PATH: verify on the host (slower for large outputs)
            self.checker = None

    def build(self, workload: cc.Workload, config: dict, cubin: bytes | None = None) -> cc.Kernel:
        module = cc.lower(workload, config, self.target)
        return build_module(workload, module, self.target, config, cubin=cubin)

    def _buffers(self, data: WorkloadData, kernel: cc.Kernel) -> dict:
        """Device copies of every input set and one set of outputs, made once per workload."""
        dev = data.device
        if "sets" not in dev:
            dev["sets"] = [[upload(self.drv, a) for a in s.inputs] for s in data.sets]
            dev["outputs"] = [self.drv.mem_alloc(max(int(np.prod(s.shape)) * numpy_dtype(s.dtype).itemsize, 1))
                              for s in kernel.specs[len(data.timing_inputs):]]
        return dev

    def _workspaces(self, data: WorkloadData, kernel: cc.Kernel) -> list:
        """Scratch buffers by their sizes (split-K partial sums differ per config): a COMPARE task's two kernels
        each keep their own, and later configs of the same sizes reuse them. Those the module keeps zero across
        runs (stream-K's flags) are zeroed when allocated and pooled apart from the rest, which other kernels may
        leave dirty."""
        module = kernel.module
        key = tuple((w.nbytes, w in module.kept_zero) for w in module.workspaces)
        pool = data.device.setdefault("workspaces", {})
        if key not in pool:
            pool[key] = [self.drv.mem_alloc(max(n, 1)) for n, _kept in key]
            for buf, (n, kept) in zip(pool[key], key, strict=True):
                if kept:
                    self.drv.memset_d8(buf, 0, n)
        return pool[key]

    def _run_on_set(self, kernel: cc.Kernel, data: WorkloadData, i: int, specs) -> None:
        dev = data.device
        for buf, spec in zip(dev["outputs"], specs, strict=True):  # 0xFF bytes: NaN in every float type
            self.drv.memset_d8(buf, 0xFF, int(np.prod(spec.shape)) * numpy_dtype(spec.dtype).itemsize)
        kernel.launch_device(dev["sets"][i] + dev["outputs"], self._workspaces(data, kernel))
        self.drv.Context.synchronize()

    def verify(self, kernel: cc.Kernel, data: WorkloadData) -> cc.VerifyResult:
        """On the device when the checker handles the output types; a failure is re-checked on the host, which
        writes the message (which element, got, expected, tolerance)."""
        dev = self._buffers(data, kernel)
        specs = kernel.specs[len(data.timing_inputs):]

        def outputs_of(i, _) -> list[np.ndarray]:
            self._run_on_set(kernel, data, i, specs)
            return [download(self.drv, buf, spec.shape, spec.dtype)
                    for buf, spec in zip(dev["outputs"], specs, strict=True)]

        if self.checker is None or not all(self.checker.supports(spec.dtype) for spec in specs):
            return _first_failure(kernel.workload, data, outputs_of)
        if "expected" not in dev:
            dev["expected"] = [self.checker.upload(s.expected, [spec.shape for spec in specs]) for s in data.sets]
        worst = 0.0
        for i in range(len(data.sets)):
            self._run_on_set(kernel, data, i, specs)
            for buf, spec, ref_tol in zip(dev["outputs"], specs, dev["expected"][i], strict=True):
                bad, error = self.checker.check(buf, spec.dtype, int(np.prod(spec.shape)), ref_tol)
                worst = max(worst, error)
                if bad:
                    return _first_failure(kernel.workload, data, outputs_of)
        return cc.VerifyResult(True, worst, "ok")

    def timed(self, kernel: cc.Kernel, data: WorkloadData):
        dev = self._buffers(data, kernel)
        args, workspaces = dev["sets"][0] + dev["outputs"], self._workspaces(data, kernel)
        return lambda stream: kernel.launch_device(args, workspaces, stream)

    def baseline(self, data: WorkloadData) -> Baseline | None:
        if "baseline" not in data.device:
            data.device["baseline"] = cuda_baseline(data.workload, data.timing_inputs, self.index)
        return data.device["baseline"]

    def sample(self, fns, opts: MeasureOptions, watched: int | None = None) -> measure.Sampling:
        if opts.flush_cache and self._flusher is None:
            self._flusher = measure.L2Flusher(self.drv)
        if self._spin is None:
            self._spin = measure.GpuSpin(self.drv)  # the driver JIT-compiles its PTX: once per worker
        return measure.time_cuda([f.run if isinstance(f, Baseline) else f for f in fns], opts,
                                 self._flusher if opts.flush_cache else None, self._spin, watched)

    def usable(self) -> bool:
        """Whether the CUDA context survived an error: a failed launch argument leaves it usable (the worker goes
        on with its caches), an illegal address does not (a fresh worker)."""
        try:
            self.drv.Context.synchronize()
            probe = self.drv.mem_alloc(16)
            self.drv.memset_d8(probe, 0, 16)
            self.drv.Context.synchronize()
            probe.free()
            return True
        except Exception:  # noqa: BLE001 - any driver error here means the context is gone
            return False

    def release(self, data: WorkloadData) -> None:
        """Frees a workload's device buffers when the cache lets it go."""
        groups = (*data.device.get("sets", ()), data.device.get("outputs", ()),
                  *data.device.get("workspaces", {}).values(),
                  *[pair for per_set in data.device.get("expected", ()) for pair in per_set])
        for group in groups:
            for buf in group:
                buf.free()
        data.device.clear()
