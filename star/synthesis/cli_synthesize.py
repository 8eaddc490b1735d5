"""`star synthesize --n N --seed S [--ratio 4:3:3] [--db …] --out pool.jsonl`: sample, certify, phrase."""

from __future__ import annotations

import argparse
import sys

from star.jsonl import write_jsonl
from star.params_io import load_yaml
from star.sandbox.database import load_database
from star.sandbox.rows import DatabaseError
from star.synthesis.config import SynthesisConfig, TemplateConfig
from star.synthesis.pipeline import synthesize


def add_arguments(parser: argparse.ArgumentParser) -> None:
    d = SynthesisConfig()
    parser.add_argument("--n", type=int, required=True, help="number of certified queries to write")
    parser.add_argument("--seed", type=int, default=d.seed, help="seed of every random draw")
    parser.add_argument("--ratio", default=d.ratio, help="easy:medium:hard proportions")
    parser.add_argument("--db", default=None, help="database: official-layout dir, 'generated[:SEED]' (default $STAR_DB)")
    parser.add_argument("--out", required=True, help="output JSONL (written atomically)")
    parser.add_argument("--workers", type=int, default=d.workers, help="processes certifying in parallel")
    parser.add_argument("--llm-url", default=None, help="OpenAI-compatible /v1 endpoint for LLM back-translation")
    parser.add_argument("--llm-model", default=None, help="model name for --llm-url")
    parser.add_argument("--source", default=None, help="value of each record's `source` field")
    parser.add_argument("--config", default=None,
                        help="params file whose `synthesis:` section sets the nested knobs (sampling, solver, budget, "
                             "templates); the flags above still win for n, seed, ratio and workers")


def _section(path: str) -> dict:
    """The `synthesis:` mapping of a params file (or the whole file when it has no such key)."""
    data = load_yaml(path)
    section = data.get("synthesis", data)
    if not isinstance(section, dict):
        raise ValueError(f"{path}: `synthesis` must be a mapping")
    return section


def run(args) -> int:
    import time

    if args.n < 1:
        print("star synthesize: --n must be at least 1", file=sys.stderr)
        return 2
    try:
        base = _section(args.config) if args.config else {}
        tpl = dict(base.get("templates") or {})
        if args.llm_url:
            tpl["llm_base_url"] = args.llm_url
        if args.llm_model:
            tpl["llm_model"] = args.llm_model
        cfg = SynthesisConfig(**{**base, "n": args.n, "seed": args.seed, "ratio": args.ratio, "workers": args.workers,
                                 "templates": TemplateConfig(**tpl),
                                 **({"source": args.source} if args.source else {})})
        db = load_database(args.db)
    except (ValueError, DatabaseError) as exc:
        print(f"star synthesize: {exc}", file=sys.stderr)
        return 2
    stats: dict = {}
    t0 = time.perf_counter()
    try:
        records = synthesize(db, args.n, args.seed, args.ratio, cfg, progress=True, stats=stats)
    except RuntimeError as exc:
        print(f"star synthesize: {exc}", file=sys.stderr)
        return 1
    write_jsonl(args.out, records)
    dt = time.perf_counter() - t0
    from collections import Counter

    levels = Counter(r["level"] for r in records)
    days = Counter(r["days"] for r in records)
    print(f"wrote {len(records)} certified queries to {args.out} in {dt:.1f}s ({len(records) / dt:.1f} q/s) "
          f"from {db.source}; certified by {stats.get('certified_by')}")
    print("  levels: " + ", ".join(f"{k} {levels[k]}" for k in ("easy", "medium", "hard"))
          + " | days: " + ", ".join(f"{k} {days[k]}" for k in (3, 5, 7)))
    print("  rejected draws: " + (", ".join(f"{k} {v}" for k, v in sorted(stats.get("rejections", {}).items()))
                                  or "none"))
    return 0
