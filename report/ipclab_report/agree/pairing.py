"""The paired ratio of one point: each round's ipclab figure over the tool's run right after it
(two runs next to each other share the machine's state, which the two columns' medians need
not), the median of those ratios and its 95% interval — by the same bootstrap of the log ratios
that `ipclab ab` uses (stats.bootstrap_median_ci), seeded by the point's name so that the same
rounds give the same interval."""

from __future__ import annotations

import math
import zlib

from ..stats import bootstrap_median_ci, median


def agreement(ipclab: list, tool: list, band: float, name: str) -> dict:
    """ratio, ci, within (|ratio - 1| <= band) and the two medians; ratio None without a round
    where both sides gave a figure."""
    pairs = [(i, t) for i, t in zip(ipclab, tool) if i and t and i > 0 and t > 0]
    out = {"ipclab_median": median(ipclab), "tool_median": median(tool), "ratio": None, "ci": None,
           "within": None, "pairs": len(pairs)}
    if not pairs:
        return out
    logs = [math.log(i / t) for i, t in pairs]
    m = median(logs)
    lo, hi = bootstrap_median_ci(logs, zlib.crc32(name.encode()))
    ratio = math.exp(m)
    out.update(ratio=ratio, ci=[math.exp(lo), math.exp(hi)], within=abs(ratio - 1) <= band + 1e-12)
    return out
