"""The studies' runs on shared links (docs/links.md): the study's own
network placed on a fat tree whose links between switches are as fast as
its NIC (1/G) and tapered, a message's bytes a flow that shares each link
max-min fairly. Ranks map one per node, as in the studies without links.

With `model = "none"` the same tree is LogGOPSim's network: the taper then
changes nothing, which makes it the comparison that isolates sharing.
"""

from __future__ import annotations

from dataclasses import dataclass

from idlewave.scenario import default

# 18 nodes per leaf switch, 324 per pair of levels: the 64 to 65,536 nodes of
# the studies' runs span one to three levels of links.
RADIX = 36


@dataclass(frozen=True)
class SharedLinks:
    """A `taper`:1 fat tree of radix-`radix` switches; `routing` "d_mod_k"
    (deterministic) or "random" (up-links drawn per message from the seed)."""

    taper: float = 2.0
    routing: str = "d_mod_k"
    model: str = "flow"
    radix: int = RADIX

    def network(self, network: dict) -> dict:
        """`network` on this tree, its links as fast as the NIC's 1/G."""
        g = network.get("G_s_per_byte", default("network.G_s_per_byte"))
        links = {"model": self.model, "bandwidth_bytes_per_s": 1.0 / g, "taper": self.taper, "routing": self.routing}
        return {**network, "topology": {"kind": "fat_tree", "radix": self.radix}, "links": links}

    def describe(self) -> dict:
        """The run's links as a study's results record them."""
        return {"model": self.model, "taper": self.taper, "routing": self.routing, "radix": self.radix,
                "bandwidth": "the NIC's 1/G", "label": self.label()}

    def label(self) -> str:
        sharing = "shared" if self.model == "flow" else "not shared"
        return f"{self.taper:g}:1 fat tree, links {sharing} ({self.routing.replace('_', '-')})"
