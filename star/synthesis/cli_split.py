"""`star split validated.jsonl --out-dir DIR [--rl-size 1000 --val-size N --ratio 4:3:3 --seed S]`."""

from __future__ import annotations

import argparse
import sys

from star.jsonl import write_jsonl
from star.quality.config import DEFAULTS as Q
from star.synthesis.config import SplitConfig
from star.synthesis.pipeline import QueryFileError, read_query_file
from star.synthesis.split import SplitError, split_queries


def add_arguments(parser: argparse.ArgumentParser) -> None:
    d = SplitConfig()
    parser.add_argument("validated", help="validated query JSONL")
    parser.add_argument("--out-dir", required=True, help="folder for sft_pool.jsonl, rl_train.jsonl, val.jsonl")
    parser.add_argument("--rl-size", type=int, default=d.rl_size, help="queries in rl_train.jsonl")
    parser.add_argument("--val-size", type=int, default=d.val_size, help="queries in val.jsonl")
    parser.add_argument("--ratio", default=d.ratio, help="easy:medium:hard of rl_train and val")
    parser.add_argument("--seed", type=int, default=d.seed, help="shuffle seed")
    parser.add_argument("--tolerance", type=float, default=Q.tolerance, help="allowed deviation of a level's share")
    parser.add_argument("--no-gx", action="store_true", help="skip the Great Expectations suites")


def run(args) -> int:
    from pathlib import Path

    from tqdm import tqdm

    try:
        cfg = SplitConfig(rl_size=args.rl_size, val_size=args.val_size, ratio=args.ratio, seed=args.seed)
        records = read_query_file(args.validated)
        parts = split_queries(records, cfg)
    except (ValueError, QueryFileError, SplitError) as exc:
        print(f"star split: {exc}", file=sys.stderr)
        return 2
    out = Path(args.out_dir)
    for name in tqdm(("sft_pool", "rl_train", "val"), desc="split", unit="file"):
        write_jsonl(out / f"{name}.jsonl", parts[name])
    print(f"split {len(records)} queries into " + ", ".join(f"{k} {len(v)}" for k, v in parts.items())
          + f" under {out}")
    if args.no_gx:
        return 0
    from star.quality.runner import check_queries  # lazy: pulls pandas

    ok = True
    for name, ratio in (("val", cfg.ratio), ("rl_train", cfg.ratio), ("sft_pool", None)):
        others = [r for other, rows in parts.items() if other != name for r in rows]
        report = check_queries(parts[name], others, ratio, args.tolerance)
        report.name = f"queries:{name}"
        print(report.format())
        ok &= report.success
    return 0 if ok else 1
