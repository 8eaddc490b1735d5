"""`star curves`: a training run's step metrics as a table and a plot, one panel per metric.

    star curves models/rl/metrics.jsonl --metrics reward_mean delivered tool_calls --out docs/figures/rl.png
    star curves a/metrics.jsonl b/metrics.jsonl --names grpo dapo     # runs overlaid, named

Reads the local JSONL every trainer writes (`star sft`, `star grpo`); validation rows (`val_*`)
are curves of their own. Prints a markdown table of the chosen metrics per step.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

DEFAULT_METRICS = ("reward_mean", "success_rate", "entropy")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("files", nargs="+", help="metrics JSONL files (models/rl/metrics.jsonl, sft_metrics.jsonl)")
    parser.add_argument("--metrics", nargs="+", default=list(DEFAULT_METRICS), help="step-metric keys, one panel each")
    parser.add_argument("--names", nargs="*", default=None, help="a legend name per file (default: its folder)")
    parser.add_argument("--out", default=None, help="write the plot here (.png or .svg); table only without it")


def run(args: argparse.Namespace) -> int:
    from star.tracking.report import VariantResult, curves_from_steps, plot_curves
    from star.training.metrics import read_metrics

    names = args.names or [Path(f).parent.name or Path(f).stem for f in args.files]
    if len(names) != len(args.files):
        print(f"star curves: {len(names)} names for {len(args.files)} files", file=sys.stderr)
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
    for run_ in runs:
        steps = sorted({s for m in args.metrics for s, _ in run_.curves.get(m, [])})
        values = {m: dict(run_.curves.get(m, [])) for m in args.metrics}
        print(f"\n{run_.name}\n\n| step | " + " | ".join(args.metrics) + " |\n|" + "---|" * (len(args.metrics) + 1))
        for s in steps:
            cells = [f"{values[m][s]:.3g}" if s in values[m] else "" for m in args.metrics]
            print(f"| {s} | " + " | ".join(cells) + " |")
    if args.out:
        out = Path(args.out)
        out.parent.mkdir(parents=True, exist_ok=True)
        # exact keys: each panel is one metric
        plot_curves(runs, out, panels=tuple(args.metrics), exact=True)
        print(f"\nwrote {out}")
    return 0
