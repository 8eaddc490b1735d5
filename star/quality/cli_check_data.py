"""`star check-data KIND PATH [--against OTHER ...]`: run a data-quality suite; non-zero exit on a violation."""

from __future__ import annotations

import argparse
import json
import sys

from star.quality.config import DEFAULTS as D


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("kind", choices=["queries", "trajectories", "eval"], help="which suite to run")
    parser.add_argument("path", help="the file to check (JSONL; eval also takes a metrics JSON)")
    parser.add_argument("--against", nargs="*", default=[],
                        help="files that must not overlap with PATH (queries: other splits; trajectories: RL set)")
    parser.add_argument("--ratio", default=D.ratio, help="queries: expected easy:medium:hard ratio ('none' skips)")
    parser.add_argument("--tolerance", type=float, default=D.tolerance,
                        help="queries: allowed deviation of a level's share")
    parser.add_argument("--tool-budget", type=int, default=D.tool_budget, help="trajectories: maximum tool calls")
    parser.add_argument("--allow-failures", action="store_true",
                        help="trajectories: do not require success (e.g. all teacher rollouts, not SFT data)")
    parser.add_argument("--json", dest="json_out", help="also write the report as JSON here")


def run(args) -> int:
    from star.quality.runner import check_file  # lazy: pulls pandas

    opts = {}
    if args.kind == "queries":
        opts = {"ratio": None if str(args.ratio).lower() == "none" else args.ratio, "tolerance": args.tolerance}
    elif args.kind == "trajectories":
        opts = {"tool_budget": args.tool_budget, "require_success": not args.allow_failures}
    try:
        report = check_file(args.kind, args.path, args.against, **opts)
    except ValueError as exc:
        print(f"star check-data: {exc}", file=sys.stderr)
        return 2
    print(report.format())
    if args.json_out:
        from pathlib import Path

        Path(args.json_out).write_text(json.dumps(report.to_dict(), indent=2, default=str), encoding="utf-8")
    return 0 if report.success else 1
