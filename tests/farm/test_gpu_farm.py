"""A GPU agent in the farm (run on the device machine): a CUDA job completes and its head rebuilds and verifies."""
from __future__ import annotations

import numpy as np
import pytest

import compiler_core as cc
from tunefarm_client.loader import load_best

pytestmark = pytest.mark.gpu
MEASURE = {"warmup": 1, "min_repeats": 5, "min_time_s": 0.01, "max_repeats": 50, "max_time_s": 0.5, "timeout_s": 60,
           "recheck_top": 2}


@pytest.mark.parametrize("op,params", [("matmul", {"M": 256, "N": 256, "K": 256, "dtype": "float32"}),
                                       ("softmax", {"rows": 1000, "cols": 333})])
def test_a_cuda_job_completes_on_a_gpu_agent(farm, op, params):
    f = farm(agents=0)
    f.add_agent(name="gpu-0", extra_args=("--device", "cuda:0"))
    f.wait_for_agents()
    with f.client() as client:
        job = client.create_job(op, params, "cuda", 12, measure=MEASURE)
        done = f.wait_job(job.id, timeout_s=240)
        assert done.state == "done", (done.error, f.logs())
        assert done.device_class.startswith("cuda-") and done.progress.verified == 12
        assert done.result is not None and done.result.comparisons >= 1, "the final phase re-measured the head"
        assert done.result.reference in ("torch", None)  # PyTorch, where the GPU host has it
        kernel = load_best(client, op, params, done.device_class)
    w = cc.make_workload(op, params)
    inputs = cc.random_inputs(w, 5)
    assert cc.verify(w, kernel.run(*inputs), cc.expect(w, inputs)).ok
    assert np.isfinite(kernel.schedule.median_s)
