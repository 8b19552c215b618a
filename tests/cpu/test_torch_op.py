"""tunefarm_client.torch on the CPU: C kernels as torch custom ops, eager and under torch.compile(fullgraph=True),
their checks, the out= variant, DLPack, op naming and reuse, and load_best_op through the real REST app."""
from __future__ import annotations

import random
import subprocess
import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import compiler_core as cc  # noqa: E402
from tunefarm_client.torch import DTYPES, KernelOp, custom_op, op_name, run_dlpack, torch_dtype  # noqa: E402

MATMUL = {"M": 64, "N": 48, "K": 32}
SOFTMAX = {"rows": 64, "cols": 100}


def _kernel(op: str, params: dict, tmp_path_factory, config: dict | None = None) -> cc.Kernel:
    workload, target = cc.make_workload(op, params), cc.cpu_target()
    config = config or cc.default_config(workload, target)
    return cc.build(workload, config, target, cache_dir=tmp_path_factory.getbasetemp() / "kernels")


@pytest.fixture(scope="module")
def matmul(tmp_path_factory) -> KernelOp:
    return custom_op(_kernel("matmul", MATMUL, tmp_path_factory))


@pytest.fixture(scope="module")
def softmax(tmp_path_factory) -> KernelOp:
    return custom_op(_kernel("softmax", SOFTMAX, tmp_path_factory))


def _ab(seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(64, 32, generator=g), torch.randn(32, 48, generator=g)


def test_eager_matches_torch(matmul, softmax):
    a, b = _ab()
    c = matmul(a, b)
    assert c.shape == (64, 48) and c.dtype == torch.float32 and c.device.type == "cpu"
    torch.testing.assert_close(c, torch.matmul(a, b), rtol=1e-4, atol=1e-4)
    x = torch.randn(64, 100) * 4
    torch.testing.assert_close(softmax(x), torch.softmax(x, dim=-1), rtol=1e-5, atol=1e-6)
    assert matmul.default is getattr(torch.ops.tunefarm, matmul.name).default  # callable as a torch op too
    torch.testing.assert_close(torch.ops.tunefarm.__getattr__(matmul.name)(a, b), c)


def test_torch_compile_fullgraph(matmul, softmax):
    torch._dynamo.reset()

    def model(a, b, bias):
        return softmax(torch.cat([matmul(a, b), bias], dim=1)) * 2

    compiled = torch.compile(model, fullgraph=True)
    a, b = _ab(1)
    bias = torch.randn(64, 52)
    expected = torch.softmax(torch.cat([a @ b, bias], dim=1), dim=-1) * 2
    for _ in range(2):  # the second call runs the cached graph
        torch.testing.assert_close(compiled(a, b, bias), expected, rtol=1e-4, atol=1e-5)


def test_out_variant_eager_and_compiled(matmul):
    a, b = _ab(2)
    c = torch.full((64, 48), float("nan"))
    assert matmul(a, b, out=c) is c
    torch.testing.assert_close(c, a @ b, rtol=1e-4, atol=1e-4)
    torch._dynamo.reset()
    c2 = torch.zeros(64, 48)
    torch.compile(lambda x, y, out: matmul(x, y, out=out), fullgraph=True)(a, b, c2)
    torch.testing.assert_close(c2, a @ b, rtol=1e-4, atol=1e-4)


def test_fake_tensors_give_the_output_spec(matmul):
    a, b = torch.empty(64, 32, device="meta"), torch.empty(32, 48, device="meta")
    c = matmul(a, b)
    assert (c.shape, c.dtype, c.device.type) == ((64, 48), torch.float32, "meta")


def test_bad_inputs_raise_clear_errors(matmul, softmax):
    a, b = _ab()
    with pytest.raises(ValueError, match=r"input A: expected \(64, 32\) float32 on cpu, got \(64, 31\) float32"):
        matmul(torch.randn(64, 31), b)
    with pytest.raises(ValueError, match=r"input B: expected \(32, 48\) float32 on cpu, got \(32, 48\) float16"):
        matmul(a, b.half())
    with pytest.raises(ValueError, match=r"input A must be contiguous .* pass \.contiguous\(\)"):
        matmul(a.t().contiguous().t(), b)
    with pytest.raises(ValueError, match=r"input B: expected a torch.Tensor"):
        matmul.runner.check_inputs((a, np.zeros((32, 48), np.float32)))
    misaligned = torch.randn(64 * 32 + 1)[1:].view(64, 32)
    with pytest.raises(ValueError, match=r"not 16-byte aligned .* pass \.clone\(\)"):
        matmul(misaligned, b)
    with pytest.raises(ValueError, match=r"output C: expected \(64, 48\) float32 on cpu, got \(48, 64\)"):
        matmul(a, b, out=torch.empty(48, 64))
    x = torch.randn(64, 100)
    with pytest.raises(ValueError, match="output Y overlaps X"):
        softmax(x, out=x)
    # the fake implementation checks too, at trace time (dynamo wraps the ValueError, keeping its message)
    with pytest.raises((ValueError, RuntimeError), match=r"input X: expected \(64, 100\) float32 on cpu"):
        torch._dynamo.reset()
        torch.compile(lambda t: softmax(t), fullgraph=True)(torch.randn(64, 99))


def test_backward_says_there_is_no_derivative(softmax):
    x = torch.randn(64, 100, requires_grad=True)
    y = softmax(x)
    with pytest.raises(RuntimeError, match="has no derivative: tuned kernels are forward-only"):
        y.sum().backward()


def test_op_names_are_unique_legal_and_reused(matmul, tmp_path_factory):
    again = custom_op(_kernel("matmul", MATMUL, tmp_path_factory))
    assert again is matmul
    assert matmul.qualname.startswith("tunefarm::matmul_") and matmul.name.isidentifier()
    config = dict(matmul.kernel.config)
    space = cc.get_space(matmul.kernel.workload, matmul.kernel.target)
    other = next(c for c in space.sample(random.Random(0), 32) if cc.config_key(c) != cc.config_key(config))
    other_op = custom_op(_kernel("matmul", MATMUL, tmp_path_factory, other))
    assert other_op.name != matmul.name
    a, b = _ab(3)
    torch.testing.assert_close(other_op(a, b), a @ b, rtol=1e-4, atol=1e-4)
    assert op_name(matmul.kernel) == matmul.name  # stable: a function of (workload, config, target, source)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_dtypes_map_to_torch(dtype, tmp_path_factory):
    assert torch_dtype(dtype) is DTYPES[dtype]
    op = custom_op(_kernel("softmax", {"rows": 16, "cols": 40, "dtype": dtype}, tmp_path_factory))
    x = torch.randn(16, 40).to(torch_dtype(dtype))
    y = op(x)
    assert y.dtype == torch_dtype(dtype)
    torch.testing.assert_close(y.float(), torch.softmax(x.float(), dim=-1), rtol=2e-2, atol=2e-3)


def test_dlpack_runs_on_numpy_arrays(matmul):
    a, b = (t.numpy() for t in _ab(4))
    c = run_dlpack(matmul, a, b)
    np.testing.assert_allclose(np.from_dlpack(c), a @ b, rtol=1e-4, atol=1e-4)
    out = np.zeros((64, 48), np.float32)
    assert run_dlpack(matmul.kernel, a, b, out=out) is out  # a Kernel is wrapped (into the same op)
    np.testing.assert_allclose(out, a @ b, rtol=1e-4, atol=1e-4)
    with pytest.raises(TypeError, match="__dlpack__"):
        run_dlpack(matmul, a.tolist(), b)


def test_importing_the_client_does_not_import_torch():
    code = "import sys, tunefarm_client; assert 'torch' not in sys.modules, 'torch imported'"
    subprocess.run([sys.executable, "-c", code], check=True)


def test_load_best_op_through_the_rest_app(tmp_path):
    from tests.cpu.rest_support import CPU_CLASS, READER, make_farm
    from tests.cpu.rest_support import MATMUL as FARM_MATMUL
    from tunefarm_client import TunefarmClient
    from tunefarm_client.torch import load_best_op
    from tuner_server.db import make_engine, make_session_factory, upgrade_to_head

    url = f"sqlite:///{tmp_path / 'farm.db'}"
    upgrade_to_head(url)
    engine = make_engine(url)
    try:
        client = TunefarmClient("http://testserver", READER, http=make_farm(make_session_factory(engine)).client)
        op = load_best_op(client, "matmul", FARM_MATMUL, CPU_CLASS, cache_dir=tmp_path)
        assert op.kernel.config == client.best("matmul", FARM_MATMUL, CPU_CLASS).config
        a, b = torch.randn(64, 64), torch.randn(64, 64)
        torch.testing.assert_close(op(a, b), a @ b, rtol=1e-4, atol=1e-4)
    finally:
        engine.dispose()
