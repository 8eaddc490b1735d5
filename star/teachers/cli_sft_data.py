"""`star sft-data`: rejection sampling of teacher trajectories into chat-format SFT data."""

from __future__ import annotations

import argparse
import sys

from star.agent.trajectory import iter_trajectories, write_jsonl
from star.evaluation.queries import QueryError, load_queries
from star.rollout.engine import query_id
from star.teachers.config import SFTDataConfig
from star.teachers.first_turns import first_turn_examples
from star.teachers.sft_data import report_table, select


def add_arguments(parser: argparse.ArgumentParser) -> None:
    d = SFTDataConfig()
    parser.add_argument("rollouts", help="teacher trajectory JSONL (star teacher --out)")
    parser.add_argument("--out", required=True, help="SFT JSONL to write: one {'messages': [...]} per line")
    parser.add_argument("--report", default=None, help="also write the report as JSON here")
    parser.add_argument("--tool-budget", type=int, default=d.tool_budget)
    parser.add_argument("--keep-failures", action="store_true", help="do not require success (ablation)")
    parser.add_argument("--first-turns", type=int, default=d.first_turns,
                        help="renamed openings per kept trajectory (needs --queries and --first-turns-out; "
                        "default %(default)s)")
    parser.add_argument("--first-turns-out", default=None,
                        help="JSONL of the first-turn examples (SFT's copy stage); written, empty or not, when given")
    parser.add_argument("--seed", type=int, default=d.seed, help="seed of the first-turn examples' city pairs")
    parser.add_argument("--queries", default=None, help="the queries the trajectories answer (for --first-turns)")
    parser.add_argument("--held-out", nargs="*", default=[], metavar="QUERIES",
                        help="query files whose trips no first-turn example may re-tell (validation, RL)")


def run(args) -> int:
    import json
    from pathlib import Path

    cfg = SFTDataConfig(tool_budget=args.tool_budget, require_success=not args.keep_failures,
                        first_turns=args.first_turns, seed=args.seed)
    if cfg.first_turns and not (args.queries and args.first_turns_out):
        print("star sft-data: --first-turns needs --queries (the queries the trajectories answer) and "
              "--first-turns-out (where the examples go)", file=sys.stderr)
        return 2
    kept, report = select(iter_trajectories(args.rollouts), cfg)
    extra = []
    if cfg.first_turns:
        try:
            queries = {query_id(q, i): q for i, q in enumerate(load_queries(args.queries))}
            held_out = [q for path in args.held_out for q in load_queries(path)]
            extra = first_turn_examples(kept, queries, cfg.first_turns, cfg.seed, held_out)
        except (QueryError, KeyError) as exc:
            print(f"star sft-data: {exc}", file=sys.stderr)
            return 2
    report["first_turns"] = len(extra)
    write_jsonl(args.out, kept)
    if args.first_turns_out:
        write_jsonl(args.first_turns_out, extra)
    if args.report:
        Path(args.report).parent.mkdir(parents=True, exist_ok=True)
        Path(args.report).write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(f"kept {report['kept']} of {report['total']} trajectories"
          + f" -> {args.out}" + (f"; {len(extra)} first-turn examples -> {args.first_turns_out}" if extra else ""))
    print(report_table(report))
    return 0
