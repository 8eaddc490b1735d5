"""The flags every training CLI shares (`star sft`, `star grpo`): config, overrides, resume, launch, output."""

from __future__ import annotations

import argparse
import sys

from star.training.launch import load_launch, relaunch


def add_run_flags(parser: argparse.ArgumentParser, section: str, config_class: str, inputs: str) -> None:
    """--config, --set, --no-small-overrides, --quiet, --resume, --checkpoints, --nproc-per-node."""
    parser.add_argument("--config", default=None,
                        help=f"YAML/JSON with {config_class} fields (or a params file with `{section}:`)")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help=f"override one {config_class} field")
    parser.add_argument("--no-small-overrides", action="store_true",
                        help="do not apply the smoke/cpu profile overrides (paper defaults as they are)")
    parser.add_argument("--quiet", action="store_true", help="no progress bars")
    parser.add_argument("--resume", action="store_true",
                        help=f"continue from the newest checkpoint of this same run (model, {inputs}, config), if any")
    parser.add_argument("--checkpoints", default=None,
                        help="checkpoint folder (default OUT/checkpoints); outside OUT it survives DVC removing OUT "
                             "before a rerun, and is deleted once the run finishes")
    parser.add_argument("--nproc-per-node", type=int, default=None,
                        help="training ranks on this node (overrides the params file's launch.nproc_per_node)")


def relaunched(args: argparse.Namespace) -> int | None:
    """The exit code when this command ran on several ranks under a launcher; None when it trains here."""
    return relaunch(load_launch(args.config, args.nproc_per_node), getattr(args, "argv", None) or sys.argv[1:])
