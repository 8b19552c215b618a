"""benchmarks/gpu_split_cluster.py without a GPU: its grid holds both kinds of split, every config in the space,
and `--dry-run` reports them per case."""
from __future__ import annotations

import compiler_core as cc
from benchmarks import gpu_split_cluster as bench

H100 = cc.cuda_target("sm_90a", sm_count=132)


def test_the_grid_holds_both_kinds_and_only_configs_of_the_space():
    w = cc.make_workload("matmul", dict(M=16, N=4096, K=4096, dtype="float16"))
    configs = bench.grid(w, H100)
    space = cc.get_space(w, H100)
    assert configs and all(space.is_valid(c) for c in configs)
    kinds = {bench.kind(c) for c in configs}
    assert kinds == {"cluster", "workspace"}
    assert {c["split_k"] for c in configs if bench.kind(c) == "cluster"} == {2, 4, 8}
    assert all(not c["persistent"] for c in configs if bench.kind(c) == "cluster")


def test_dry_run_names_each_case_and_its_default(capsys):
    assert bench.main(["--dry-run", "--case", "matmul:M=64,N=4096,K=4096,dtype=bfloat16"]) == 0
    out = capsys.readouterr().out
    assert "matmul(M=64,N=4096,K=4096,dtype=bfloat16)" in out and "'split_cluster': True" in out
