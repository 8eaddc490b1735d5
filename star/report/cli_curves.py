"""`star curves`: a training run's step metrics as a table and a plot, one panel per metric.

    star curves models/rl/metrics.jsonl --metrics reward_mean delivered tool_calls --out docs/figures/rl.png
    star curves a/metrics.jsonl b/metrics.jsonl --names grpo dapo     # runs overlaid, named
    star curves models/rl/metrics.jsonl --smooth 4                    # trailing mean of 4 steps
    star curves s0/metrics.jsonl s1/metrics.jsonl s2/metrics.jsonl --pool s0 s1 s2   # seeds: mean +- s.e.

Reads the local JSONL every trainer writes (`star sft`, `star grpo`); validation rows (`val_*`)
are curves of their own. Prints a markdown table of the chosen metrics per step.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from star.report.load import VariantResult, curves_from_steps
from star.report.plot import plot_curves, pool_curves, trailing_mean
from star.training.metrics import read_metrics

DEFAULT_METRICS = ("reward_mean", "success_rate", "entropy")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("files", nargs="+", help="metrics JSONL files (models/rl/metrics.jsonl, sft_metrics.jsonl)")
    parser.add_argument("--metrics", nargs="+", default=list(DEFAULT_METRICS), help="step-metric keys, one panel each")
    parser.add_argument("--names", nargs="*", default=None, help="a legend name per file (default: its folder)")
    parser.add_argument("--out", default=None, help="write the plot here (.png or .svg); table only without it")
    parser.add_argument("--smooth", type=int, default=1,
                        help="plot each curve as its trailing mean over this many steps (raw points faint); "
                             "the table also gets a column of it for the first metric")
    parser.add_argument("--pool", nargs="+", default=None, metavar="NAME",
                        help="runs (by legend name) that are seeds of one setting: adds their per-step mean "
                             "+- standard error over runs, as a table and a bold curve in a band (the steps "
                             "every run reached)")


def run(args: argparse.Namespace) -> int:
    if args.smooth < 1:
        print(f"star curves: --smooth must be at least 1, got {args.smooth}", file=sys.stderr)
        return 2
    names = args.names or [Path(f).parent.name or Path(f).stem for f in args.files]
    if len(names) != len(args.files):
        print(f"star curves: {len(names)} names for {len(args.files)} files", file=sys.stderr)
        return 2
    if args.pool:
        unknown = [n for n in args.pool if n not in names]
        if unknown or len(set(args.pool)) < 2:
            why = f"unknown run names {', '.join(unknown)} (runs: {', '.join(names)})" if unknown else \
                "name at least two different runs"
            print(f"star curves: --pool: {why}", file=sys.stderr)
            return 2
    runs = []
    for name, path in zip(names, args.files):
        if not Path(path).is_file():
            print(f"star curves: no such file: {path}", file=sys.stderr)
            return 2
        curves = curves_from_steps([r for r in read_metrics(path) if "step" in r])
        runs.append(VariantResult(name=name, levels={}, outcomes={}, curves=curves))
    missing = [m for m in args.metrics if not any(m in r.curves for r in runs)]
    if missing:
        print(f"star curves: no step has {', '.join(missing)} (keys: {', '.join(sorted(runs[0].curves))})",
              file=sys.stderr)
        return 2
    first = args.metrics[0]
    pooled = None
    if args.pool:
        label = "pool of " + "+".join(args.pool)
        members = set(args.pool)
        pooled = {label: pool_curves([r.curves for r in runs if r.name in members])}
    smoothed_col = [f"{first} (mean of {args.smooth})"] if args.smooth > 1 else []
    for run_ in runs:
        steps = sorted({s for m in args.metrics for s, _ in run_.curves.get(m, [])})
        values = {m: dict(run_.curves.get(m, [])) for m in args.metrics}
        points = run_.curves.get(first, [])
        smoothed = dict(zip([s for s, _ in points], trailing_mean([v for _, v in points], args.smooth)))
        header = list(args.metrics) + smoothed_col
        print(f"\n{run_.name}\n\n| step | " + " | ".join(header) + " |\n|" + "---|" * (len(header) + 1))
        for s in steps:
            cells = [f"{values[m][s]:.3g}" if s in values[m] else "" for m in args.metrics]
            if smoothed_col:
                cells.append(f"{smoothed[s]:.3g}" if s in smoothed else "")
            print(f"| {s} | " + " | ".join(cells) + " |")
    for label, curves in (pooled or {}).items():
        header = [c for m in args.metrics for c in (m, "+- s.e.")]
        print(f"\n{label}: mean over runs\n\n| step | runs | " + " | ".join(header) + " |\n|"
              + "---|" * (len(header) + 2))
        table = {m: {s: (mean, se, n) for s, mean, se, n in curves.get(m, [])} for m in args.metrics}
        for s in sorted({s for m in args.metrics for s in table[m]}):
            n = max(table[m][s][2] for m in args.metrics if s in table[m])
            cells = []
            for m in args.metrics:
                mean, se, _ = table[m].get(s, (None, None, None))
                cells += ["", ""] if mean is None else [f"{mean:.3g}", "" if se != se else f"{se:.2g}"]
            print(f"| {s} | {n} | " + " | ".join(cells) + " |")
    if args.out:
        out = Path(args.out)
        out.parent.mkdir(parents=True, exist_ok=True)
        # exact keys: each panel is one metric
        plot_curves(runs, out, panels=tuple(args.metrics), exact=True, smooth=args.smooth, pooled=pooled)
        print(f"\nwrote {out}")
    return 0
