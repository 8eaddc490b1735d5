"""`star teacher`: run a teacher on a query pool and write every trajectory, scored."""

from __future__ import annotations

import argparse

from star.agent.config import AgentConfig
from star.cli_args import literal_choices, optional_int
from star.agent.trajectory import write_trajectories
from star.evaluation.queries import load_queries
from star.rollout.backends.openai_http import OpenAIBackend
from star.rollout.base import SamplingParams, derive_seed
from star.rollout.engine import episode_list
from star.sandbox.database import load_database
from star.teachers.builtin import BuiltinTeacher
from star.teachers.config import BuiltinTeacherConfig, TeacherConfig
from star.teachers.llm import LLMTeacher


def add_arguments(parser: argparse.ArgumentParser) -> None:
    d, a = TeacherConfig(), AgentConfig()
    b = d.builtin
    parser.add_argument("--queries", required=True, help="query JSONL (or official CSV), e.g. data/splits/sft_pool.jsonl")
    parser.add_argument("--out", required=True, help="trajectory JSONL to write (atomically)")
    parser.add_argument("--samples", type=int, default=d.samples, help=f"trajectories per query (default {d.samples})")
    parser.add_argument("--db", default=None, help="database: a directory in the official layout, generated[:SEED] "
                                                   "(default $STAR_DB, else generated)")
    parser.add_argument("--teacher", choices=literal_choices(d, "kind"), default=d.kind)
    parser.add_argument("--endpoint", default=None, help="OpenAI-compatible base URL for --teacher openai")
    parser.add_argument("--model", default=None, help="model name at the endpoint")
    parser.add_argument("--api-key-env", default="OPENAI_API_KEY", help="environment variable holding the API key")
    parser.add_argument("--limit", type=optional_int, default=d.queries, help="use only the first N queries (none = all)")
    parser.add_argument("--seed", type=int, default=d.seed)
    parser.add_argument("--max-new-tokens", type=int, default=d.max_new_tokens, help="longest LLM teacher turn")
    parser.add_argument("--workers", type=int, default=d.workers, help="concurrent episodes (openai teacher)")
    parser.add_argument("--failure-rate", type=float, default=a.failure_rate)
    parser.add_argument("--style", choices=literal_choices(a, "style"), default=a.style)
    parser.add_argument("--prompt", choices=literal_choices(a, "prompt"), default=a.prompt, help="system prompt (sandbox.prompt)")
    parser.add_argument("--eval-mode", choices=literal_choices(a, "eval_mode"), default=a.eval_mode)
    parser.add_argument("--tool-budget", type=int, default=a.tool_budget)
    habits = parser.add_argument_group("builtin teacher habits (how much it wanders before answering)")
    habits.add_argument("--p-redundant", type=float, default=b.p_redundant, help="chance per call of repeating a search")
    habits.add_argument("--p-typo", type=float, default=b.p_typo, help="chance per city search of a misspelling first")
    habits.add_argument("--p-skip-distance", type=float, default=b.p_skip_distance,
                        help="chance of not checking driving/taxi for a leg")
    habits.add_argument("--p-self-route", type=float, default=b.p_self_route,
                        help="chance per road search of first searching a city to itself (no SFT loss on it)")
    habits.add_argument("--think", choices=literal_choices(b, "think"), default=b.think,
                        help="reasoned: thoughts that restate the facts; brief: a fixed phrase per action; "
                             "route: brief, the first naming the trip's origin and destination")
    habits.add_argument("--layout", choices=literal_choices(b, "layout"), default=b.layout,
                        help="lines: each tag on its own line; inline: no newline between tags")
    habits.add_argument("--max-cities", type=int, default=b.max_cities, help="most candidate cities of a state it explores")
    parser.add_argument("--tokenizer", default=None, help="tokenizer directory to count tokens (default ~4 chars/token)")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")


def run_teacher(teacher, queries: list[dict], samples: int, seed: int, workers: int = 1,
                progress: bool = True) -> list:
    """Every (query, sample) episode, in order; threads when the teacher waits on a server."""
    from concurrent.futures import ThreadPoolExecutor

    from tqdm.auto import tqdm

    jobs = episode_list(queries, samples)

    def one(job):
        q, qid, s = job
        return teacher.run(q, qid, s, seed=derive_seed(seed, qid, s))

    bar = tqdm(total=len(jobs), desc="teacher", unit="ep", disable=not progress)
    out = []
    if workers <= 1:
        for job in jobs:
            out.append(one(job))
            bar.update(1)
    else:
        with ThreadPoolExecutor(max_workers=workers) as pool:
            for t in pool.map(one, jobs):
                out.append(t)
                bar.update(1)
    bar.close()
    return out


def success_table(trajectories) -> str:
    from collections import defaultdict

    groups = defaultdict(list)
    for t in trajectories:
        groups[t.level or "unknown"].append(t)
    order = sorted(groups, key=lambda v: (["easy", "medium", "hard"].index(v) if v in ("easy", "medium", "hard") else 9))
    lines = ["| level | trajectories | success % | answered % | mean tool calls | finish reasons |", "|---|---|---|---|---|---|"]
    for lvl in order + ["all"]:
        ts = [t for g in groups.values() for t in g] if lvl == "all" else groups[lvl]
        reasons = defaultdict(int)
        for t in ts:
            reasons[t.finish_reason] += 1
        lines.append(f"| {lvl} | {len(ts)} | {100 * sum(t.success for t in ts) / len(ts):.1f} | "
                     f"{100 * sum(t.plan is not None for t in ts) / len(ts):.1f} | "
                     f"{sum(t.tool_calls for t in ts) / len(ts):.1f} | "
                     f"{', '.join(f'{k}: {v}' for k, v in sorted(reasons.items()))} |")
    return "\n".join(lines)


def run(args) -> int:
    cfg = TeacherConfig(kind=args.teacher, samples=args.samples, queries=args.limit, seed=args.seed,
                        endpoint=args.endpoint, model=args.model, workers=args.workers,
                        max_new_tokens=args.max_new_tokens,
                        builtin=BuiltinTeacherConfig(p_redundant=args.p_redundant, p_typo=args.p_typo,
                                                     p_skip_distance=args.p_skip_distance,
                                                     p_self_route=args.p_self_route,
                                                     max_cities=args.max_cities, think=args.think,
                                                     layout=args.layout))
    agent = AgentConfig(style=args.style, prompt=args.prompt, failure_rate=args.failure_rate, eval_mode=args.eval_mode,
                        tool_budget=args.tool_budget)
    queries = load_queries(args.queries)
    if cfg.queries is not None:
        queries = queries[: cfg.queries]
    db = load_database(args.db)
    tokenizer = None
    if args.tokenizer:
        from transformers import AutoTokenizer
        tokenizer = AutoTokenizer.from_pretrained(args.tokenizer)
    if cfg.kind == "builtin":
        teacher, workers = BuiltinTeacher(db, agent, cfg.builtin, tokenizer=tokenizer), 1
    else:
        if not cfg.endpoint or not cfg.model:
            raise SystemExit("star teacher: --teacher openai needs --endpoint and --model")
        backend = OpenAIBackend(cfg.endpoint, cfg.model, tokenizer=tokenizer, api_key_env=args.api_key_env)
        teacher = LLMTeacher(backend, db, agent, SamplingParams(temperature=cfg.temperature, top_p=cfg.top_p,
                                                                max_new_tokens=cfg.max_new_tokens))
        workers = cfg.workers
    trajectories = run_teacher(teacher, queries, cfg.samples, cfg.seed, workers, progress=not args.quiet)
    n = write_trajectories(args.out, trajectories)
    print(f"wrote {n} trajectories to {args.out} (teacher {cfg.kind}, db {db.source}, evaluator {agent.eval_mode})")
    print(success_table(trajectories))
    return 0
