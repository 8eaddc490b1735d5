"""`star sft --data sft.jsonl --model DIR --out DIR [--config params.yaml] [--set key=value ...]`."""

from __future__ import annotations

import argparse
import json
import sys


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--data", required=True, help="SFT conversations, one {\"messages\": [...]} per line")
    parser.add_argument("--model", required=True, help="model directory to start from (star build-model)")
    parser.add_argument("--out", required=True, help="directory for the fine-tuned model, tokenizer and metrics")
    parser.add_argument("--config", default=None, help="YAML/JSON with SFTConfig fields (or a params file with `sft:`)")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="override one SFTConfig field")
    parser.add_argument("--no-small-overrides", action="store_true",
                        help="do not apply the smoke/cpu profile overrides (paper defaults as they are)")
    parser.add_argument("--quiet", action="store_true", help="no progress bars")
    parser.add_argument("--resume", action="store_true",
                        help="continue from the newest checkpoint of this same run (model, data, config), if any")
    parser.add_argument("--checkpoints", default=None,
                        help="checkpoint folder for sft.save_every (default OUT/checkpoints); outside OUT it survives "
                             "DVC removing OUT before a rerun, and is deleted once the run finishes")
    parser.add_argument("--nproc-per-node", type=int, default=None,
                        help="training ranks on this node (overrides the params file's launch.nproc_per_node)")


def run(args: argparse.Namespace) -> int:
    from pydantic import ValidationError

    from star.training.config import SFTConfig, resolve_config
    from star.training.data import SFTDataError
    from star.training.models import read_profile
    from star.training.sft import train_sft

    from star.training.launch import load_launch, relaunch

    try:
        code = relaunch(load_launch(args.config, args.nproc_per_node), getattr(args, "argv", None) or sys.argv[1:])
        if code is not None:
            return code
        profile = None if args.no_small_overrides else read_profile(args.model)
        cfg = resolve_config(SFTConfig, "sft", profile, args.config, args.set)
        summary = train_sft(args.data, args.model, args.out, cfg, progress=not args.quiet,
                            checkpoints=args.checkpoints, resume=args.resume)
    except (SFTDataError, FileNotFoundError, ValueError, ValidationError) as exc:
        print(f"star sft: {exc}", file=sys.stderr)
        return 2
    from star.training.distributed import is_main

    if not is_main():  # one summary on stdout, from rank 0
        return 0
    print(json.dumps({k: v for k, v in summary.items() if k != "config"}, indent=2))
    return 0
