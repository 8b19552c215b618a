"""Pass: fold constants, drop loops of extent one and branches with constant conditions."""
from __future__ import annotations

from compiler_core.ir import expr as E
from compiler_core.ir import stmt as S
from compiler_core.ir.builder import seq
from compiler_core.ir.visitor import Mutator, substitute


class _Simplify(Mutator):
    def visit_BinOp(self, node: E.BinOp):
        return E.binop(node.op, self.visit(node.a), self.visit(node.b))

    def visit_Select(self, node: E.Select):
        return E.select(self.visit(node.cond), self.visit(node.true_value), self.visit(node.false_value))

    def visit_For(self, node: S.For):
        extent = self.visit(node.extent)
        if isinstance(extent, E.IntImm) and not node.kind.is_thread_binding:
            if extent.value <= 0:
                return S.Seq(())
            if extent.value == 1:
                start = node.min if node.min is not None else E.IntImm(0)
                return self.visit(substitute(node.body, {node.var: start}))
        body = self.visit(node.body)
        return S.For(node.var, extent, node.kind, body, node.min)

    def visit_IfThenElse(self, node: S.IfThenElse):
        cond = self.visit(node.cond)
        if isinstance(cond, E.IntImm):
            chosen = node.then if cond.value else node.else_
            return self.visit(chosen) if chosen is not None else S.Seq(())
        else_ = self.visit(node.else_) if node.else_ is not None else None
        return S.IfThenElse(cond, self.visit(node.then), else_, node.then_share)

    def visit_Seq(self, node: S.Seq):
        return seq(self.visit(s) for s in node.stmts)


def simplify(module: S.Module, target) -> S.Module:
    return module.map_funcs(lambda f: f.with_body(_Simplify().visit(f.body)))
