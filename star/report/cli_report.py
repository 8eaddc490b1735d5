"""`star report`: compare the variants of an ablation — paper-shaped tables, CIs, paired tests, plots.

    star report --ablation reward --profile smoke            # runs/smoke/reward/* (written by the flow)
    star report --ablation reward --set rl.seed=1            # runs/smoke/reward_rl.seed-1/* (a run with overrides)
    star report --variants runs/x/a runs/x/b --out reports/x # any variant directories
    star report ... --mlflow                                 # also log it on the ablation's parent run
    star report --ablation algorithm --levels dapo grpo      # the report of a `levels=[...]` run over some levels
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from star.ablations import load_ablation, overrides_label, part_name, run_dir_name, variant_slug
from star.config import DEFAULT_PROFILE, resolve
from star.params_io import PROJECT_DIR, ConfigError, parse_set
from star.report.build import build_report
from star.report.load import load_variant_dir
from star.report.metrics import ReportError
from star.report.write import log_report, write_report
from star.tracking import mlflow_logging as ml


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--ablation", help="ablation or grid name (params/ablations, params/grids)")
    parser.add_argument("--profile", default=DEFAULT_PROFILE, help="profile the ablation ran with (its runs/ folder)")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="an override the ablation ran with (its runs/ folder and the report say so), repeatable")
    parser.add_argument("--runs-dir", default=None, help="where the flow wrote the variants (default: params flow.runs_dir)")
    parser.add_argument("--variants", nargs="*", default=None,
                        help="variant directories to compare instead (each with metrics/eval/rl/trajectories.jsonl)")
    parser.add_argument("--out", default=None, help="report folder (default: RUNS/PROFILE/ABLATION/report)")
    parser.add_argument("--baseline", default=None, help="variant the paired tests compare against (default: first)")
    parser.add_argument("--bootstrap", type=int, default=None, help="bootstrap resamples (default: params report.bootstrap)")
    parser.add_argument("--levels", nargs="*", default=None,
                        help="the levels a `levels=[...]` run covered (its own report and MLflow parent)")
    parser.add_argument("--mlflow", action="store_true", help="log the report on the ablation's MLflow parent run")


def run(args: argparse.Namespace) -> int:
    try:
        overrides = {}
        if args.baseline:
            overrides["report.baseline"] = args.baseline
        if args.bootstrap:
            overrides["report.bootstrap"] = args.bootstrap
        cfg = resolve(args.profile, overrides=overrides or None)
        runs = Path(args.runs_dir or cfg["flow"].runs_dir)
        runs = runs if runs.is_absolute() else PROJECT_DIR / runs
        abl = load_ablation(args.ablation) if args.ablation else None
        if args.levels and abl is None:
            print("error: --levels needs --ablation", file=sys.stderr)
            return 2
        if args.levels:  # a run over some levels: the whole ablation's variant folders, a report of its own
            abl = abl.only(list(args.levels))
        ran_with = parse_set(args.set)
        failed: dict[str, str] = {}
        if args.variants:
            dirs = [Path(d) for d in args.variants]
            results = [load_variant_dir(d) for d in dirs]
        elif abl is not None:
            base = runs / args.profile / run_dir_name(abl.name, ran_with)
            results = []
            # a variant without a readable final evaluation is named in the report, not a reason to skip it
            for v in abl.variants():
                try:
                    results.append(load_variant_dir(base / variant_slug(v.name), v.name, v.levels))
                except ReportError as exc:
                    failed[v.name] = str(exc)
            if failed:
                print(f"warning: not compared (no readable final evaluation): {', '.join(failed)}", file=sys.stderr)
        else:
            print("error: give --ablation NAME or --variants DIR …", file=sys.stderr)
            return 2
        name = part_name(abl.name, args.levels) if abl else "comparison"
        report = build_report(results, name, abl.description if abl else "", abl.paper_table if abl else None,
                              cfg["report"], eval_set=str(cfg["eval"].split), evaluator_mode=str(cfg["eval"].mode),
                              failed=failed, profile=args.profile, overrides=overrides_label(ran_with))
        out = Path(args.out) if args.out else runs / args.profile / run_dir_name(name, ran_with) / "report"
        files = write_report(report, results, out)
    except (ConfigError, ReportError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(files["markdown"].read_text())
    print(f"report written to {out}", file=sys.stderr)
    if args.mlflow and abl is not None:
        tracker = ml.Tracker(cfg["tracking"])
        parents = tracker.find_runs(f"tags.`{ml.KIND}` = 'ablation' and tags.`{ml.ABLATION}` = '{name}' "
                                    f"and tags.`{ml.PROFILE}` = '{args.profile}'")
        parents = [p for p in parents if p.data.tags.get(ml.OVERRIDES, "") == overrides_label(ran_with)]
        if not parents:
            print(f"error: no MLflow parent run for ablation {name!r}", file=sys.stderr)
            return 1
        log_report(tracker, parents[-1].info.run_id, report, files)
        print(f"logged on MLflow run {parents[-1].info.run_id}", file=sys.stderr)
    return 0
