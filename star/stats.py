"""Statistics for comparing ablation variants evaluated on the same queries.

Success is a per-query outcome (0/1, or the mean over several samples of that query), so
variants are compared *paired* by query: a bootstrap over queries for confidence intervals,
an exact McNemar / sign-flip permutation test for the difference between two variants, Holm's
correction across comparisons, and for factorial grids the main effects and interactions with
permutation p-values that respect the pairing (labels permuted within each query).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Interval:
    estimate: float
    low: float
    high: float

    def fmt(self, scale: float = 100.0, digits: int = 1) -> str:
        return f"{self.estimate * scale:.{digits}f} [{self.low * scale:.{digits}f}, {self.high * scale:.{digits}f}]"


@dataclass(frozen=True)
class PairedTest:
    a: str
    b: str
    n: int
    difference: Interval  # mean(b) - mean(a) with a paired bootstrap interval
    p_value: float
    method: str
    a_only: int = 0       # queries that a solved and b did not (binary outcomes)
    b_only: int = 0
    p_adjusted: float | None = None


def _values(x) -> np.ndarray:
    arr = np.asarray(x, dtype=float)
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError("expected a non-empty 1-D sequence of per-query outcomes")
    if not np.all(np.isfinite(arr)):
        raise ValueError("per-query outcomes must be finite numbers")
    return arr


def bootstrap_ci(values, n_boot: int = 2000, confidence: float = 0.95, seed: int = 0) -> Interval:
    """Percentile bootstrap of the mean over queries."""
    v = _values(values)
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, v.size, size=(n_boot, v.size))
    means = v[idx].mean(axis=1)
    alpha = (1 - confidence) / 2
    return Interval(float(v.mean()), float(np.quantile(means, alpha)), float(np.quantile(means, 1 - alpha)))


def mcnemar_exact(a_only: int, b_only: int) -> float:
    """Two-sided exact McNemar p-value from the discordant pair counts (binomial, p = 1/2)."""
    n = a_only + b_only
    if n == 0:
        return 1.0
    k = min(a_only, b_only)
    tail = sum(math.comb(n, i) for i in range(k + 1)) / 2 ** n
    return float(min(1.0, 2 * tail))


def sign_flip_test(diffs, n_perm: int = 10000, seed: int = 0) -> float:
    """Two-sided paired permutation test of mean(diffs) = 0: flip the sign of each query's difference.

    Exact (all 2^m sign patterns of the m non-zero differences) when m <= 16, Monte Carlo otherwise."""
    d = _values(diffs)
    d = d[d != 0]
    if d.size == 0:
        return 1.0
    observed = abs(d.sum())
    if d.size <= 16:
        signs = np.array(list(itertools.product((-1.0, 1.0), repeat=d.size)))
        stats = np.abs(signs @ d)
        return float(np.mean(stats >= observed - 1e-12))
    rng = np.random.default_rng(seed)
    signs = rng.choice((-1.0, 1.0), size=(n_perm, d.size))
    stats = np.abs(signs @ d)
    # +1 in numerator and denominator: the observed labelling is one of the permutations.
    return float((np.sum(stats >= observed - 1e-12) + 1) / (n_perm + 1))


def paired_test(a, b, names: tuple[str, str] = ("a", "b"), n_boot: int = 2000, confidence: float = 0.95,
                n_perm: int = 10000, seed: int = 0) -> PairedTest:
    """Compare two variants on the same queries (aligned arrays). Binary outcomes: exact McNemar;
    otherwise (means over several samples per query): sign-flip permutation test."""
    va, vb = _values(a), _values(b)
    if va.shape != vb.shape:
        raise ValueError(f"paired test needs the same queries: {va.size} vs {vb.size} outcomes")
    diff = vb - va
    ci = bootstrap_ci(diff, n_boot=n_boot, confidence=confidence, seed=seed)
    binary = np.all(np.isin(va, (0.0, 1.0))) and np.all(np.isin(vb, (0.0, 1.0)))
    a_only = int(np.sum((va == 1) & (vb == 0))) if binary else 0
    b_only = int(np.sum((va == 0) & (vb == 1))) if binary else 0
    if binary:
        p, method = mcnemar_exact(a_only, b_only), "exact McNemar"
    else:
        p, method = sign_flip_test(diff, n_perm=n_perm, seed=seed), "paired sign-flip permutation"
    return PairedTest(names[0], names[1], int(va.size), ci, p, method, a_only, b_only)


def paired_difference(before: list[dict], after: list[dict], value, query: str = "id") -> dict:
    """Two evaluations of the same episodes, (query, sample) run with the same seed by both models: the
    after-minus-before `value(record)` per query (mean over its samples), its mean, its standard error
    over queries and z = mean / s.e. Raises ValueError when the episodes or their seeds differ."""
    key = lambda r: (r[query], r["sample"])  # noqa: E731
    b, a = {key(r): r for r in before}, {key(r): r for r in after}
    if set(b) != set(a):
        raise ValueError(f"the two evaluations cover different episodes "
                         f"({len(set(b) - set(a))} only before, {len(set(a) - set(b))} only after)")
    mismatched = [k for k in b if b[k]["seed"] != a[k]["seed"]]
    if mismatched:
        raise ValueError(f"{len(mismatched)} episodes ran with different seeds (e.g. {mismatched[0]})")
    diffs: dict[str, list[float]] = {}
    for k in b:
        diffs.setdefault(k[0], []).append(value(a[k]) - value(b[k]))
    d = [sum(v) / len(v) for v in diffs.values()]
    mean = sum(d) / len(d)
    se = float(np.std(d, ddof=1)) / math.sqrt(len(d)) if len(d) > 1 else float("nan")
    return {"queries": len(d), "episodes": len(b),
            "before": sum(value(r) for r in b.values()) / len(b), "after": sum(value(r) for r in a.values()) / len(a),
            "diff": mean, "diff_se": se, "z": mean / se if se and se > 0 else float("inf") * (mean > 0),
            "queries_better": sum(x > 0 for x in d), "queries_worse": sum(x < 0 for x in d)}


def holm(p_values: list[float]) -> list[float]:
    """Holm-Bonferroni adjusted p-values (same order as given)."""
    m = len(p_values)
    order = sorted(range(m), key=lambda i: p_values[i])
    adjusted = [0.0] * m
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p_values[i]))
        adjusted[i] = running
    return adjusted


def align(outcomes: dict[str, dict[str, float]]) -> tuple[list[str], dict[str, np.ndarray]]:
    """{variant: {query_id: outcome}} -> the query ids every variant has, and aligned arrays."""
    if not outcomes:
        return [], {}
    common = set.intersection(*(set(v) for v in outcomes.values()))
    ids = sorted(common)
    return ids, {name: np.array([per[q] for q in ids], dtype=float) for name, per in outcomes.items()}


# ---------------------------------------------------------------------------------- factorial

@dataclass(frozen=True)
class Effect:
    """A main effect (one factor) or a two-way interaction, with its permutation p-value."""

    term: str                        # "reward" or "reward x algorithm"
    levels: dict[str, float]         # level (or "l1 x l2" cell) -> effect (deviation from the additive model)
    sum_of_squares: float
    p_value: float


def _cell_means(y: np.ndarray, labels: np.ndarray, n_levels: list[int]) -> np.ndarray:
    """y: (queries, cells); labels: (cells, factors) level indices -> per-query cell-mean tensor mean."""
    means = np.zeros(n_levels)
    counts = np.zeros(n_levels)
    for c in range(labels.shape[0]):
        key = tuple(labels[c])
        means[key] += y[:, c].mean()
        counts[key] += 1
    if np.any(counts == 0):
        raise ValueError("factorial analysis needs every combination of levels (a full grid)")
    return means / counts


def _decompose(table: np.ndarray) -> tuple[list[np.ndarray], dict[tuple[int, int], np.ndarray]]:
    """Main effects and two-way interactions of a cell-mean table (balanced ANOVA decomposition)."""
    grand = table.mean()
    k = table.ndim
    mains = []
    for f in range(k):
        axes = tuple(a for a in range(k) if a != f)
        mains.append(table.mean(axis=axes) - grand)
    inter = {}
    for f, g in itertools.combinations(range(k), 2):
        axes = tuple(a for a in range(k) if a not in (f, g))
        marg = table.mean(axis=axes) if axes else table
        inter[(f, g)] = marg - grand - mains[f][:, None] - mains[g][None, :]
    return mains, inter


def factorial_effects(outcomes: dict[tuple[str, ...], np.ndarray], factors: list[str], n_perm: int = 2000,
                      seed: int = 0) -> list[Effect]:
    """Main effects and two-way interactions of a full factorial on the same queries.

    outcomes maps a tuple of levels (one per factor, in `factors` order) to the aligned per-query
    outcomes. A main effect's p-value permutes that factor's labels within each query and each
    combination of the other factors (exact exchangeability under its null); an interaction's
    p-value permutes the additive-model residuals within each query (approximate, Freedman-Lane style)."""
    cells = list(outcomes)
    if any(len(c) != len(factors) for c in cells):
        raise ValueError("each cell key needs one level per factor")
    level_names = [sorted({c[f] for c in cells}, key=lambda x: [c[f] for c in cells].index(x))
                   for f in range(len(factors))]
    labels = np.array([[level_names[f].index(c[f]) for f in range(len(factors))] for c in cells])
    n_levels = [len(l) for l in level_names]
    y = np.stack([_values(outcomes[c]) for c in cells], axis=1)  # (queries, cells)
    if int(np.prod(n_levels)) != len(cells):
        raise ValueError("factorial analysis needs every combination of levels exactly once (a full grid)")
    rng = np.random.default_rng(seed)
    table = _cell_means(y, labels, n_levels)
    mains, inter = _decompose(table)
    n_q = y.shape[0]

    def ss_main(t: np.ndarray, f: int) -> float:
        m = t.mean(axis=tuple(a for a in range(t.ndim) if a != f)) - t.mean()
        return float(n_q * np.prod(n_levels) / n_levels[f] * np.sum(m ** 2))

    def ss_inter(t: np.ndarray, f: int, g: int) -> float:
        return float(n_q * np.sum(_decompose(t)[1][(f, g)] ** 2) * np.prod(n_levels) / (n_levels[f] * n_levels[g]))

    effects: list[Effect] = []
    for f, name in enumerate(factors):
        observed = ss_main(table, f)
        # Strata: the other factors' level combination; within a stratum, shuffle this factor's label.
        others = [a for a in range(len(factors)) if a != f]
        strata: dict[tuple, list[int]] = {}
        for c in range(len(cells)):
            strata.setdefault(tuple(labels[c, others]), []).append(c)
        hits = 0
        for _ in range(n_perm):
            yp = y.copy()
            for members in strata.values():
                perm = np.argsort(rng.random((n_q, len(members))), axis=1)
                yp[:, members] = np.take_along_axis(y[:, members], perm, axis=1)
            hits += ss_main(_cell_means(yp, labels, n_levels), f) >= observed - 1e-12
        effects.append(Effect(name, {level_names[f][i]: float(v) for i, v in enumerate(mains[f])}, observed,
                              float((hits + 1) / (n_perm + 1))))
    # Additive fit per query (query effect + main effects) for the interaction's residual permutation.
    additive = np.zeros_like(y)
    for c in range(len(cells)):
        additive[:, c] = y.mean(axis=1) + sum(mains[f][labels[c, f]] for f in range(len(factors)))
    resid = y - additive
    for (f, g), values in inter.items():
        observed = ss_inter(table, f, g)
        hits = 0
        for _ in range(n_perm):
            perm = np.argsort(rng.random(y.shape), axis=1)
            yp = additive + np.take_along_axis(resid, perm, axis=1)
            hits += ss_inter(_cell_means(yp, labels, n_levels), f, g) >= observed - 1e-12
        cells_fx = {f"{level_names[f][i]} x {level_names[g][j]}": float(values[i, j])
                    for i in range(n_levels[f]) for j in range(n_levels[g])}
        effects.append(Effect(f"{factors[f]} x {factors[g]}", cells_fx, observed, float((hits + 1) / (n_perm + 1))))
    return effects
