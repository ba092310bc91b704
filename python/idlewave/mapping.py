"""Rank-to-node mappings: block, round-robin, node-aware Cartesian (each
node holds a compact block of the process grid, minimising off-node
neighbours), 2-D grid with Qr x Qc processes per node (2-D grid paper
§3.2.1), topology-aware (the Cartesian blocks laid onto a torus so that
neighbouring blocks are neighbouring nodes) and a file (one node per rank).

Grids are given with the first dimension varying fastest in the rank
number (rank = x + px*(y + py*z)), as the Krylov workload numbers them.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np


class MappingError(ValueError):
    """A mapping that cannot be built; the message names the key."""


def node_blocks(grid: list[int], per_node: int) -> list[int]:
    """The block of the process grid a node holds: factors of `per_node`, one
    per dimension, each dividing that dimension, with the least surface (so
    the fewest halo neighbours off the node)."""
    best = None
    for dims in _factorizations(per_node, len(grid)):
        if any(g % d for g, d in zip(grid, dims)):
            continue
        surface = sum(math.prod(dims) // d for d in dims if d > 0)
        # ties: prefer blocks long in the fastest dimension (contiguous ranks)
        key = (surface, [-d for d in dims])
        if best is None or key < best[0]:
            best = (key, list(dims))
    if best is None:
        raise MappingError(
            f"mapping: no block of {per_node} ranks divides the process grid {grid}; "
            "give mapping.node_grid or change ranks_per_node")
    return best[1]


def _factorizations(n: int, k: int):
    if k == 1:
        yield (n,)
        return
    for d in range(1, n + 1):
        if n % d == 0:
            for rest in _factorizations(n // d, k - 1):
                yield (d, *rest)


def cartesian(grid: list[int], block: list[int], torus: list[int] | None = None) -> np.ndarray:
    """Node of every rank when each node holds one `block` of the grid.
    With `torus`, node-grid coordinates become torus coordinates (the node
    grid must fit in the torus), so neighbouring blocks are one hop apart."""
    if len(block) != len(grid) or any(b <= 0 or g % b for g, b in zip(grid, block)):
        raise MappingError(f"mapping.node_grid {block} must divide the process grid {grid} dimension by dimension")
    coords = np.indices(grid[::-1]).reshape(len(grid), -1)[::-1]  # first dimension fastest
    node_coords = [c // b for c, b in zip(coords, block)]
    node_dims = [g // b for g, b in zip(grid, block)]
    if torus is not None:
        dims = list(node_dims) + [1] * (3 - len(node_dims))
        if len(node_dims) > 3 or any(d > t for d, t in zip(dims, torus)):
            raise MappingError(f"mapping: a node grid of {node_dims} does not fit the torus {torus}")
        node_coords = list(node_coords) + [np.zeros_like(coords[0])] * (3 - len(node_coords))
        node_dims = torus
    node = np.zeros_like(coords[0])
    for c, d in zip(reversed(node_coords), reversed(node_dims)):
        node = node * d + c
    return node.astype(np.uint32)


def read_file(path: str, ranks: int) -> np.ndarray:
    """One node number per line (rank order); '#' starts a comment."""
    nodes = []
    for i, line in enumerate(Path(path).read_text().splitlines(), 1):
        text = line.split("#", 1)[0].strip()
        if not text:
            continue
        try:
            value = int(text)
        except ValueError:
            raise MappingError(f"{path}:{i}: expected a node number, found {text!r}") from None
        if value < 0:
            raise MappingError(f"{path}:{i}: node numbers are non-negative, found {value}")
        nodes.append(value)
    if len(nodes) != ranks:
        raise MappingError(f"{path}: {len(nodes)} node numbers for {ranks} ranks")
    return np.asarray(nodes, dtype=np.uint32)


def off_node_pairs(nodes: np.ndarray, grid: list[int]) -> int:
    """Face-neighbour pairs of the process grid on different nodes (for
    comparing mappings)."""
    shaped = nodes.reshape(grid[::-1])
    count = 0
    for axis in range(len(grid)):
        a = np.swapaxes(shaped, 0, axis)
        count += int((a[1:] != a[:-1]).sum())
    return count


def engine_mapping(m: dict, ranks: int, per_node: int, workload_grid: list[int] | None, topology: dict) -> dict:
    """The engine's mapping for the scenario's [network.mapping] table."""
    kind = m["kind"]
    if kind == "block":
        return {"kind": "block"}
    if kind == "round_robin":
        return {"kind": "round_robin", "nodes": -(-ranks // per_node)}
    if kind == "file":
        return {"kind": "table", "nodes": read_file(m["path"], ranks).tolist()}
    grid = m["grid"] or workload_grid
    if not grid:
        raise MappingError(f"mapping.grid: the {kind} mapping needs the process grid (the workload has none)")
    if math.prod(grid) != ranks:
        raise MappingError(f"mapping.grid: {grid} holds {math.prod(grid)} ranks, the workload has {ranks}")
    block = m["node_grid"] or node_blocks(grid, per_node)
    if math.prod(block) != per_node and kind == "grid2d":
        raise MappingError(f"mapping.node_grid: {block} holds {math.prod(block)} ranks, ranks_per_node is {per_node}")
    torus = topology.get("dims") if kind == "topology_aware" and topology["kind"] == "torus" else None
    return {"kind": "table", "nodes": cartesian(grid, block, torus).tolist()}


__all__ = ["MappingError", "node_blocks", "cartesian", "read_file", "off_node_pairs", "engine_mapping"]
