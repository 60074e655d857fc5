"""`compare BASE NEW`: per-benchmark ratio of medians, a Mann-Whitney U test over repetitions,
and a between-run noise band that decides what a ratio of medians can mean at all.

Why a noise band: the U test compares the repetitions of one run with those of the other, and the
repetitions of one run are taken back to back, so they share the machine's state of that moment
(on a shared 2-vCPU KVM guest: where the host put the vCPUs, who else runs). They agree closely
with each other while two runs of the same build differ 2-5x on cross-CPU benchmarks. The test
then correctly says "these two runs differ", which is not "these two builds differ". The band is
the size of change the two runs themselves show without any change of code; see
docs/methodology.md (Comparing two runs) for the model and the measurements behind its constants.

Open-loop records (pattern=rate) are compared on their corrected p99 (lower is better), capacity
searches (rate=auto) on their capacity (higher is better: "faster" is more capacity); a point
saturated on one side only is a state change, shown as such ("became saturated", "no longer
saturated"), and a point saturated on both sides is not compared. Their band is the threshold and
the noise floor: the anchors and the other mechanisms move in time per op, not in tail latency.

With r = ln(median(new) / median(base)) and time per op (lower is better):
  * |r| <= band                        -> "same" (the threshold or the noise band covers it)
  * beyond band, sizes cannot reach p < alpha at all (the smallest two-sided exact p of the U
    test is 2 / C(n1+n2, n1): 3 vs 3 repetitions give 0.1) -> "slower?" / "faster?" (too few
    repetitions): shown, never a regression
  * beyond band and p < alpha           -> "slower" / "faster"
  * beyond band, p >= alpha             -> "same (not significant, p=...)"
Only a significant "slower" beyond the band makes the exit status 1.

The band of a benchmark is the widest of (all as |ln ratio|):
  * the threshold (--threshold, a change too small to matter);
  * the noise floor: the runs' own spread (spread_floor: the larger of the two sides' spread, each
    the farthest repetition from its median or the half-width of its median's 95% CI, whichever
    is wider), or a fixed percentage given with --noise;
  * anchor drift: the largest |r| among the other anchors (a suite whose registry entry declares its
    benchmarks the machine's floors: anchors) of the same placement
    class, the machine's own calibration measured in the same two runs, plus the threshold;
  * class spread: K x the 75th percentile of |r - median r| over the benchmarks of the same
    placement class that belong to other mechanisms (needs MIN_SPREAD of them). It assumes that
    most mechanisms did not change, and leaves the benchmark's own mechanism out so that a
    mechanism that did change cannot widen its own band.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from .load import CAPACITY, TIME_PER_OP, compared, load_all, samples, summaries
from .stats import median
from . import registry
from .tables import short_names
from .util import fmt_si, fmt_time_ns, is_number, text_table

DEFAULT_NOISE_PCT = None  # None: the floor is the runs' own spread (spread_floor); --noise PCT fixes it
SPREAD_QUANTILE = 0.75   # heavy-tailed between-run changes: the median deviation understates them
SPREAD_K = 2.5           # 2.5 x q75 of |deviation| ~ 2.9 sigma for a normal; see methodology
SPREAD_FLOOR_K = 3.0     # x the larger side's spread: repetitions share their run's machine state, so they understate between-run movement
MIN_SPREAD = 5           # fewer other-mechanism points than this give no usable spread


@dataclass
class Band:
    """Half-width of the "same" band as |ln ratio|, and what set it."""

    log: float
    source: str

    @property
    def factor(self) -> float:
        return math.exp(self.log)


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
    band: Band | None = None
    placement: str = ""
    metric: str = TIME_PER_OP[0]
    state: str = ""        # a change no ratio describes: "became saturated", "no longer saturated"
    base_ci: tuple | None = None   # the aggregate's bootstrap 95% CI of its median time per op
    new_ci: tuple | None = None
    floor: Band | None = None      # the noise floor used: the runs' own spread, or --noise


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


def threshold_band(threshold_pct: float) -> Band:
    return Band(math.log1p(threshold_pct / 100.0), "threshold")


def compare_samples(name, base, new, threshold_pct=5.0, alpha=0.05, band: Band | None = None,
                    higher_better=False) -> Comparison:
    """Verdict for one benchmark from its per-repetition times (ns/op), or from another figure
    (`higher_better`: a capacity, where a lower NEW is "slower").

    `band` is the noise band from `noise_band`; without it only the threshold guards (one
    benchmark alone carries no evidence of how much the machine moved between the runs).
    """
    c = Comparison(name=name, base_n=len(base), new_n=len(new))
    c.band = band if band is not None and band.log > math.log1p(threshold_pct / 100.0) else threshold_band(threshold_pct)
    c.base_median, c.new_median = median(base), median(new)
    if not c.base_median or not c.new_median or c.base_median < 0 or c.new_median < 0:
        c.verdict = "no data"  # a ratio of times needs two positive times
        return c
    c.ratio = c.new_median / c.base_median
    direction = "slower" if (c.ratio > 1) != higher_better else "faster"
    if min_p_value(len(base), len(new)) < 1.0:
        c.p_value = mann_whitney_p(base, new)
    # A hair of slack: a ratio exactly on the band's edge (e.g. 1.30 against --noise 30) is inside.
    r = abs(math.log(c.ratio))
    if r <= math.log1p(threshold_pct / 100.0) + 1e-12:
        c.verdict = "same"
    elif r <= c.band.log + 1e-12:
        c.verdict = f"same (within noise: {c.band.source})"
    elif min_p_value(len(base), len(new)) >= alpha:
        c.verdict = f"{direction}? (too few repetitions)"
    elif c.p_value is not None and c.p_value < alpha:
        c.verdict = direction
        c.regression = direction == "slower"
    else:
        c.verdict = f"same (not significant, p={c.p_value:.2g})"
    return c


def placement_class(record) -> str:
    """same / cross / unpinned: the placement decides how a benchmark moves between runs."""
    v = record.dim("placement")
    return v if isinstance(v, str) and v else "unpinned"


def _quantile(xs, q):
    """Nearest-rank quantile of a non-empty list."""
    xs = sorted(xs)
    return xs[max(0, math.ceil(q * len(xs)) - 1)]


@dataclass
class Point:
    """What the noise model knows of one benchmark: its class, its mechanism, its ln ratio."""

    name: str
    placement: str
    mechanism: str     # suite/mechanism: the unit a code change slows
    anchor: bool
    log_ratio: float


def _side_spread(values, ci=None) -> float:
    """One side's spread as |ln ratio|: its farthest repetition from its median, or the half-width
    of its median's 95% CI (the harness's bootstrap), whichever is wider; 0 for one repetition."""
    mid = median(values)
    if not mid or mid <= 0:
        return 0.0
    far = max((abs(math.log(v / mid)) for v in values if v and v > 0), default=0.0)
    if ci and ci[0] > 0 and ci[1] > 0:
        far = max(far, math.log(ci[1] / mid), math.log(mid / ci[0]))
    return far


def spread_floor(base, new, base_ci=None, new_ci=None) -> Band:
    """The noise floor of one benchmark from its two runs: the larger of the two sides' spread
    (_side_spread). Steady runs give a narrow floor, so that a real +29% stands out of them."""
    log = SPREAD_FLOOR_K * max(_side_spread(base, base_ci), _side_spread(new, new_ci))
    return Band(log, f"runs' spread ±{(math.exp(log) - 1) * 100:.1f}%")


def floor_band(noise_pct) -> Band:
    """The floor --noise PCT fixes."""
    return Band(math.log1p(noise_pct / 100.0), f"floor {noise_pct:g}%")


class NoiseModel:
    """The points of one comparison, indexed once by placement class: the anchors of each class
    by how far they moved, and the class spread per (class, mechanism) computed on first use, so
    that the band of every benchmark costs a look-up rather than a pass over all the others."""

    def __init__(self, points):
        self.classes = {}
        for q in points:
            self.classes.setdefault(q.placement, []).append(q)
        # Farthest first; a stable sort keeps the file order among equals (max() would take the first).
        self.anchors = {k: sorted((q for q in qs if q.anchor), key=lambda q: -abs(q.log_ratio))
                        for k, qs in self.classes.items()}
        self.spreads = {}

    def spread(self, placement, mechanism):
        """K x the SPREAD_QUANTILE of |r - median r| over the class's points of other mechanisms;
        None with fewer than MIN_SPREAD of them."""
        key = (placement, mechanism)
        if key not in self.spreads:
            others = [q.log_ratio for q in self.classes.get(placement, ()) if q.mechanism != mechanism]
            value = None
            if len(others) >= MIN_SPREAD:
                centre = median(others)
                value = SPREAD_K * _quantile([abs(x - centre) for x in others], SPREAD_QUANTILE)
            self.spreads[key] = value
        return self.spreads[key]

    def band(self, p: Point, threshold_pct: float, noise) -> Band:
        """The widest of threshold, noise floor (a Band, or --noise's percentage), anchor drift and
        class spread for point `p`."""
        cands = [threshold_band(threshold_pct), noise if isinstance(noise, Band) else floor_band(noise)]
        a = next((q for q in self.anchors.get(p.placement, ()) if q.name != p.name), None)
        if a is not None:
            # The whole class moves with the machine, each benchmark's median scattering around the
            # anchor's move: the threshold on top keeps a benchmark that moved 1.62x beside an anchor
            # that moved 1.60x inside.
            cands.append(Band(abs(a.log_ratio) + math.log1p(threshold_pct / 100.0),
                              f"{a.name} moved x{math.exp(abs(a.log_ratio)):.2f}"))
        spread = self.spread(p.placement, p.mechanism)
        if spread is not None:
            cands.append(Band(spread, f"{p.placement}-CPU spread" if p.placement in ("same", "cross")
                              else f"{p.placement} spread"))
        return max(cands, key=lambda b: b.log)


def noise_band(p: Point, points, threshold_pct: float, noise_pct: float) -> Band:
    """The widest of threshold, noise floor, anchor drift and class spread for point `p` (one
    point; compare_files builds one NoiseModel for all of them)."""
    return NoiseModel(points).band(p, threshold_pct, noise_pct)


@dataclass
class CompareResult:
    rows: list
    failed: list      # (name, where, status, error)
    only_base: list
    only_new: list
    short: dict = field(default_factory=dict)   # name -> the console's short name (tables.short_names)

    @property
    def regressions(self):
        return [r for r in self.rows if r.regression]


def saturation_change(name, base_rec, new_rec) -> Comparison | None:
    """The row of an open-loop point saturated on either side: a state, never a ratio of latencies
    (a saturated point has none); None when neither side is saturated or it is a capacity search
    (compared on its capacity, whatever its confirming run did)."""
    if base_rec.is_capacity or not (base_rec.saturated or new_rec.saturated):
        return None
    c = Comparison(name=name, base_n=0, new_n=0, metric="p99")
    if base_rec.saturated and new_rec.saturated:
        c.verdict, c.state = "both saturated (not compared)", "both saturated"
    else:
        sat = new_rec if new_rec.saturated else base_rec
        why = sat.get("extra", "rate", "saturation") or "achieved rate short of the request"
        c.state = "became saturated" if new_rec.saturated else "no longer saturated"
        c.verdict = f"{c.state} ({'NEW' if new_rec.saturated else 'BASE'}: {why})"
    return c


def compare_files(base_path, new_path, threshold_pct=5.0, alpha=0.05, noise_pct=DEFAULT_NOISE_PCT) -> CompareResult:
    base_file, new_file = load_all([base_path, new_path])
    reg = registry.of([base_file, new_file])
    floors = set(reg.with_flag("floors"))   # the suites whose benchmarks are the machine's anchors
    base, new = samples(base_file), samples(new_file)
    info = {s.name: s for s in summaries(base_file)}
    info_new = {s.name: s for s in summaries(new_file)}
    matched, failed, states = [], [], {}
    for name in base:
        if name not in new:
            continue
        (bs, be, bv), (ns, ne, nv) = base[name], new[name]
        if bs != "ok" or ns != "ok":
            for where, st, err in (("BASE", bs, be), ("NEW", ns, ne)):
                if st != "ok":
                    failed.append((name, where, st, err))
            continue
        state = saturation_change(name, info[name], info_new[name])
        if state:
            state.placement, state.base_n, state.new_n = placement_class(info[name]), len(bv), len(nv)
            states[name] = state
        matched.append((name, bv, nv))
    points = {}
    for name, bv, nv in matched:
        mb, mn = median(bv), median(nv)
        # The noise model is of time per op: a rate record's band is the threshold and the floor.
        if mb and mn and mb > 0 and mn > 0 and compared(info[name]) is TIME_PER_OP:
            rec = info[name]
            points[name] = Point(name=name, placement=placement_class(rec), mechanism=f"{rec.suite}/{rec.mechanism}",
                                 anchor=rec.suite in floors, log_ratio=math.log(mn / mb))
    model = NoiseModel(points.values())
    rows = []
    for name, bv, nv in matched:
        if name in states:
            rows.append(states[name])
            continue
        p = points.get(name)
        metric, _, higher_better = compared(info[name])
        cis = (median_ci(info[name]), median_ci(info_new[name])) if metric == TIME_PER_OP[0] else (None, None)
        floor = spread_floor(bv, nv, *cis) if noise_pct is None else floor_band(noise_pct)
        if p:
            band = model.band(p, threshold_pct, floor)
        elif metric != TIME_PER_OP[0]:
            band = floor
        else:
            band = None
        c = compare_samples(name, bv, nv, threshold_pct, alpha, band, higher_better=higher_better)
        c.placement = p.placement if p else placement_class(info[name])
        c.metric = metric
        c.floor = floor
        if metric == TIME_PER_OP[0]:
            c.base_ci, c.new_ci = cis
        rows.append(c)
    only_base = [n for n in base if n not in new]
    only_new = [n for n in new if n not in base]
    return CompareResult(rows=rows, failed=failed, only_base=only_base, only_new=only_new,
                         short=short_names(list(info.values()) + [r for n, r in info_new.items() if n not in info],
                                           reg))


def _figure(metric: str, v) -> str:
    """A compared figure: a time per op as a time, the others named ('p99 12.3 µs', 'capacity 182 k/s')."""
    if metric == CAPACITY[0]:
        return f"capacity {fmt_si(v, '/s')}"
    return fmt_time_ns(v) if metric == TIME_PER_OP[0] else f"{metric} {fmt_time_ns(v)}"


def median_ci(r):
    """The harness's bootstrap 95% CI of a benchmark's median time per op (aggregate `ci`), or None."""
    v = r.get("ci", "time_per_op_ns")
    return (v[0], v[1]) if isinstance(v, list) and len(v) == 2 and all(is_number(x) for x in v) else None


def _ci_text(ci, mid) -> str:
    """A CI as its half-width relative to the median: '±1.2%'."""
    if not ci or not mid:
        return "—"
    return f"±{(ci[1] - ci[0]) / 2 / mid * 100:.1f}%"


def _band_text(c: Comparison) -> str:
    return f"x{c.band.factor:.2f}" if c.band else "—"


def format_table(result: CompareResult, threshold_pct: float, alpha: float,
                 noise_pct: float = DEFAULT_NOISE_PCT) -> str:
    head = ("benchmark", "base", "new", "CI base/new", "change", "band", "p", "reps", "verdict")
    body = []
    for c in result.rows:
        change = f"{(c.ratio - 1) * 100:+.1f}%" if c.ratio is not None else "—"
        p = f"{c.p_value:.3g}" if c.p_value is not None else "—"
        if c.state:
            base_v, new_v = ("saturated" if c.state in ("both saturated", "no longer saturated") else "—",
                             "saturated" if c.state in ("both saturated", "became saturated") else "—")
        else:
            base_v, new_v = (_figure(c.metric, c.base_median), _figure(c.metric, c.new_median))
        ci = (f"{_ci_text(c.base_ci, c.base_median)}/{_ci_text(c.new_ci, c.new_median)}"
              if c.base_ci or c.new_ci else "—")
        body.append((result.short.get(c.name, c.name), base_v, new_v, ci, change, _band_text(c) if not c.state else "—", p,
                     f"{c.base_n}/{c.new_n}", c.verdict))
    out = text_table(head, body, right={1, 2, 3, 4, 5, 6, 7})
    if not body:
        out = ["no benchmark is present and ok in both files"]
    for name, where, st, err in result.failed:
        out.append(f"{st} in {where}: {name}" + (f" — {err}" if err else "") + " (not compared)")
    for name in result.only_base:
        out.append(f"only in BASE: {name}")
    for name in result.only_new:
        out.append(f"only in NEW: {name}")
    classes = {}
    for c in result.rows:
        if c.band is not None:
            classes.setdefault(c.placement, []).append(c.band)
    if classes:
        out.append("noise bands (NEW/BASE ratios between 1/band and band count as the same), per placement:")
        for klass, bands in sorted(classes.items()):
            lo, hi = min(b.factor for b in bands), max(b.factor for b in bands)
            widest = max(bands, key=lambda b: b.log)
            span = f"x{lo:.2f}" if f"{lo:.2f}" == f"{hi:.2f}" else f"x{lo:.2f}..x{hi:.2f}"
            out.append(f"  {klass}: {len(bands)} benchmark(s), band {span}; widest set by {widest.source}")
    counts = {}
    for c in result.rows:
        key = c.verdict.split(" (")[0]
        key = "same within noise" if key == "same" else key
        counts[key] = counts.get(key, 0) + 1
    summary = ", ".join(f"{v} {k}" for k, v in sorted(counts.items()))
    metrics = {c.metric for c in result.rows}
    what = "time per op" + ("; open-loop points: corrected p99 (the band is the noise floor)" if "p99" in metrics else "") + (
        "; capacity searches: capacity, higher is better" if CAPACITY[0] in metrics else "")
    if noise_pct is not None:
        floor = f"noise floor {noise_pct:g}% (--noise)"
    else:
        floors = [c.floor for c in result.rows if c.floor is not None]
        lo = min((f.factor for f in floors), default=1.0)
        hi = max((f.factor for f in floors), default=1.0)
        span = f"±{(lo - 1) * 100:.1f}%" if f"{lo:.3f}" == f"{hi:.3f}" else f"±{(lo - 1) * 100:.1f}..{(hi - 1) * 100:.1f}%"
        floor = (f"noise floor from the runs' own spread {span} (each benchmark: the larger side's farthest "
                 "repetition from its median or CI half-width; --noise PCT fixes it)")
    out.append(f"{len(result.rows)} compared ({summary or 'none'}); {what}, threshold {threshold_pct:g}%, "
               f"{floor}, Mann-Whitney U two-sided, alpha {alpha:g}")
    unsure = [c for c in result.rows if "(too few repetitions)" in c.verdict]
    if unsure:
        fewest = min(min(c.base_n, c.new_n) for c in unsure)
        out.append(f"TOO FEW REPETITIONS: {len(unsure)} benchmark(s) moved beyond the band, but {fewest} repetition(s) "
                   f"a side cannot reach p < {alpha:g} (they do not set the exit status); run both sides with "
                   "--repetitions 5 or more to judge them")
    became = [c for c in result.rows if c.state == "became saturated"]
    if became:
        out.append(f"SATURATED: {len(became)} open-loop point(s) saturated in NEW that were not in BASE")
    if result.regressions:
        out.append(f"REGRESSION: {len(result.regressions)} benchmark(s) significantly slower "
                   f"beyond the threshold and the noise band")
    return "\n".join(out)
