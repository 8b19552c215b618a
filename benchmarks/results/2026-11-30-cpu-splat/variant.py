"""The explicit-initialiser splat rendering, patched in by ab_splat.py (measured, not kept)."""
import compiler_core.ir.expr as E


def splat_init(self, e):
    scalar, lanes = self.scalar_types[E.scalar_of(e.dtype)], E.lanes_of(e.dtype)
    copies = ", ".join(["tf_s_"] * lanes)
    return f"({{ {scalar} tf_s_ = ({self.expr(e.value)}); ({self.type_of(e.dtype)}){{{copies}}}; }})"
