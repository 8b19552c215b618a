"""The CUDA timer times what the GPU spent on a function and nothing of the host: kernels that wait a known
wall time (on %globaltimer) measure that time, an empty kernel measures a few microseconds (no host enqueue
or synchronisation latency inside a sample, also when rounds are enqueued in batches), and interleaved
functions keep their pairing. Marked gpu: skipped without a CUDA device and pycuda."""
from __future__ import annotations

import numpy as np
import pytest

from compiler_core.stats import paired_ratios, summarize
from device_agent import measure
from device_agent.records import MeasureOptions

pytestmark = pytest.mark.gpu

WAIT_PTX = """.version 7.0
.target sm_70
.address_size 64
.visible .entry tf_wait(.param .u64 ns)
{
  .reg .pred %p;
  .reg .b64 %t0, %t1, %d, %c;
  ld.param.u64 %c, [ns];
  mov.u64 %t0, %globaltimer;
WAIT:
  mov.u64 %t1, %globaltimer;
  sub.s64 %d, %t1, %t0;
  setp.lt.s64 %p, %d, %c;
  @%p bra WAIT;
  ret;
}
.visible .entry tf_empty()
{
  ret;
}
"""


@pytest.fixture(scope="module")
def drv():
    from compiler_core.runtime.cuda_runtime import cuda_available, driver

    if not cuda_available():
        pytest.skip("no CUDA device or pycuda")
    return driver()


@pytest.fixture(scope="module")
def kernels(drv):
    module = drv.module_from_buffer(WAIT_PTX.encode())
    wait, empty = module.get_function("tf_wait"), module.get_function("tf_empty")

    def waiting(ns: int):
        return lambda stream: wait(np.uint64(ns), grid=(1, 1, 1), block=(1, 1, 1), stream=stream)

    return module, waiting, lambda stream: empty(grid=(1, 1, 1), block=(1, 1, 1), stream=stream)


def options(**kw) -> MeasureOptions:
    base = {"warmup": 3, "min_repeats": 50, "min_time_s": 0.0, "max_repeats": 50, "timeout_s": 60.0,
            "flush_cache": True, "max_time_s": 30.0, "target_rel_ci": 1.0, "max_contention": 1.0}
    return MeasureOptions(**{**base, **kw})


def test_a_kernel_of_known_duration_measures_that_duration(drv, kernels):
    _, waiting, _ = kernels
    for ns in (20_000, 300_000):
        run = measure.time_cuda([waiting(ns)], options(), measure.L2Flusher(drv))
        med = summarize(run.series[0])[0]
        assert ns * 1e-9 <= med <= ns * 1e-9 * 1.05 + 5e-6, (ns, med)


def test_no_host_latency_inside_a_sample_even_in_batches(drv, kernels):
    _, _, empty = kernels
    run = measure.time_cuda([empty, empty, empty], options(min_repeats=200, max_repeats=200),
                            measure.L2Flusher(drv))
    samples = np.concatenate([np.array(s) for s in run.series])
    assert len(samples) == 600
    assert np.quantile(samples, 0.99) < 15e-6, np.quantile(samples, [0.5, 0.9, 0.99, 1.0])


def test_interleaved_functions_keep_their_pairing(drv, kernels):
    _, waiting, _ = kernels
    run = measure.time_cuda([waiting(40_000), waiting(80_000), waiting(20_000)], options(),
                            measure.L2Flusher(drv), watched=2)
    assert [len(s) for s in run.series] == [50, 50, 50]
    assert summarize(paired_ratios(run.series[1], run.series[0]))[0] == pytest.approx(2.0, rel=0.05)
    assert 20e-6 <= summarize(run.series[2])[0] <= 20e-6 * 1.05 + 5e-6  # a launch costs the GPU a few us
