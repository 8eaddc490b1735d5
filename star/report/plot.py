"""The ablation report's figures: headline metrics by variant, success, training curves."""

from __future__ import annotations

import math
import statistics
from pathlib import Path

import numpy as np

from star.plots import save_figure
from star.report.build import Report
from star.report.load import VariantResult
from star.report.metrics import CURVE_PANELS, HEADLINE


def _bars(ax, report: Report, metric: str) -> None:
    names = [r["variant"] for r in report.rows]  # rates as fractions, the unit of every other view
    y = np.array([r[metric] for r in report.rows])
    lo = y - np.array([r[f"{metric}_low"] for r in report.rows])
    hi = np.array([r[f"{metric}_high"] for r in report.rows]) - y
    ax.bar(range(len(names)), y, yerr=[lo, hi], capsize=4, color="#4C78A8", label="ours")
    ax.set_xticks(range(len(names)), names, rotation=30, ha="right", fontsize=8)
    ax.set_ylabel(HEADLINE[metric].label + (" (rate)" if HEADLINE[metric].rate else ""))
    # from 0, and a visible scale when every bar is 0 (matplotlib would centre the axis on 0)
    ax.set_ylim(0, max(ax.get_ylim()[1], 1.0 if HEADLINE[metric].rate else 0.1))


def plot_success(report: Report, path: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(max(4.0, 1.1 * len(report.rows) + 1.5), 3.6))
    _bars(ax, report, "success")
    paper_y = [r["paper_success"] for r in report.rows]
    if any(p is not None for p in paper_y):
        xs = [i for i, p in enumerate(paper_y) if p is not None]
        ax.scatter(xs, [paper_y[i] / 100 for i in xs], marker="D", color="#E45756", zorder=3, label="paper (test set)")
    ax.set_title(f"{report.ablation}: success by variant ({report.n_queries} queries)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    save_figure(fig, path)
    plt.close(fig)
    return path


def plot_metrics(report: Report, path: Path) -> Path | None:
    """One panel per headline metric with per-query values: a bar per variant with its interval."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    if not report.rows or not report.metrics:
        return None
    cols = min(4, len(report.metrics))
    nrows = math.ceil(len(report.metrics) / cols)
    width = max(3.2, 0.7 * len(report.rows) + 1.6)
    fig, axes = plt.subplots(nrows, cols, figsize=(width * cols, 3.4 * nrows), squeeze=False)
    for ax, metric in zip(axes.flat, report.metrics):
        _bars(ax, report, metric)
        ax.set_title(HEADLINE[metric].label)
    for ax in list(axes.flat)[len(report.metrics):]:
        ax.axis("off")
    fig.suptitle(f"{report.ablation}: headline metrics by variant ({report.n_queries} queries, "
                 f"{round(report.confidence * 100)}% intervals)")
    fig.tight_layout()
    save_figure(fig, path)
    plt.close(fig)
    return path


def _curve_key(curves: dict, word: str) -> str | None:
    keys = sorted((k for k in curves if word in k.lower()), key=lambda k: (("mean" not in k), len(k)))
    return keys[0] if keys else None


def trailing_mean(values: list[float], window: int) -> list[float]:
    """Mean of each value and the window-1 before it (fewer at the start): the usual smoothing of a
    noisy RL curve, which never looks ahead, so a step's point uses only what was known by then."""
    if window < 1:
        raise ValueError(f"smoothing window must be at least 1, got {window}")
    # a sum per point, not a running total, so a window of 1 returns the values exactly
    return [math.fsum(values[max(0, i + 1 - window):i + 1]) / min(i + 1, window) for i in range(len(values))]


def pool_curves(curve_sets: list[dict[str, list[tuple[int, float]]]]) -> dict[str, list[tuple[int, float, float, int]]]:
    """Runs of one setting with different seeds as one curve per key: at each step the mean over the
    runs that reached it, its standard error (sample std / sqrt(n); NaN with one run) and n."""
    by_key: dict[str, dict[int, list[float]]] = {}
    for curves in curve_sets:
        for key, points in curves.items():
            for step, value in points:
                by_key.setdefault(key, {}).setdefault(step, []).append(value)
    pooled: dict[str, list[tuple[int, float, float, int]]] = {}
    for key, steps in by_key.items():
        rows = []
        for step in sorted(steps):
            vals = steps[step]
            se = statistics.stdev(vals) / math.sqrt(len(vals)) if len(vals) > 1 else math.nan
            rows.append((step, statistics.fmean(vals), se, len(vals)))
        pooled[key] = rows
    return pooled


def plot_curves(variants: list[VariantResult], path: Path, panels: tuple[str, ...] = CURVE_PANELS,
                exact: bool = False, smooth: int = 1,
                pooled: dict[str, dict[str, list[tuple[int, float, float, int]]]] | None = None) -> Path | None:
    """Training curves overlaid, one panel per quantity (reward, success, entropy) as in Figures 7-10;
    a panel is the first metric key containing its word, or exactly that key with `exact`. With
    `smooth` > 1 each curve is its trailing mean over that many steps, the raw points drawn faint.
    `pooled` (name -> `pool_curves` output) adds each pool's per-step mean, bold, in a band of +- 1 s.e., over
    the steps every run of the pool reached."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    key_of = (lambda curves, word: word if word in curves else None) if exact else _curve_key
    present = [w for w in panels if any(key_of(v.curves, w) for v in variants)]
    if not present:
        return None
    fig, axes = plt.subplots(1, len(present), figsize=(4.2 * len(present), 3.4), squeeze=False)
    for ax, word in zip(axes[0], present):
        for n, v in enumerate(variants):
            key = key_of(v.curves, word)
            if key:
                # a run keeps its colour in every panel, even one where an earlier run has no curve
                color = f"C{n % 10}"
                steps, vals = zip(*v.curves[key])
                marker = "." if len(steps) < 30 else None
                if smooth > 1:
                    ax.plot(steps, vals, marker=marker, alpha=0.3, linewidth=0.8, color=color)
                    ax.plot(steps, trailing_mean(list(vals), smooth), color=color,
                            label=f"{v.name} (mean of {smooth})")
                else:
                    ax.plot(steps, vals, marker=marker, label=v.name, color=color)
        for i, (name, curves) in enumerate((pooled or {}).items()):
            key = key_of(curves, word)
            if key:
                # only the steps every run reached: a mean that loses a run midway would jump
                full = max(n for *_, n in curves[key])
                steps, means, ses, _ = zip(*[row for row in curves[key] if row[3] == full])
                line = ax.plot(steps, means, linewidth=2.2, color=("black", "tab:brown", "tab:gray")[i % 3],
                               label=f"{name}: mean of {full} runs, \u00b1 1 s.e.")[0]
                if full > 1:  # one run has no standard error, so no band
                    ax.fill_between(steps, [m - e for m, e in zip(means, ses)], [m + e for m, e in zip(means, ses)],
                                    color=line.get_color(), alpha=0.15, linewidth=0)
        ax.set_title(word)
        ax.set_xlabel("step")
    axes[0][0].legend(fontsize=7)
    fig.tight_layout()
    save_figure(fig, path)
    plt.close(fig)
    return path
