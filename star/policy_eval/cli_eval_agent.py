"""`star eval-agent`: run a policy (checkpoint directory or OpenAI-compatible endpoint) on a query set."""

from __future__ import annotations

import argparse

from star.cli_args import literal_choices, optional_int
from star.evaluation.queries import load_queries
from star.params_io import load_yaml
from star.policy_eval.config import EvalConfig
from star.policy_eval.eval_agent import agent_config, journal_key, metric_table, metrics, run_policy, write_outputs
from star.rollout.backends.openai_http import OpenAIBackend
from star.rollout.backends.select import load_backend
from star.rollout.base import SamplingParams
from star.rollout.journal import EpisodeJournal
from star.sandbox.config import SandboxConfig
from star.sandbox.database import load_database
from star.teachers.cli_teacher import run_teacher
from star.teachers.llm import LLMTeacher
from star.training.config import resolve_config

# Flags that set an EvalConfig field; left out, the field comes from --config's `eval` section, else its default.
FIELD_FLAGS = ("temperature", "top_p", "max_context", "max_new_tokens", "tool_budget", "days", "limit", "samples",
               "mode", "seed", "backend", "batch", "prompt")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    d = EvalConfig()
    parser.add_argument("--model", required=True, help="checkpoint directory, or http(s)://host:port/v1 endpoint")
    parser.add_argument("--queries", required=True, help="query JSONL / official CSV")
    parser.add_argument("--out", required=True, help="output directory (trajectories.jsonl, metrics.json, metrics.md)")
    parser.add_argument("--db", default=None, help="database spec (default $STAR_DB, else generated)")
    parser.add_argument("--config", default=None,
                        help="params file whose `eval` section sets every field below (a flag given overrides it)")
    parser.add_argument("--model-name", default=None, help="model name sent to an endpoint")
    parser.add_argument("--tokenizer", default=None, help="tokenizer dir for an endpoint (enables token-id prompts)")
    parser.add_argument("--api-key-env", default="OPENAI_API_KEY")
    parser.add_argument("--temperature", type=float, default=None, help=f"default {d.temperature}")
    parser.add_argument("--top-p", type=float, default=None, help=f"default {d.top_p}")
    parser.add_argument("--max-context", type=int, default=None, help=f"default {d.max_context}")
    parser.add_argument("--max-new-tokens", type=int, default=None, help=f"default {d.max_new_tokens}")
    parser.add_argument("--tool-budget", type=int, default=None, help=f"default {d.tool_budget}")
    parser.add_argument("--days", type=int, default=None,
                        help="only the queries of this trip length, e.g. 3 (the real validation set's 3-day trips)")
    parser.add_argument("--limit", default=None, help="first N queries only (none = all)")
    parser.add_argument("--samples", type=int, default=None, help="episodes per query (rates over all: avg@k)")
    parser.add_argument("--mode", choices=literal_choices(d, "mode"), default=None,
                        help=f"evaluator mode of the report (default {d.mode})")
    parser.add_argument("--seed", type=int, default=None, help=f"default {d.seed}")
    parser.add_argument("--prompt", choices=literal_choices(d, "prompt"), default=None,
                        help=f"system prompt, the one the policy was trained with (default: --config's "
                             f"sandbox.prompt, else {d.prompt})")
    parser.add_argument("--backend", choices=literal_choices(d, "backend"), default=None,
                        help=f"generation backend of a local model (default {d.backend}; auto: vLLM where installed)")
    parser.add_argument("--batch", type=int, default=None, help=f"episodes decoded together (default {d.batch})")
    parser.add_argument("--device", default=None, help="cpu / cuda (default: cuda when available)")
    parser.add_argument("--checkpoints", default=None,
                        help="journal folder: each finished episode is appended there (outside --out, it survives "
                             "DVC removing the outputs); removed once the outputs are written")
    parser.add_argument("--resume", action="store_true",
                        help="keep the episodes a cut-off run of the same model, queries and settings journaled")
    parser.add_argument("--quiet", action="store_true")


def trained_prompt(config: str | None) -> str | None:
    """The system prompt a params file trained its policy with (`sandbox.prompt`), unless its `eval` section
    names one itself; None for no file, or a file with neither."""
    if config is None:
        return None
    data = load_yaml(config)
    if "prompt" in (data.get("eval") or {}) or "prompt" not in (data.get("sandbox") or {}):
        return None
    return SandboxConfig(prompt=data["sandbox"]["prompt"]).prompt


def eval_settings(config: str | None, given: dict) -> EvalConfig:
    """A params file's `eval` section, then the fields given. The prompt, unless given or `eval.prompt` sets
    it, is the file's `sandbox.prompt`: a policy is evaluated with the prompt it was trained with, as the eval
    stage runs it."""
    cfg = resolve_config(EvalConfig, "eval", None, config)
    if "prompt" not in given and (prompt := trained_prompt(config)) is not None:
        given = {**given, "prompt": prompt}
    return EvalConfig(**{**cfg.model_dump(), **given})


def eval_config(args) -> EvalConfig:
    """--config's settings (`eval_settings`), then the flags given; the query file names the split."""
    from pathlib import Path

    given = {name: getattr(args, name) for name in FIELD_FLAGS if getattr(args, name) is not None}
    if "limit" in given:  # `--limit none` (DVC renders a null so) means every query, over the config's limit
        given["limit"] = optional_int(given["limit"])
    return eval_settings(args.config, {**given, "split": Path(args.queries).stem})


def run(args) -> int:
    from pathlib import Path

    cfg = eval_config(args)
    queries = load_queries(args.queries)
    if cfg.days is not None:
        lengths = sorted({q.get("days") for q in queries}, key=str)
        queries = [q for q in queries if q.get("days") == cfg.days]
        if not queries:
            raise SystemExit(f"star eval-agent: no {cfg.days}-day query in {args.queries} (trip lengths there: "
                             f"{', '.join(map(str, lengths))})")
    if cfg.limit is not None:
        queries = queries[: cfg.limit]
    db = load_database(args.db)
    progress = not args.quiet
    journal = None
    if args.checkpoints:
        journal = EpisodeJournal(args.checkpoints, journal_key(args.model, queries, args.db, cfg))
        if not args.resume:
            journal.remove()  # without --resume a run starts over
    if args.model.startswith(("http://", "https://")):
        tokenizer = None
        if args.tokenizer:
            from transformers import AutoTokenizer
            tokenizer = AutoTokenizer.from_pretrained(args.tokenizer)
        name = args.model_name or "default"
        backend = OpenAIBackend(args.model, name, tokenizer=tokenizer, api_key_env=args.api_key_env)
        if tokenizer is not None:
            trajectories = run_policy(backend, db, queries, cfg, cfg.batch, progress, agent_name=f"endpoint:{name}",
                                      journal=journal)
        else:  # chat-only API: text turns through the same env
            if journal is not None:
                raise SystemExit("star eval-agent: --checkpoints needs a local model or --tokenizer (token-id "
                                 "episodes); a chat-only endpoint runs without a journal")
            teacher = LLMTeacher(backend, db, agent_config(cfg), SamplingParams(
                temperature=cfg.temperature, top_p=cfg.top_p, max_new_tokens=cfg.max_new_tokens))
            trajectories = run_teacher(teacher, queries, cfg.samples, cfg.seed, workers=cfg.batch,
                                       progress=progress)
    else:
        if not Path(args.model).is_dir():
            raise SystemExit(f"star eval-agent: --model {args.model!r} is neither a directory nor an http(s) URL")
        import torch

        if (args.device or "cpu") == "cpu":
            torch.set_num_threads(max(1, min(torch.get_num_threads(), 2)))
        backend = load_backend(cfg.backend, args.model, max_batch=cfg.batch, device=args.device, seed=cfg.seed,
                               max_model_len=cfg.max_context + cfg.max_new_tokens, vllm=cfg.vllm)
        trajectories = run_policy(backend, db, queries, cfg, cfg.batch, progress, agent_name=args.model,
                                  journal=journal)
    m = metrics(trajectories, queries, db, cfg.mode)
    out = write_outputs(args.out, trajectories, m, cfg)
    if journal is not None:
        journal.remove()
    print(metric_table(m))
    print(f"wrote {len(trajectories)} trajectories and metrics to {out}")
    return 0
