"""AMX per-block B packing: panel by panel down K (before) / pair row by pair row across the panels (after), and
the after with one row tile (mr 16) for few rows; default config otherwise, on the host's cores. pack-*.txt were run
before the default took one row of tiles for at most 16 rows (gemm_amx.ONE_TILE_ROW): its mr was 32 at every row
count then, as `amx_default_ab.py`'s "before" sets it."""
import compiler_core as cc
from benchmarks.cpu_ab import ab_main
from compiler_core.schedules.cpu import gemm_amx


def build(w, config, target, across: bool):
    def make():
        saved = gemm_amx.PACK_ACROSS_ROWS
        gemm_amx.PACK_ACROSS_ROWS = 1 << 30 if across else 0
        try:
            return cc.build(w, config, target)
        finally:
            gemm_amx.PACK_ACROSS_ROWS = saved
    return make


def variants(w, config, target) -> dict:
    out = {"down": build(w, config, target, False), "across": build(w, config, target, True)}
    if w["M"] <= 16:
        out["across_mr16"] = build(w, dict(config, mr=16), target, True)
    return out


if __name__ == "__main__":
    ab_main(variants, base="down", rounds=3)
