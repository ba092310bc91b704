"""Message lists of a 3-D halo exchange per rank under a mapping, for the
postal halo model: (bytes, node, peer's node) for each neighbour."""

from __future__ import annotations

import numpy as np

from idlewave.mapping import cartesian, node_blocks


def halo_messages(grid: list[int], local: list[int], stencil: int, ppn: int, mapping: str = "block") -> list[list[tuple[int, int, int]]]:
    px, py, pz = grid
    ranks = px * py * pz
    if mapping == "cartesian":
        nodes = cartesian(grid, node_blocks(grid, ppn))
    else:
        nodes = np.arange(ranks) // ppn
    offsets = [(dx, dy, dz) for dz in (-1, 0, 1) for dy in (-1, 0, 1) for dx in (-1, 0, 1) if (dx, dy, dz) != (0, 0, 0)]
    if stencil == 7:
        offsets = [d for d in offsets if sum(map(abs, d)) == 1]
    out = []
    for r in range(ranks):
        x, y, z = r % px, (r // px) % py, r // (px * py)
        msgs = []
        for d in offsets:
            q = (x + d[0], y + d[1], z + d[2])
            if not (0 <= q[0] < px and 0 <= q[1] < py and 0 <= q[2] < pz):
                continue
            peer = q[0] + px * (q[1] + py * q[2])
            points = int(np.prod([local[i] if d[i] == 0 else 1 for i in range(3)]))
            msgs.append((8 * points, int(nodes[r]), int(nodes[peer])))
        out.append(msgs)
    return out
