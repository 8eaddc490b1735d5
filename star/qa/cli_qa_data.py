"""`star qa-data --out DIR`: the built-in encyclopedia and QA set over a sandbox world (corpus.jsonl, world.jsonl).

    star qa-data --out data/qa/world --world-db data/sandbox --world-questions 200   # the qa_data stage
"""

from __future__ import annotations

import argparse
import sys

from star.qa.builtin_data import write_builtin
from star.qa.config import BuiltinDataConfig


def add_arguments(parser: argparse.ArgumentParser) -> None:
    d = BuiltinDataConfig()
    parser.add_argument("--out", required=True, help="folder for corpus.jsonl and world.jsonl (a DVC output)")
    parser.add_argument("--world-db", default=d.db, help="database of the world: generated[:SEED] or a directory")
    parser.add_argument("--world-questions", type=int, default=d.questions, help="size of the `world` QA set")


def run(args: argparse.Namespace) -> int:
    from pydantic import ValidationError

    try:
        config = BuiltinDataConfig(db=args.world_db, questions=args.world_questions)
        paths = write_builtin(args.out, config)
    except (ValidationError, ValueError) as exc:  # every bad-input error of the package is a ValueError
        print(f"star qa-data: {exc}", file=sys.stderr)
        return 2
    print(f"wrote {paths['corpus']} and {paths['questions']} (world {config.db})")
    return 0
