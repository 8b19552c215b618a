"""The AMX default before (mr 32 for any rows; B's block packed down K panel by panel) / after (one tile row for at
most 16 rows; the block packed across its panels for at most 256 rows of A), on the host's cores."""
import compiler_core as cc
from benchmarks.cpu_ab import ab_main
from compiler_core.schedules.cpu import gemm_amx


def before(w, config, target):
    def make():
        saved = gemm_amx.PACK_ACROSS_ROWS
        gemm_amx.PACK_ACROSS_ROWS = 0
        try:
            return cc.build(w, dict(config, mr=32), target)
        finally:
            gemm_amx.PACK_ACROSS_ROWS = saved
    return make


def variants(w, config, target) -> dict:
    return {"before": before(w, config, target), "after": lambda: cc.build(w, config, target)}


if __name__ == "__main__":
    ab_main(variants, base="before", rounds=5)
