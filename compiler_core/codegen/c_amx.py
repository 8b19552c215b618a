"""C definitions behind the CPU GEMM's AMX calls (gemm_amx): the per-thread tile configuration, and a microkernel of
R x C tiles of float32 sums over bfloat16 A and B tiles (tdpbf16ps), rendered for the tile counts a module uses.

Every tile is configured full (16 rows of 64 bytes): C tiles hold 16 x 16 float32, A tiles 16 rows of 32 bfloat16
(K steps), B tiles 16 pair rows of 16 columns x 2 K steps, which is the pair-packed B panel's layout (gemm_bf16_dot).
Ragged edges are zero-padded by the packers, so the configuration never changes inside a call. Tile registers are
numbered C first (R x C of them), then A (R), then B (C): at most 8 in all (TILE_REGISTERS)."""
from __future__ import annotations

from compiler_core.target import ARCH_REQ_XCOMP_PERM, SYS_ARCH_PRCTL, XFEATURE_XTILEDATA

TILE_REGISTERS = 8
TILE_ROWS = 16  # rows of a tile, and float32 columns of a C tile
TILE_K = 32  # bfloat16 K steps of an A tile's row (64 bytes)

# Linux refuses tile instructions until the process asks for the tile state (compiler_core.target.amx_permitted);
# asking again is harmless, so every thread that is about to use the tiles makes sure. syscall is declared here so
# the source needs neither _GNU_SOURCE nor unistd.h.
_REQUEST = f"{SYS_ARCH_PRCTL}L, {ARCH_REQ_XCOMP_PERM:#x}L, {XFEATURE_XTILEDATA}L"
SETUP = """typedef struct { unsigned char palette, start_row, reserved[14]; unsigned short colsb[16];
                 unsigned char rows[16]; } tf_amx_config;
extern long syscall(long number, ...);
static void tf_amx_setup(void) {
  static volatile int granted;
  if (!granted) { syscall(""" + _REQUEST + """); granted = 1; }  /* arch_prctl(ARCH_REQ_XCOMP_PERM, XTILEDATA) */
  tf_amx_config cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.palette = 1;
  for (int t = 0; t < 8; t++) { cfg.colsb[t] = 64; cfg.rows[t] = 16; }
  _tile_loadconfig(&cfg);
}
"""


def tiles_needed(row_tiles: int, col_tiles: int) -> int:
    return row_tiles * col_tiles + row_tiles + col_tiles


def tile_helper(row_tiles: int, col_tiles: int, gathered: bool = False) -> str:
    """`tf_amx_tile_RxC(c, c_stride, accumulate, a, a_stride, b, b_stride, steps)`: the 16R x 16C float32 block at `c`
    (rows `c_stride` bytes apart) = (itself, when `accumulate`, else 0) + the sums over `steps` K steps of 32 of A
    (16R rows from `a`, `a_stride` bytes apart) times B (pair rows from `b`, `b_stride` bytes apart; 16 per step).
    `gathered` (`tf_amx_rows_RxC`, one more argument, `rows`): step s's 16 pair rows start rows[16 s] bfloat16
    elements past `b` instead (B read in place where each step's rows are evenly spaced but the steps are not:
    conv2d's taps)."""
    if tiles_needed(row_tiles, col_tiles) > TILE_REGISTERS:
        raise ValueError(f"{row_tiles} x {col_tiles} C tiles need more than {TILE_REGISTERS} tile registers")
    c = lambda i, j: i * col_tiles + j  # noqa: E731
    a = lambda i: row_tiles * col_tiles + i  # noqa: E731
    b = lambda j: row_tiles * col_tiles + row_tiles + j  # noqa: E731
    at = lambda i, j: f"cp + {i * TILE_ROWS} * c_stride + {64 * j}"  # noqa: E731
    name = f"tf_amx_{'rows' if gathered else 'tile'}_{row_tiles}x{col_tiles}"
    lines = [f"static inline void {name}(void *c, long c_stride, long accumulate, const void *a, long a_stride, "
             f"const void *b, long b_stride, long steps{', const int *rows' if gathered else ''}) {{",
             "  const char *ap = (const char *)a, *bp = (const char *)b;",
             "  char *cp = (char *)c;",
             "  if (accumulate) {"]
    lines += [f"    _tile_loadd({c(i, j)}, {at(i, j)}, c_stride);" for i in range(row_tiles) for j in range(col_tiles)]
    lines.append("  } else {")
    lines += [f"    _tile_zero({c(i, j)});" for i in range(row_tiles) for j in range(col_tiles)]
    lines.append("  }")
    lines.append("  for (long s = 0; s < steps; s++) {")
    lines += [f"    _tile_loadd({a(i)}, ap + {i * TILE_ROWS} * a_stride + s * {2 * TILE_K}, a_stride);"
              for i in range(row_tiles)]
    step = f"2L * rows[{TILE_ROWS} * s]" if gathered else f"s * {TILE_ROWS} * b_stride"
    lines += [f"    _tile_loadd({b(j)}, bp + {step} + {64 * j}, b_stride);" for j in range(col_tiles)]
    lines += [f"    _tile_dpbf16ps({c(i, j)}, {a(i)}, {b(j)});" for i in range(row_tiles) for j in range(col_tiles)]
    lines.append("  }")
    lines += [f"  _tile_stored({c(i, j)}, {at(i, j)}, c_stride);" for i in range(row_tiles) for j in range(col_tiles)]
    lines.append("}")
    return "\n".join(lines) + "\n"
