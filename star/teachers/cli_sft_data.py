"""`star sft-data`: rejection sampling of teacher trajectories into chat-format SFT data."""

from __future__ import annotations

import argparse

from star.agent.trajectory import iter_trajectories, write_jsonl
from star.teachers.config import SFTDataConfig
from star.teachers.sft_data import report_table, select


def add_arguments(parser: argparse.ArgumentParser) -> None:
    d = SFTDataConfig()
    parser.add_argument("rollouts", help="teacher trajectory JSONL (star teacher --out)")
    parser.add_argument("--out", required=True, help="SFT JSONL to write: one {'messages': [...]} per line")
    parser.add_argument("--report", default=None, help="also write the report as JSON here")
    parser.add_argument("--tool-budget", type=int, default=d.tool_budget)
    parser.add_argument("--keep-failures", action="store_true", help="do not require success (ablation)")


def run(args) -> int:
    import json
    from pathlib import Path

    cfg = SFTDataConfig(tool_budget=args.tool_budget, require_success=not args.keep_failures)
    kept, report = select(iter_trajectories(args.rollouts), cfg)
    write_jsonl(args.out, kept)
    if args.report:
        Path(args.report).parent.mkdir(parents=True, exist_ok=True)
        Path(args.report).write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(f"kept {report['kept']} of {report['total']} trajectories -> {args.out}")
    print(report_table(report))
    return 0
