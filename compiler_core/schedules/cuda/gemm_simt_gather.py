"""Cheap gathers for implicit-GEMM operands of the SIMT GEMM (gemm_simt's `gather` knob).

An operand such as conv2d's im2col of X computes each element's address from k (kk -> channel, filter row,
filter column) and from its row or column x (j -> image, output row, output column) with divisions and
modulos, and tests zero padding; done for every loaded float inside the k loop that costs ~40 integer
instructions per float. A `Gather` states how that index splits into a part of k and a part of x:

    index(b, k, x) = k_offset(k) + x_base(b, x)
    inside(b, k, x) = for every d: 0 <= x_starts(b, x)[d] + k_shifts(k)[d] < limits[d]

and the knob picks how the kernel evaluates it:

- "div": the operand's own `index` and `guard`, as written (the k part and the x part recomputed per load);
- "hoist": the x part (base and starts) is computed once per thread and code path, before the k loop, into
  registers (one set per load slot, or one in all when every load of the thread reads the same x); the k
  part is still computed per load;
- "table": as "hoist", and the k part of every k of the block's split range is packed into one int32,
  `offset << bits | shifts`, in a shared-memory table the block fills at kernel start. A load is then one
  shared read (a broadcast: the threads of a tile row share k), a shift, a mask per shift and an add, plus
  two compares per padded dimension.

The table costs 4 bytes per k of the split's range in shared memory (counted by the space's shared-memory
check) and needs offsets and shifts to fit in 31 bits (a constraint of the space).
"""
from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass

from compiler_core.ir import expr as E
from compiler_core.ir import stmt as S
from compiler_core.schedules.cuda.gemm_simt_edges import all_of, guarded
from compiler_core.space import Knob

GATHERS = ("div", "hoist", "table")
KNOB = Knob("gather", GATHERS, "implicit-GEMM gather: 'div' recomputes each element's address per load, 'hoist' "
                               "keeps the per-thread part in registers, 'table' also reads the k part from a "
                               "shared-memory table filled at kernel start")
ENTRY_BITS = 31  # a table entry is a non-negative int32


@dataclass(frozen=True)
class Gather:
    """How an operand's flat index splits into a k part and an x part (see the module doc). The callables
    work on Python ints and on IR expressions alike: `k_parts(k) -> (offset, shifts)`,
    `x_parts(b, x) -> (base, starts)`. `offset` lies in [0, offset_bound), shift d in [0, shift_bounds[d]);
    `limits` and `shift_bounds` are empty where the operand needs no guard (shifts and starts are then ignored)."""
    k_parts: Callable
    x_parts: Callable
    limits: tuple
    shift_bounds: tuple
    offset_bound: int

    @property
    def field_bits(self) -> tuple:
        return tuple(max(1, (bound - 1).bit_length()) for bound in self.shift_bounds)

    @property
    def shift_bits(self) -> int:
        return sum(self.field_bits)

    @property
    def table_fits(self) -> bool:
        return self.offset_bound <= 1 << (ENTRY_BITS - self.shift_bits)

    def pack(self, k):
        """The table entry of k: offset in the high bits, shift d in its field (the last shift lowest)."""
        offset, shifts = self.k_parts(k)
        entry, at = offset * (1 << self.shift_bits), self.shift_bits
        for shift, bits in zip(shifts[:len(self.field_bits)], self.field_bits, strict=True):
            at -= bits
            entry = entry + shift * (1 << at)
        return entry

    def unpack(self, entry: E.Expr) -> tuple:
        """(offset, shifts) of a table entry, as IR."""
        shifts, at = [], self.shift_bits
        for bits in self.field_bits:
            at -= bits
            shifts.append(E.bit_and(E.shift_right(entry, at), (1 << bits) - 1))
        return E.shift_right(entry, self.shift_bits), tuple(shifts)

    def inside(self, starts: tuple, shifts: tuple):
        """The zero-padding test from the x part's starts and the k part's shifts (None: always inside)."""
        conds, d = [], len(self.limits)
        for start, shift, limit in zip(starts[:d], shifts[:d], self.limits, strict=True):
            at = start + shift
            conds += [0 <= at, at < limit]
        return all_of(*conds)


def table_entries(g: Gather, k_begin: int, length: int) -> list[int]:
    """The host's view of a table (what the kernel's fill stores): entries of k = k_begin .. k_begin+length-1."""
    return [g.pack(k) for k in range(k_begin, k_begin + length)]


def table_length(BK: int, tiles_per_split: int) -> int:
    """Entries of a block's table: its split's k tiles (the whole of K without split_k), partial tile included,
    so a load indexes it without clamping k."""
    return tiles_per_split * BK


def fill_table(ib, g: Gather, table: S.Buffer, k_begin, K: int, past_k: bool, tid, threads: int) -> None:
    """table[e] = pack(k_begin + e) (0 for k >= K, which `past_k` says some block's table reaches: those loads
    are zero-filled by their k check), spread over the block's threads, then a barrier (the block's first loads
    read it). Block-uniform trip count; the barrier is reached by all threads."""
    length = table.shape[0]
    with ib.loop("tab_f", E.ceil_div(length, threads)) as f:
        e = f * threads + tid
        k = k_begin + e
        with guarded(ib, e < length if length % threads else None):
            ib.store(table, e, E.select(k < K, g.pack(k), 0) if past_k else g.pack(k))
    ib.barrier()


@dataclass(frozen=True)
class Hoisted:
    """One operand's x parts in registers: `base[slot]`, `starts[d][slot]`; slot = load index, or 0 for all
    loads where `slots` is 1."""
    base: S.Buffer
    starts: tuple
    slots: int

    def parts(self, load):
        slot = load if self.slots > 1 else 0
        return self.base[slot], tuple(s[slot] for s in self.starts)


@contextlib.contextmanager
def hoist(ib, g: Gather, name: str, slots: int, batch, x_of_slot: Callable):
    """Allocates the registers of a `Hoisted`, fills them (x_of_slot(slot) -> x) and yields it."""
    with contextlib.ExitStack() as stack:
        base = stack.enter_context(ib.allocate(f"{name}_xb", "int32", (slots,), S.Scope.LOCAL))
        starts = tuple(stack.enter_context(ib.allocate(f"{name}_xs{d}", "int32", (slots,), S.Scope.LOCAL))
                       for d in range(len(g.limits)))
        h = Hoisted(base, starts, slots)
        _fill_hoisted(ib, g, h, batch, x_of_slot)
        yield h


def _fill_hoisted(ib, g: Gather, h: Hoisted, batch, x_of_slot: Callable) -> None:
    with ib.loop(f"{h.base.name}_s", h.slots, S.ForKind.UNROLLED) as s:
        base, starts = g.x_parts(batch, x_of_slot(s))
        ib.store(h.base, s, base)
        for buf, start in zip(h.starts, starts[:len(h.starts)], strict=True):
            ib.store(buf, s, start)


def hoisted_words(g: Gather, slots: int) -> int:
    """Registers the hoisted x parts take (for the space's register estimate)."""
    return slots * (1 + len(g.limits))
