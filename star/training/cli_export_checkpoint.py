"""`star export-checkpoint --checkpoint models/rl/checkpoints/step-000006 --model models/sft --out DIR`."""

from __future__ import annotations

import argparse
import sys

from star.training.export import ExportError, export_checkpoint


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--checkpoint", required=True, help="a GRPO checkpoint directory (OUT/checkpoints/step-N)")
    parser.add_argument("--model", required=True, help="the model the run started from (config, tokenizer, template)")
    parser.add_argument("--out", required=True, help="directory to write the exported model to")


def run(args: argparse.Namespace) -> int:
    try:
        path = export_checkpoint(args.checkpoint, args.model, args.out)
    except (ExportError, FileNotFoundError) as exc:
        print(f"star export-checkpoint: {exc}", file=sys.stderr)
        return 2
    print(f"exported {args.checkpoint} to {path}")
    return 0
