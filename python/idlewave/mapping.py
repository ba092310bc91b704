"""Rank-to-node mappings for analysis (the models compare them); the
engine's own (src/network/mapping.rs) computes them: node-aware Cartesian
(each node holds a compact block of the process grid, minimising off-node
neighbours) and topology-aware (the blocks laid onto a torus).

Grids are given with the first dimension varying fastest in the rank
number (rank = x + px*(y + py*z)), as the Krylov workload numbers them.
"""

from __future__ import annotations

import numpy as np

from idlewave import _engine


class MappingError(ValueError):
    """A mapping that cannot be built; the message names the key."""


def node_blocks(grid: list[int], per_node: int) -> list[int]:
    """The block of the process grid a node holds: factors of `per_node`, one
    per dimension, each dividing that dimension, with the least surface (so
    the fewest halo neighbours off the node)."""
    try:
        return list(_engine.node_blocks(list(grid), per_node))
    except ValueError as e:
        raise MappingError(str(e)) from None


def cartesian(grid: list[int], block: list[int], torus: list[int] | None = None) -> np.ndarray:
    """Node of every rank when each node holds one `block` of the grid.
    With `torus`, node-grid coordinates become torus coordinates (the node
    grid must fit in the torus), so neighbouring blocks are one hop apart."""
    try:
        return np.asarray(_engine.cartesian_nodes(list(grid), list(block), torus), dtype=np.uint32)
    except ValueError as e:
        raise MappingError(str(e)) from None


def off_node_pairs(nodes: np.ndarray, grid: list[int]) -> int:
    """Face-neighbour pairs of the process grid on different nodes (for
    comparing mappings)."""
    shaped = nodes.reshape(grid[::-1])
    count = 0
    for axis in range(len(grid)):
        a = np.swapaxes(shaped, 0, axis)
        count += int((a[1:] != a[:-1]).sum())
    return count


__all__ = ["MappingError", "node_blocks", "cartesian", "off_node_pairs"]
