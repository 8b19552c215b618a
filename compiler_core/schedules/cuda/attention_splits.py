"""FlashDecoding's split of an attention block's keys over several blocks, shared by the engines that offer it
(mma.sync, tiled SIMT): the choices, and the split a launch's rounds say is fastest."""
from __future__ import annotations

from collections.abc import Callable

SPLIT_CHOICES = (1, 2, 4, 8, 16, 32)
SPLIT_OVERHEAD_TILES = 2  # a block's fixed time in key tiles: staging the query rows, the epilogue
COMBINE_TILES = 4  # the combine kernel's launch (a few microseconds) in key tiles of one block


def fewest_rounds(units: int, tiles: int, slots: int, valid: Callable[[int], bool]) -> int:
    """The split the occupancy says is fastest: `units` blocks of `tiles` key tiles take ceil(units s / slots)
    rounds of tiles / s + SPLIT_OVERHEAD_TILES tiles each, `slots` the blocks all SMs hold at once, plus the
    combine's launch (COMBINE_TILES) where s > 1; ties go to the smaller split. `valid(split)`: the space takes it."""
    def rounds(split: int) -> float:
        return -(-units * split // slots) * (tiles / split + SPLIT_OVERHEAD_TILES) + (COMBINE_TILES if split > 1 else 0)

    return min((k for k in SPLIT_CHOICES if k == 1 or valid(k)), key=lambda k: (rounds(k), k))
