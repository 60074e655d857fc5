"""`compare BASE NEW`: per-benchmark ratio of medians and a Mann-Whitney U test over repetitions.

Verdict rules (time per op, lower is better), with change = median(new)/median(base) - 1:
  * |change| <= threshold                      -> "same"  (whatever the test says: within noise)
  * beyond threshold and p < alpha             -> "slower" / "faster"
  * beyond threshold, p >= alpha               -> "same (not significant, p=...)"
  * beyond threshold but the sample sizes cannot reach p < alpha at all (the smallest two-sided
    exact p-value of the U test is 2 / C(n1+n2, n1): 3 vs 3 repetitions give 0.1) ->
    "slower?" / "faster?" with "(too few repetitions)": shown, never a regression.
Only a significant "slower" makes the exit status 1.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .load import load_all, samples
from .stats import median
from .util import fmt_time_ns


@dataclass
class Comparison:
    name: str
    base_n: int
    new_n: int
    base_median: float | None = None
    new_median: float | None = None
    ratio: float | None = None
    p_value: float | None = None
    verdict: str = ""
    regression: bool = False


def min_p_value(n1: int, n2: int) -> float:
    """Smallest two-sided p-value an exact Mann-Whitney U test can give for these sample sizes."""
    if n1 == 0 or n2 == 0:
        return 1.0
    return min(1.0, 2.0 / math.comb(n1 + n2, n1))


def mann_whitney_p(a, b) -> float:
    from scipy.stats import mannwhitneyu

    if len(set(a) | set(b)) == 1:
        return 1.0  # every value equal: no evidence of any difference
    p = float(mannwhitneyu(a, b, alternative="two-sided").pvalue)
    return 1.0 if math.isnan(p) else p


def compare_samples(name, base, new, threshold_pct=5.0, alpha=0.05) -> Comparison:
    """Verdict for one benchmark from its per-repetition times (ns/op)."""
    c = Comparison(name=name, base_n=len(base), new_n=len(new))
    c.base_median, c.new_median = median(base), median(new)
    if not c.base_median or c.new_median is None:
        c.verdict = "no data"
        return c
    c.ratio = c.new_median / c.base_median
    change = (c.ratio - 1.0) * 100.0
    direction = "slower" if change > 0 else "faster"
    if len(base) >= 1 and len(new) >= 1 and min_p_value(len(base), len(new)) < 1.0:
        c.p_value = mann_whitney_p(base, new)
    if abs(change) <= threshold_pct:
        c.verdict = "same"
    elif min_p_value(len(base), len(new)) >= alpha:
        c.verdict = f"{direction}? (too few repetitions)"
    elif c.p_value is not None and c.p_value < alpha:
        c.verdict = direction
        c.regression = direction == "slower"
    else:
        c.verdict = f"same (not significant, p={c.p_value:.2g})"
    return c


@dataclass
class CompareResult:
    rows: list
    failed: list      # (name, where, status, error)
    only_base: list
    only_new: list

    @property
    def regressions(self):
        return [r for r in self.rows if r.regression]


def compare_files(base_path, new_path, threshold_pct=5.0, alpha=0.05) -> CompareResult:
    base_file, new_file = load_all([base_path, new_path])
    base, new = samples(base_file), samples(new_file)
    rows, failed = [], []
    for name in base:
        if name not in new:
            continue
        (bs, be, bv), (ns, ne, nv) = base[name], new[name]
        if bs != "ok" or ns != "ok":
            for where, st, err in (("BASE", bs, be), ("NEW", ns, ne)):
                if st != "ok":
                    failed.append((name, where, st, err))
            continue
        rows.append(compare_samples(name, bv, nv, threshold_pct, alpha))
    only_base = [n for n in base if n not in new]
    only_new = [n for n in new if n not in base]
    return CompareResult(rows=rows, failed=failed, only_base=only_base, only_new=only_new)


def format_table(result: CompareResult, threshold_pct: float, alpha: float) -> str:
    head = ("benchmark", "base", "new", "change", "p", "reps", "verdict")
    body = []
    for c in result.rows:
        change = f"{(c.ratio - 1) * 100:+.1f}%" if c.ratio is not None else "—"
        p = f"{c.p_value:.3g}" if c.p_value is not None else "—"
        body.append((c.name, fmt_time_ns(c.base_median), fmt_time_ns(c.new_median), change, p,
                     f"{c.base_n}/{c.new_n}", c.verdict))
    widths = [max([len(h)] + [len(row[i]) for row in body]) for i, h in enumerate(head)]
    right = {1, 2, 3, 4, 5}

    def line(cells):
        return "  ".join(c.rjust(w) if i in right else c.ljust(w)
                         for i, (c, w) in enumerate(zip(cells, widths))).rstrip()

    out = [line(head), line(["-" * w for w in widths])] + [line(r) for r in body]
    if not body:
        out = ["no benchmark is present and ok in both files"]
    for name, where, st, err in result.failed:
        out.append(f"{st} in {where}: {name}" + (f" — {err}" if err else "") + " (not compared)")
    for name in result.only_base:
        out.append(f"only in BASE: {name}")
    for name in result.only_new:
        out.append(f"only in NEW: {name}")
    counts = {}
    for c in result.rows:
        key = c.verdict.split(" (")[0]
        counts[key] = counts.get(key, 0) + 1
    summary = ", ".join(f"{v} {k}" for k, v in sorted(counts.items()))
    out.append(f"{len(result.rows)} compared ({summary or 'none'}); time per op, "
               f"threshold {threshold_pct:g}%, Mann-Whitney U two-sided, alpha {alpha:g}")
    if result.regressions:
        out.append(f"REGRESSION: {len(result.regressions)} benchmark(s) significantly slower "
                   f"beyond {threshold_pct:g}%")
    return "\n".join(out)
