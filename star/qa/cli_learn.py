"""`star learn`: the learning demonstration on search-tool QA (star.qa.learn), step by step.

    star learn data --config params.yaml --out data/learn
    star sft --model models/learn/base --data data/learn/sft.jsonl --out models/learn/sft --config params.yaml
    star learn evaluate --config params.yaml --model models/learn/sft --questions data/learn/splits/heldout.jsonl --out metrics/learn/sft
    star learn grpo --config params.yaml --model models/learn/sft --queries data/learn/splits/rl.jsonl --out models/learn/rl
    star learn evaluate --config params.yaml --model models/learn/rl/selected --questions … --out metrics/learn/rl
    star learn compare --before metrics/learn/sft --after metrics/learn/rl --out metrics/learn/compare

`--config` is the resolved params file: `learn:` holds the task (LearnConfig), `rl:` the GRPO settings.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from star.jsonl import read_jsonl
from star.qa import learn
from star.qa.config import LearnConfig
from star.qa.report import plot_before_after
from star.training.config import resolve_config
from star.training.rl_config import GRPOConfig


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("step", choices=["data", "grpo", "evaluate", "compare"], help="which step to run")
    parser.add_argument("--config", default=None, help="params file with `learn:` (and `rl:` for grpo)")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="override one LearnConfig field (nested with dots: episode.temperature=0)")
    parser.add_argument("--model", help="model directory (grpo: the start; evaluate: the policy)")
    parser.add_argument("--queries", help="grpo: training questions (JSONL)")
    parser.add_argument("--questions", help="evaluate: held-out questions (JSONL); compare: the same file, for a "
                        "breakdown by question kind and a plot (compare.png)")
    parser.add_argument("--name", default=None, help="evaluate: the model's name in the records")
    parser.add_argument("--before", help="compare: evaluation directory of the model before RL")
    parser.add_argument("--after", help="compare: evaluation directory of the model after RL")
    parser.add_argument("--out", required=True, help="output directory")
    parser.add_argument("--quiet", action="store_true", help="no progress bars")


def _learn_config(path: str | None, sets: list[str]):
    import yaml

    data: dict = {}
    if path:
        p = Path(path)
        if not p.is_file():
            raise FileNotFoundError(f"config file not found: {p}")
        loaded = yaml.safe_load(p.read_text()) or {}
        data = dict(loaded.get("learn") or {}) if isinstance(loaded, dict) else {}
    for item in sets:
        key, sep, raw = item.partition("=")
        if not sep:
            raise ValueError(f"--set expects key=value, got {item!r}")
        *parents, leaf = key.strip().split(".")
        node = data
        for part in parents:
            node = node.setdefault(part, {})
        node[leaf] = yaml.safe_load(raw)
    return LearnConfig(**data)


def _need(args, *names: str) -> None:
    missing = [f"--{n}" for n in names if not getattr(args, n)]
    if missing:
        raise ValueError(f"`star learn {args.step}` needs {', '.join(missing)}")


def run(args: argparse.Namespace) -> int:
    from pydantic import ValidationError

    try:
        cfg = _learn_config(args.config, args.set)
        out = Path(args.out)
        if args.step == "data":
            result = learn.write_data(cfg, out)
        elif args.step == "grpo":
            _need(args, "model", "queries")
            rl = resolve_config(GRPOConfig, "rl", None, args.config)
            summary = learn.train(args.model, read_jsonl(args.queries), out, rl, cfg, progress=not args.quiet)
            result = {k: v for k, v in summary.items() if k != "config"}
        elif args.step == "evaluate":
            _need(args, "model", "questions")
            result = learn.evaluate(args.model, read_jsonl(args.questions), out, cfg, args.name,
                                    progress=not args.quiet)
        else:
            _need(args, "before", "after")
            before = [Path(args.before) / "episodes.jsonl", Path(args.before) / "summary.json"]
            after = [Path(args.after) / "episodes.jsonl", Path(args.after) / "summary.json"]
            b_eps, a_eps = read_jsonl(before[0]), read_jsonl(after[0])
            result = learn.compare(b_eps, a_eps)
            table = learn.compare_table(result, json.loads(before[1].read_text()), json.loads(after[1].read_text()))
            kinds = learn.compare_by_kind(b_eps, a_eps, read_jsonl(args.questions)) if args.questions else None
            out.mkdir(parents=True, exist_ok=True)
            if kinds is not None:
                table += "\nBy question kind (largest gain first):\n\n" + learn.by_kind_table(kinds)
                result = {**result, "by_kind": kinds}
                plot_before_after(result, kinds, out / "compare.png")
            (out / "compare.json").write_text(json.dumps(result, indent=2) + "\n")
            (out / "table.md").write_text(table)
            print(table)
    except (FileNotFoundError, ValueError, ValidationError) as exc:
        print(f"star learn {args.step}: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(result, indent=2, default=str))
    return 0
