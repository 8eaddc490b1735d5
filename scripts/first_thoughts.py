"""What a policy's first turn reads off the query: the route its first thought names ("Origin to Destination.",
the teacher's `think: route`) and the city its first call searches, against the query's two ends.

    .venv/bin/python scripts/first_thoughts.py --queries data/splits/val.jsonl --model models/sft --config params.yaml
    .venv/bin/python scripts/first_thoughts.py --queries Q --episodes metrics/eval/sft/trajectories.jsonl
    .venv/bin/python scripts/first_thoughts.py --queries Q --episodes D/run4/sft.jsonl.gz D/run5/sft.jsonl.gz --paired

--model decodes each query's first turn greedily (about a minute for 256 queries with the 5.2M model): the
copy every episode of the held-out evaluation starts from, measured before running any episode. --episodes
reads the first assistant turn of an evaluation's trajectories, or of its result files (scripts/result_files.py
keeps it). --paired: two sources of the same episodes, the second's right-route rate minus the first's.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from star.agent.turns import parse_turn  # noqa: E402
from star.jsonl import read_jsonl  # noqa: E402
from star.rollout.engine import query_id  # noqa: E402

ROUTES = ("right", "reversed", "destination only", "origin only", "neither", "no route")
_ROUTE = re.compile(r"^\s*(?P<org>[^.]+?) to (?P<dest>[^.]+?)\.")


def route_category(query: dict, turn: str | None) -> str:
    """Which of ROUTES the first thought's "Origin to Destination." names for this query."""
    parsed = parse_turn(turn or "")
    m = _ROUTE.match(parsed.think or "") if parsed.think is not None else None
    if m is None:
        return "no route"
    org, dest = m.group("org").strip(), m.group("dest").strip()
    if (org, dest) == (query["org"], query["dest"]):
        return "right"
    if (org, dest) == (query["dest"], query["org"]):
        return "reversed"
    return "destination only" if dest == query["dest"] else "origin only" if org == query["org"] else "neither"


def first_call_at_destination(query: dict, turn: str | None) -> bool:
    """Whether the first turn is a tool call whose arguments name the query's destination."""
    parsed = parse_turn(turn or "")
    return parsed.kind == "tool_call" and query["dest"] in parsed.arguments.values()


def first_turns_of(records: list[dict]) -> list[dict]:
    """(query id, sample, seed, first assistant turn) of each episode record: a trajectory or a result file's."""
    out = []
    for r in records:
        turn = r.get("first_turn")
        if turn is None:
            turn = next((m["content"] for m in r.get("messages") or () if m.get("role") == "assistant"), None)
        out.append({"query_id": str(r["query_id"]), "sample": r.get("sample", 0), "seed": r.get("seed"),
                    "turn": turn})
    return out


def eval_config(config: str | None):
    """The evaluation's settings as the eval stage runs them: the params file's `eval` section, with the prompt
    the policy was trained with (`sandbox.prompt`)."""
    from star.policy_eval.cli_eval_agent import eval_settings

    return eval_settings(config, {})


def greedy_first_turns(model_dir: str, queries: list[dict], config: str | None, db: str | None,
                       batch: int = 16) -> list[dict]:
    """Each query's first turn decoded greedily from the evaluation's opening (its prompt, its system message)."""
    from tqdm import tqdm

    from star.agent.env import TravelPlannerEnv
    from star.policy_eval.eval_agent import agent_config
    from star.rollout.backends.select import load_backend
    from star.rollout.base import SamplingParams
    from star.rollout.chat import prompt_ids
    from star.rollout.engine import turn_text
    from star.sandbox.database import load_database

    cfg = eval_config(config)
    env = TravelPlannerEnv(load_database(db), agent_config(cfg))
    backend = load_backend("transformers", model_dir, max_batch=batch, max_model_len=cfg.max_context, device="cpu")
    params = SamplingParams(temperature=0.0, max_new_tokens=cfg.max_new_tokens)
    out = []
    for start in tqdm(range(0, len(queries), batch), desc="first turns", unit="batch"):
        chunk = queries[start:start + batch]
        prompts = [prompt_ids(backend.tokenizer, env.reset(q)) for q in chunk]
        for i, (q, gen) in enumerate(zip(chunk, backend.generate(prompts, params)), start=start):
            out.append({"query_id": query_id(q, i), "sample": 0, "seed": 0,
                        "turn": turn_text(backend.tokenizer, gen.token_ids, backend.stop_token_ids)[0]})
    return out


def table(name: str, turns: list[dict], queries: dict[str, dict]) -> tuple[str, list[dict]]:
    """One markdown row of route categories, and each episode marked right or not (for --paired)."""
    cats = [route_category(queries[t["query_id"]], t["turn"]) for t in turns]
    at_dest = sum(first_call_at_destination(queries[t["query_id"]], t["turn"]) for t in turns)
    c = Counter(cats)
    row = f"| {name} | {len(turns)} | " + " | ".join(str(c.get(k, 0)) for k in ROUTES) + f" | {at_dest} |"
    return row, [{**t, "right": k == "right"} for t, k in zip(turns, cats)]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--queries", required=True, help="the evaluation's queries (.jsonl or .jsonl.gz)")
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--episodes", nargs="+", help="trajectories.jsonl or result files (.jsonl.gz)")
    src.add_argument("--model", help="a model directory: decode each query's first turn greedily")
    ap.add_argument("--config", default=None,
                    help="with --model: params file (its `eval` section, and `sandbox.prompt` as the eval stage uses)")
    ap.add_argument("--db", default=None, help="with --model: database (default $STAR_DB)")
    ap.add_argument("--limit", type=int, default=None, help="with --model: the first N queries")
    ap.add_argument("--paired", action="store_true", help="two --episodes files of the same episodes and seeds: "
                    "the second's right-route rate minus the first's, paired per query")
    args = ap.parse_args(argv)
    if args.paired and len(args.episodes or ()) != 2:
        ap.error("--paired compares exactly two --episodes files")
    listed = read_jsonl(args.queries)
    queries = {query_id(q, i): q for i, q in enumerate(listed)}
    if args.model:
        sources = [(args.model, greedy_first_turns(args.model, listed[: args.limit], args.config, args.db))]
    else:
        sources = [(path, first_turns_of(read_jsonl(path))) for path in args.episodes]
    print("| first turns | n | " + " | ".join(ROUTES) + " | first call at the destination |")
    print("|---|---|" + "---|" * (len(ROUTES) + 1))
    marked = []
    for name, turns in sources:
        missing = [t["query_id"] for t in turns if t["query_id"] not in queries]
        if missing:
            raise SystemExit(f"{name}: {len(missing)} episodes name queries not in {args.queries} ({missing[0]}, ...)")
        row, rights = table(name, turns, queries)
        print(row)
        marked.append(rights)
    if args.paired:
        from star.stats import paired_difference  # lazy: only with --paired

        d = paired_difference(*marked, lambda r: float(r["right"]), query="query_id")
        print(f"\nright route in the first thought, second - first, paired over {d['queries']} queries: "
              f"{d['before']:.3f} -> {d['after']:.3f}, {d['diff']:+.3f} +- {d['diff_se']:.3f}, z {d['z']:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
