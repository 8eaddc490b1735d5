"""`star sft --data sft.jsonl --model DIR --out DIR [--config params.yaml] [--set key=value ...]`."""

from __future__ import annotations

import argparse
import json
import sys

from star.training.config import SFTConfig, resolve_config
from star.training.data import SFTDataError
from star.training.distributed import is_main
from star.training.flags import add_run_flags, relaunched
from star.training.models import read_profile
from star.training.sft import train_sft


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--data", required=True, help="SFT conversations, one {\"messages\": [...]} per line")
    parser.add_argument("--model", required=True, help="model directory to start from (star build-model)")
    parser.add_argument("--out", required=True, help="directory for the fine-tuned model, tokenizer and metrics")
    add_run_flags(parser, "sft", "SFTConfig", "data")


def run(args: argparse.Namespace) -> int:
    from pydantic import ValidationError

    try:
        code = relaunched(args)
        if code is not None:
            return code
        profile = None if args.no_small_overrides else read_profile(args.model)
        cfg = resolve_config(SFTConfig, "sft", profile, args.config, args.set)
        summary = train_sft(args.data, args.model, args.out, cfg, progress=not args.quiet,
                            checkpoints=args.checkpoints, resume=args.resume)
    except (SFTDataError, FileNotFoundError, ValueError, ValidationError) as exc:
        print(f"star sft: {exc}", file=sys.stderr)
        return 2
    if not is_main():  # one summary on stdout, from rank 0
        return 0
    print(json.dumps({k: v for k, v in summary.items() if k != "config"}, indent=2))
    return 0
