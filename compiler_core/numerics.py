"""Floating-point facts the error models need, one row per dtype, plus the one probabilistic constant.

The facts are written out rather than read from np.finfo (numpy itself has no bfloat16); a unit test
checks each row against ml_dtypes.finfo.
"""
from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class Rounding:
    """u: unit roundoff (half the spacing at 1, the largest relative error of one rounding to nearest);
    tiny: the smallest normal number (below it results are subnormal and lose relative precision);
    max: the largest finite number."""
    u: float
    tiny: float
    max: float


ROUNDING = {
    "float32": Rounding(u=2.0 ** -24, tiny=2.0 ** -126, max=3.4028234663852886e38),
    "float16": Rounding(u=2.0 ** -11, tiny=2.0 ** -14, max=65504.0),
    "bfloat16": Rounding(u=2.0 ** -8, tiny=2.0 ** -126, max=3.3895313892515355e38),  # float32's range, 8-bit mantissa
}

# Every op accumulates in float32 whatever its storage dtype (the tensor expressions cast to float32).
ACCUMULATION_DTYPE = "float32"

# Higham & Mary (2019), "A new approach to probabilistic rounding error analysis": with rounding errors
# modelled as independent and mean zero, a sum of n terms is within LAMBDA * sqrt(n) * u * sum|terms| of
# the exact sum with probability at least 1 - 2n exp(-LAMBDA^2 / 2) (the bound's own pessimism makes
# the real margin far larger: it already charges every rounding with the whole sum|terms|). 6 makes the
# quoted failure probability 3e-3 for the longest rows we test (n = 1e5) and ~1e-6 for n ~ 50.
LAMBDA = 6.0


def rounding(dtype: str) -> Rounding:
    return ROUNDING[dtype]


def sum_bound(n: int) -> float:
    """Relative (to sum|terms|) error factor of an n-term float32 sum in any order: LAMBDA sqrt(n) u."""
    return LAMBDA * math.sqrt(max(n, 1)) * ROUNDING[ACCUMULATION_DTYPE].u
