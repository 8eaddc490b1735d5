"""`star sft --data sft.jsonl --model DIR --out DIR [--config params.yaml] [--set key=value ...]`."""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

from star.training.checkpoint import file_digest, fingerprint
from star.training.config import SFTConfig, resolve_config
from star.training.data import SFTDataError
from star.training.distributed import barrier, is_main
from star.training.flags import add_run_flags, relaunched
from star.training.models import read_profile
from star.training.sft import train_sft


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--data", required=True, help="SFT conversations, one {\"messages\": [...]} per line")
    parser.add_argument("--model", required=True, help="model directory to start from (star build-model)")
    parser.add_argument("--out", required=True, help="directory for the fine-tuned model, tokenizer and metrics")
    parser.add_argument("--first-turns", default=None,
                        help="first-turn examples (star sft-data --first-turns-out) trained on first, for "
                        "sft.first_turn_epochs epochs (the copy stage); skipped when empty or 0 epochs")
    add_run_flags(parser, "sft", "SFTConfig", "data")


def first_turns_dir(args: argparse.Namespace) -> Path:
    root = Path(args.checkpoints) if args.checkpoints else Path(args.out) / "checkpoints"
    return root.parent / f"{root.name}-first-turns"


def copy_stage(args: argparse.Namespace, cfg: SFTConfig) -> str:
    """Train on the first-turn examples first, when there are any and cfg asks for epochs of them; returns the
    model the trajectories then start from. Its model lives beside the checkpoint folder (CHECKPOINTS-first-turns,
    removed once the whole run ends), so a cut-off run that resumes skips a finished copy stage; its summary and
    curve go to OUT/first_turns/."""
    path = Path(args.first_turns) if args.first_turns else None
    if not cfg.first_turn_epochs or path is None or not path.is_file() or not path.read_text(encoding="utf-8").strip():
        return args.model
    stage_cfg = cfg.model_copy(update={"epochs": cfg.first_turn_epochs, "batch_size": cfg.first_turn_batch_size,
                                       "micro_batch_size": cfg.first_turn_batch_size, "eval_fraction": 0.0,
                                       "max_steps": None, "first_turn_epochs": 0})
    ident = fingerprint(args.model, file_digest(path), stage_cfg.model_dump(), {"save_every", "torch_threads"})
    model = first_turns_dir(args) / ident[:12]
    if not (model / "sft_summary.json").is_file():
        train_sft(path, args.model, model, stage_cfg, progress=not args.quiet,
                  checkpoints=model.with_name(model.name + "-checkpoints"), resume=args.resume)
    barrier()
    if is_main():  # the copy stage's record travels with the model the trajectories train
        keep = Path(args.out) / "first_turns"
        keep.mkdir(parents=True, exist_ok=True)
        for name in ("sft_summary.json", "sft_metrics.jsonl"):
            shutil.copy2(model / name, keep / name)
    return str(model)


def run(args: argparse.Namespace) -> int:
    from pydantic import ValidationError

    try:
        code = relaunched(args)
        if code is not None:
            return code
        profile = None if args.no_small_overrides else read_profile(args.model)
        cfg = resolve_config(SFTConfig, "sft", profile, args.config, args.set)
        start = copy_stage(args, cfg)
        summary = train_sft(args.data, start, args.out, cfg, progress=not args.quiet,
                            checkpoints=args.checkpoints, resume=args.resume)
        if start != args.model and is_main():  # finished: OUT holds the model, OUT/first_turns the copy stage
            shutil.rmtree(first_turns_dir(args), ignore_errors=True)
    except (SFTDataError, FileNotFoundError, ValueError, ValidationError) as exc:
        print(f"star sft: {exc}", file=sys.stderr)
        return 2
    if not is_main():  # one summary on stdout, from rank 0
        return 0
    print(json.dumps({k: v for k, v in summary.items() if k != "config"}, indent=2))
    return 0
