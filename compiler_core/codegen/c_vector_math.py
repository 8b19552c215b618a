"""C renderings of vector operations GNU C has no operator for: lane-wise max/min, and exp/log/tanh/erf on float
vectors.

Max/min select with a compare mask; a math function is a loop over lanes calling c_libm's inline scalar function,
which GCC's vectorizer turns into vector instructions. Both cost what intrinsics would while the generated source
stays portable GNU C.
"""
from __future__ import annotations

from compiler_core.codegen.c_libm import LIBM

# A lane loop over the scalar inline function (c_libm), which GCC's vectorizer turns into vector instructions.
_LANES_TEMPLATE = """static inline {vtype} tf_{name}_{vtype_suffix}({vtype} x) {{
  {vtype} r;
  for (int l = 0; l < {lanes}; ++l) r[l] = tf_{name}f(x[l]);
  return r;
}}"""

VECTOR_MATH = LIBM


def vector_math_helpers(calls: set, vector_type) -> list[str]:
    """C definitions for the vector math calls used (after c_libm's scalar ones): `calls` holds (name, scalar,
    lanes)."""
    out = []
    for name, scalar, lanes in sorted(calls):
        if name not in VECTOR_MATH or scalar != "float32":
            raise NotImplementedError(f"vector math call {name} on {scalar}x{lanes} has no C rendering")
        out.append(_LANES_TEMPLATE.format(vtype=vector_type(scalar, lanes), name=name,
                                          vtype_suffix=f"{scalar}x{lanes}", lanes=lanes))
    return out


def vector_minmax(op: str, x: str, y: str, vtype: str, lanes: int) -> str:
    """Lane-wise min/max of two vectors: `?:` works on vectors only in C++, so a compare mask selects
    (a loop over lanes is not vectorized reliably once unrolled into an accumulation loop)."""
    sym = "<" if op == "min" else ">"
    return (f"({{ {vtype} tf_a = ({x}), tf_b = ({y}); __typeof__(tf_a {sym} tf_b) tf_m = tf_a {sym} tf_b; "
            f"({vtype})((tf_m & (__typeof__(tf_m))tf_a) | (~tf_m & (__typeof__(tf_m))tf_b)); }})")
