"""The small files that let anyone re-score an evaluation without its model: per episode the query id, sample,
seed, level, finish reason, tool calls, policy tokens, first assistant turn and plan (no token ids, no other
messages), gzipped.

    .venv/bin/python scripts/result_files.py --eval metrics/eval/sft --out docs/experiments/data/X/sft.jsonl.gz
    .venv/bin/python scripts/result_files.py --queries data/splits/val.jsonl --limit 200 \
        --out docs/experiments/data/X/queries.jsonl.gz

`star compare --before sft.jsonl.gz --after rl.jsonl.gz --queries queries.jsonl.gz ...` rebuilds the paired
table from them alone, and `star evaluate --plans rl.jsonl.gz --queries queries.jsonl.gz --reward quality`
scores one model's plans (each record carries `idx`, the query's id).
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from star.jsonl import read_jsonl  # noqa: E402
from star.policy_eval.paired import read_episodes  # noqa: E402

KEEP = ("query_id", "sample", "seed", "level", "finish_reason", "tool_calls", "n_policy_tokens", "plan")


def slim(trajectory: dict) -> dict:
    """What re-scoring needs of one episode; `idx` names its query for `star evaluate`."""
    missing = [k for k in ("query_id", "finish_reason") if k not in trajectory]
    if missing:
        raise ValueError(f"episode record lacks {missing}: not an eval-agent trajectory")
    first = next((m["content"] for m in trajectory.get("messages") or () if m.get("role") == "assistant"), None)
    # the first turn: what the episode read off the query (scripts/first_thoughts.py), before any tool answered
    return {"idx": trajectory["query_id"], **{k: trajectory.get(k) for k in KEEP}, "first_turn": first}


def write_gz(records: list[dict], out: Path) -> Path:
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.tmp")
    # mtime=0: the same records give the same bytes, so a re-export changes nothing in git
    with open(tmp, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as gz:
        gz.write("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records).encode("utf-8"))
    tmp.replace(out)
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--eval", help="an eval-agent output directory (or its trajectories.jsonl)")
    src.add_argument("--queries", help="a query file to copy (the evaluation's queries)")
    ap.add_argument("--limit", type=int, default=None, help="with --queries: the first N (the evaluation's limit)")
    ap.add_argument("--days", type=int, default=None, help="with --queries: only trips of this many days")
    ap.add_argument("--out", required=True, help="a .jsonl.gz path")
    args = ap.parse_args(argv)
    if args.eval:
        records = [slim(t) for t in read_episodes(args.eval)]
    else:
        records = [q for q in read_jsonl(args.queries) if args.days is None or q.get("days") == args.days]
        records = records[: args.limit]
    out = write_gz(records, Path(args.out))
    print(f"wrote {len(records)} records to {out} ({out.stat().st_size / 1024:.0f} KiB)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
