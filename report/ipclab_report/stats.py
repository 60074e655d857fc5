"""Statistics over repetitions and over latency histograms (schema v1 log-linear buckets)."""

from __future__ import annotations

from .util import is_number


def median(values):
    """Median of the finite numbers in `values`, or None when there are none."""
    xs = sorted(v for v in values if is_number(v))
    if not xs:
        return None
    n = len(xs)
    mid = n // 2
    return xs[mid] if n % 2 else (xs[mid - 1] + xs[mid]) / 2


BOOTSTRAP_RESAMPLES = 2000


def bootstrap_median_ci(values, seed: int, level=0.95, resamples=BOOTSTRAP_RESAMPLES):
    """Percentile bootstrap interval of the median of `values` (resampled with replacement,
    seeded: the same values give the same interval)."""
    import numpy as np

    x = np.asarray(values, dtype=float)
    rng = np.random.default_rng(seed)
    meds = np.median(x[rng.integers(0, len(x), size=(resamples, len(x)))], axis=1)
    lo, hi = np.quantile(meds, [(1 - level) / 2, (1 + level) / 2])
    return float(lo), float(hi)


def median_index(values):
    """Index of the repetition that carries the median (the lower middle one for an even count)."""
    order = sorted((v, i) for i, v in enumerate(values) if is_number(v))
    if not order:
        return None
    return order[(len(order) - 1) // 2][1]


def stddev(values):
    xs = [v for v in values if is_number(v)]
    if len(xs) < 2:
        return 0.0
    m = sum(xs) / len(xs)
    return (sum((x - m) ** 2 for x in xs) / (len(xs) - 1)) ** 0.5


def histogram_points(hist):
    """(values, counts) sorted by value, or None when the histogram is missing or malformed."""
    if not isinstance(hist, dict):
        return None
    values, counts = hist.get("values"), hist.get("counts")
    if not isinstance(values, list) or not isinstance(counts, list) or len(values) != len(counts):
        return None
    pairs = sorted((v, c) for v, c in zip(values, counts) if is_number(v) and is_number(c) and c > 0)
    if not pairs:
        return None
    return [p[0] for p in pairs], [p[1] for p in pairs]


def histogram_cdf(hist):
    """(values, cumulative fractions) for plotting a CDF, or None."""
    pts = histogram_points(hist)
    if pts is None:
        return None
    values, counts = pts
    total = float(sum(counts))
    acc, cdf = 0.0, []
    for c in counts:
        acc += c
        cdf.append(acc / total)
    return values, cdf


def histogram_percentile(hist, q):
    """Lowest bucket value at which the cumulative count reaches q (0..100) percent, or None."""
    pts = histogram_points(hist)
    if pts is None:
        return None
    values, counts = pts
    target = sum(counts) * q / 100.0
    acc = 0
    for v, c in zip(values, counts):
        acc += c
        if acc >= target:
            return v
    return values[-1]
