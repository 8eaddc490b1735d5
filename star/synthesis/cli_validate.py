"""`star validate pool.jsonl [--db …] --out validated.jsonl`: re-certify every query, drop failures, run GX."""

from __future__ import annotations

import argparse
import sys

from star.jsonl import write_jsonl
from star.quality.config import DEFAULTS as Q
from star.sandbox.database import load_database
from star.sandbox.rows import DatabaseError
from star.synthesis.config import SynthesisConfig
from star.synthesis.pipeline import QueryFileError, read_query_file
from star.synthesis.validate import validate_record


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("pool", help="query JSONL to validate")
    parser.add_argument("--db", default=None, help="database (default $STAR_DB, else the generated world)")
    parser.add_argument("--out", required=True, help="validated JSONL (written atomically)")
    parser.add_argument("--ratio", default=SynthesisConfig().ratio,
                        help="expected level ratio for the data-quality suite ('none' skips)")
    parser.add_argument("--tolerance", type=float, default=Q.tolerance, help="allowed deviation of a level's share")
    parser.add_argument("--report", default=None, help="write the drop list and the suite report as JSON here")
    parser.add_argument("--no-gx", action="store_true", help="skip the Great Expectations suite")


def run(args) -> int:
    import json
    from collections import Counter
    from pathlib import Path

    from tqdm import tqdm

    try:
        db = load_database(args.db)
        records = read_query_file(args.pool)
    except (QueryFileError, DatabaseError) as exc:
        print(f"star validate: {exc}", file=sys.stderr)
        return 2
    kept, dropped = [], []
    for i, rec in enumerate(tqdm(records, desc="validate", unit="q"), 1):
        good, problems = validate_record(db, rec, where=f"{args.pool}:{i}")
        if problems:
            dropped.append({"line": i, "id": rec.get("id"), "problems": problems})
        else:
            kept.append(good)
    write_jsonl(args.out, kept)
    reasons = Counter(p.split(":")[0] for d in dropped for p in d["problems"][:1])
    print(f"validated {len(records)} queries: kept {len(kept)}, dropped {len(dropped)}"
          + (" (" + ", ".join(f"{k} {v}" for k, v in reasons.most_common()) + ")" if dropped else ""))
    for d in dropped[:10]:
        print(f"  dropped line {d['line']} ({d['id']}): {'; '.join(d['problems'])[:300]}")
    report = None
    if not args.no_gx:
        from star.quality.runner import check_queries  # lazy: pulls pandas

        ratio = None if str(args.ratio).lower() == "none" else args.ratio
        report = check_queries(kept, None, ratio, args.tolerance)
        print(report.format())
    if args.report:
        # numbers first: DVC shows the scalar fields as metrics; the lists are for people
        summary = {"queries": len(records), "kept": len(kept), "dropped": len(dropped),
                   "kept_rate": len(kept) / len(records) if records else 0.0,
                   "dropped_by_reason": dict(reasons),
                   "levels": dict(Counter(r["level"] for r in kept)),
                   "suite_success": report.success if report else None,
                   "suite_failures": len(report.failures) if report else None,
                   "drops": dropped, "suite": report.to_dict() if report else None}
        Path(args.report).parent.mkdir(parents=True, exist_ok=True)
        Path(args.report).write_text(json.dumps(summary, indent=2, default=str), encoding="utf-8")
    return 0 if report is None or report.success else 1
