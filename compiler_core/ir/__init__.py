"""The loop IR: expressions, statements, buffers, kernels and the builder used by schedule templates."""
from compiler_core.ir.builder import IRBuilder, seq
from compiler_core.ir.expr import (
    Address,
    BinOp,
    Broadcast,
    Call,
    Cast,
    Expr,
    FloatImm,
    IntImm,
    Load,
    Not,
    Select,
    Var,
    as_expr,
    binop,
    call,
    cast,
    ceil_div,
    max_,
    min_,
    select,
)
from compiler_core.ir.opaque import KernelProfile, OpaqueKernel, ScalarParam, TensorMapParam
from compiler_core.ir.stmt import (
    DTYPE_BYTES,
    Allocate,
    Barrier,
    Buffer,
    Evaluate,
    For,
    ForKind,
    IfThenElse,
    LetStmt,
    Module,
    PrimFunc,
    Scope,
    Seq,
    Stmt,
    Store,
)

__all__ = [
    "Address", "Allocate", "Barrier", "BinOp", "Broadcast", "Buffer", "Call", "Cast", "DTYPE_BYTES",
    "Evaluate", "Expr", "FloatImm", "For", "ForKind", "IRBuilder", "IfThenElse", "IntImm", "KernelProfile", "LetStmt",
    "Load", "Module", "Not", "OpaqueKernel", "PrimFunc", "ScalarParam", "Scope", "Select", "Seq", "Stmt", "Store",
    "TensorMapParam", "Var", "as_expr",
    "binop", "call", "cast", "ceil_div", "max_", "min_", "select", "seq",
]
