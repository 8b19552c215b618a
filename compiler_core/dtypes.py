"""Storage dtypes as numpy sees them: bfloat16 is ml_dtypes' (numpy has none), and raw views for transfers.

ml_dtypes' bfloat16 is a real numpy dtype (astype, arithmetic, np.dtype("bfloat16") once imported), but it
refuses the buffer protocol ("cannot include dtype 'E' in a buffer"), which pycuda's copies and memoryview
use. Every transfer of array memory therefore goes through `raw_bytes`, which works the same for every dtype.
"""
from __future__ import annotations

import ml_dtypes
import numpy as np

from compiler_core.ir.expr import FLOAT_TYPES

_NUMPY = {"float32": np.dtype(np.float32), "float16": np.dtype(np.float16), "bfloat16": np.dtype(ml_dtypes.bfloat16)}
assert set(_NUMPY) == set(FLOAT_TYPES)


def numpy_dtype(name: str) -> np.dtype:
    """The numpy dtype of a storage dtype name ('bfloat16' -> ml_dtypes.bfloat16)."""
    try:
        return _NUMPY[name]
    except KeyError:
        return np.dtype(name)  # int32, float64, ...: numpy's own names


def raw_bytes(a: np.ndarray) -> np.ndarray:
    """A uint8 view of a C-contiguous array's memory (writes through it land in `a`)."""
    if not a.flags.c_contiguous:
        raise ValueError("raw_bytes needs a C-contiguous array (np.ascontiguousarray copies one)")
    return a.reshape(-1).view(np.uint8)
