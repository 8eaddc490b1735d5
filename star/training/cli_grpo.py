"""`star grpo --model DIR --queries rl_train.jsonl --out DIR [--algorithm grpo|dapo|arpo]
[--reward NAME] [--val val.jsonl] [--resume] [--config params.yaml] [--set k=v]`."""

from __future__ import annotations

import argparse
import json
import sys

from star.cli_args import literal_choices
from star.evaluation.queries import load_queries
from star.evaluation.rewards import names
from star.sandbox.database import load_database
from star.training.config import resolve_config
from star.training.distributed import is_main
from star.training.flags import add_run_flags, relaunched
from star.training.grpo import train_grpo
from star.training.models import read_profile
from star.training.rl_config import GRPOConfig


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", required=True, help="policy to start from (usually the SFT model directory)")
    parser.add_argument("--queries", required=True, help="RL training queries (JSONL or official CSV)")
    parser.add_argument("--out", required=True, help="run directory: metrics.jsonl, checkpoints/, best/, last/")
    parser.add_argument("--val", default=None, help="validation queries for model selection (every validation.every steps)")
    parser.add_argument("--algorithm", choices=literal_choices(GRPOConfig, "algorithm"), default=None, help="overrides the config")
    parser.add_argument("--reward", choices=names(), default=None,
                        help="a reward of the registry (star.evaluation.rewards); overrides the config")
    parser.add_argument("--db", default=None, help="database spec (directory, generated, generated:SEED); default $STAR_DB")
    add_run_flags(parser, "rl", "GRPOConfig", "queries")


def run(args: argparse.Namespace) -> int:
    from pydantic import ValidationError

    try:
        code = relaunched(args)
        if code is not None:
            return code
        profile = None if args.no_small_overrides else read_profile(args.model)
        sets = list(args.set)
        if args.algorithm:
            sets.append(f"algorithm={args.algorithm}")
        if args.reward:
            sets.append(f"reward={args.reward}")
        cfg = resolve_config(GRPOConfig, "rl", profile, args.config, sets)
        queries = load_queries(args.queries)
        val = load_queries(args.val) if args.val else None
        db = load_database(args.db)
        summary = train_grpo(args.model, queries, args.out, cfg, val, db, resume=args.resume,
                             progress=not args.quiet, checkpoints=args.checkpoints)
    except (FileNotFoundError, ValueError, ValidationError) as exc:
        print(f"star grpo: {exc}", file=sys.stderr)
        return 2
    if not is_main():  # one summary on stdout, from rank 0
        return 0
    print(json.dumps({k: v for k, v in summary.items() if k != "config"}, indent=2, default=str))
    return 0
