"""`star` console script: one subcommand per pipeline stage.

Each subcommand lives in its own module, imported only when used (so `star tools` does not pay
for torch). A command module exposes `add_arguments(parser)` and `run(args) -> int | None`.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys

# name -> (module, one-line help). The module owns its arguments and its behaviour; it is the subcommand's
# name in its package (`eval-agent` -> star/policy_eval/cli_eval_agent.py), and a DVC stage that runs it has that
# name too (`eval_agent@rl`), so a stage is one hop from its code (tests/orchestration/test_stage_names.py).
COMMANDS: dict[str, tuple[str, str]] = {
    "tools": ("star.sandbox.cli_tools", "call one sandbox tool (or a JSONL batch of calls) and print the observation"),
    "sandbox": ("star.sandbox.cli_sandbox", "write a database (real or generated) in the official CSV layout"),
    "evaluate": ("star.evaluation.cli_evaluate", "score plans against queries (official or strict mode)"),
    "synthesize": ("star.synthesis.cli_synthesize", "sample, certify and phrase new queries"),
    "validate": ("star.synthesis.cli_validate", "re-certify a query file and run its data-quality suite"),
    "split": ("star.synthesis.cli_split", "split validated queries into SFT pool / RL train / validation"),
    "check-data": ("star.quality.cli_check_data", "run a Great Expectations suite on a data file"),
    "teacher": ("star.teachers.cli_teacher", "run a teacher agent on queries and write scored trajectories"),
    "sft-data": ("star.teachers.cli_sft_data", "rejection sampling: keep successful, well-formed trajectories"),
    "eval-agent": ("star.policy_eval.cli_eval_agent", "run a policy on a query set and write the metric table"),
    "compare": ("star.policy_eval.cli_compare", "two evaluations of the same queries, paired: by reward, check, level"),
    "build-model": ("star.training.cli_build_model", "build a local model profile (smoke / cpu) by path"),
    "sft": ("star.training.cli_sft", "supervised fine-tuning with DeepSpeed"),
    "grpo": ("star.training.cli_grpo", "GRPO / DAPO / ARPO training with DeepSpeed"),
    "export-checkpoint": ("star.training.cli_export_checkpoint", "a GRPO checkpoint (checkpoints/step-N) as a model directory"),
    "qa-data": ("star.qa.cli_qa_data", "write the built-in encyclopedia and QA set over a sandbox world"),
    "qa-index": ("star.qa.cli_qa_index", "build the search index of a QA corpus"),
    "eval-qa": ("star.qa.cli_eval_qa", "out-of-domain knowledge QA with a local search tool"),
    "learn": ("star.qa.cli_learn", "the learning demonstration: SFT -> GRPO on search-tool QA, paired before/after"),
    "curves": ("star.report.cli_curves", "a training run's step metrics (metrics.jsonl) as a table and a plot"),
    "report": ("star.report.cli_report", "compare ablation variants: tables, statistics, plots"),
    "experiments": ("star.orchestration.cli_experiments", "DVC's experiments side by side: changed params, headline metrics"),
    "serve": ("star.orchestration.cli_serve", "start a local Prefect server + worker and the MLflow UI on 127.0.0.1"),
}


def _quiet_telemetry() -> None:
    for key, value in {"DO_NOT_TRACK": "1", "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
                       "MLFLOW_DISABLE_TELEMETRY": "true", "GX_ANALYTICS_ENABLED": "false",
                       "TOKENIZERS_PARALLELISM": "false"}.items():
        os.environ.setdefault(key, value)


def cap_cuda_memory() -> None:
    """STAR_CUDA_MEMORY_FRACTION in (0, 1]: the most of the GPU this process may hold, its allocator's cache
    included, for processes that share one GPU. At the cap the allocator frees cached blocks before it
    fails: on the second lease a learn evaluation left uncapped held 114 GB of an H200 and the
    TravelPlanner evaluation beside it ran out of memory (docs/experiments/gpu-lease.md)."""
    value = os.environ.get("STAR_CUDA_MEMORY_FRACTION", "").strip()
    if not value:
        return
    try:
        fraction = float(value)
    except ValueError:
        fraction = float("nan")
    if not 0 < fraction <= 1:
        raise SystemExit(f"STAR_CUDA_MEMORY_FRACTION={value!r}: expected a fraction of the GPU in (0, 1]")
    import torch

    if torch.cuda.is_available():
        torch.cuda.set_per_process_memory_fraction(fraction)


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="star", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, (module, help_text) in COMMANDS.items():
        p = sub.add_parser(name, help=help_text, description=help_text)
        if only is None or only == name:
            try:
                importlib.import_module(module).add_arguments(p)
            except ModuleNotFoundError as exc:
                if only is not None and exc.name and module.startswith(exc.name):
                    raise SystemExit(f"star {name}: not available in this install ({exc})") from None
    return parser


def main(argv: list[str] | None = None) -> int:
    _quiet_telemetry()
    argv = list(sys.argv[1:] if argv is None else argv)
    command = next((a for a in argv if not a.startswith("-")), None)
    only = command if command in COMMANDS else None
    parser = build_parser(only)
    args = parser.parse_args(argv)
    args.argv = argv  # training CLIs re-run this command line under a multi-rank launcher
    if not args.command:
        parser.print_help()
        return 0
    module = importlib.import_module(COMMANDS[args.command][0])
    cap_cuda_memory()
    try:
        code = module.run(args)
    except KeyboardInterrupt:
        return 130
    return int(code or 0)


if __name__ == "__main__":
    sys.exit(main())
