"""Benchmark: where an evaluation's time goes. Runs `eval-agent`'s own loop (`run_policy`, the same
episodes, seeds and sampling as the stage) on a model and splits the wall time into prefill (model
forwards over more than one new token), decode (one-token forwards), sampling, tool calls and reply
parsing (the environment's step, in the engine's tool threads, so it overlaps the model's time), ending an
episode (its plan scored), the evaluation's metrics, and the rest of the main thread (the engine's Python).

    .venv/bin/python bench/eval_profile.py --model models/sft --queries data/splits/val.jsonl \
        --db data/sandbox --config params.yaml [--limit 48] [--batch 16]

Transformers backend only (vLLM does its own scheduling; its speed is `bench/rollout.py --suite vllm`).
Prints a table and, with --out, writes it as JSON.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


class Clock:
    """Seconds and calls per phase; `wrap` times a callable into a phase."""

    def __init__(self):
        self.s = defaultdict(float)
        self.n = defaultdict(int)
        self.tokens = defaultdict(int)

    def wrap(self, phase, fn, count_tokens=None):
        def timed(*a, **k):
            t = time.perf_counter()
            try:
                return fn(*a, **k)
            finally:
                name = phase(*a, **k) if callable(phase) else phase
                self.s[name] += time.perf_counter() - t
                self.n[name] += 1
                if count_tokens is not None:
                    self.tokens[name] += count_tokens(*a, **k)
        return timed


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", required=True)
    ap.add_argument("--queries", required=True)
    ap.add_argument("--db", required=True)
    ap.add_argument("--config", default="params.yaml", help="the eval section of this params file")
    ap.add_argument("--limit", type=int, default=48)
    ap.add_argument("--batch", type=int, default=None, help="episodes decoded together (default: eval.batch)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)

    import torch

    torch.set_num_threads(args.threads)
    from star.jsonl import read_jsonl
    from star.policy_eval.config import EvalConfig
    from star.policy_eval.eval_agent import metrics, run_policy
    from star.rollout import engine as engine_mod
    from star.rollout.backends import transformers as tb
    from star.sandbox.database import load_database
    from star.training.config import resolve_config

    import yaml

    cfg = resolve_config(EvalConfig, "eval", path=args.config)
    # the stage passes the sandbox's prompt (`--prompt ${sandbox.prompt}`): so does the profile here
    prompt = (yaml.safe_load(Path(args.config).read_text()).get("sandbox") or {}).get("prompt", cfg.prompt)
    cfg = EvalConfig(**{**cfg.model_dump(), "prompt": prompt, "split": Path(args.queries).stem})
    batch = args.batch or cfg.batch
    queries = read_jsonl(args.queries)[: args.limit]
    db = load_database(args.db)
    backend = tb.TransformersBackend.from_pretrained(args.model, max_batch=batch)
    clock = Clock()

    model = backend.model
    forward = model.forward
    model.forward = clock.wrap(lambda *a, **k: "prefill" if k["input_ids"].shape[1] > 1 else "decode", forward,
                               count_tokens=lambda *a, **k: int(k["input_ids"].numel()))
    tb._sample_rows = clock.wrap("sampling", tb._sample_rows)
    step = engine_mod.EpisodeStepper.execute
    engine_mod.EpisodeStepper.execute = clock.wrap("tools and parsing", step)
    engine_mod.EpisodeStepper.finish = clock.wrap("ending episodes (plan scored)", engine_mod.EpisodeStepper.finish)

    t0 = time.perf_counter()
    trajs = run_policy(backend, db, queries, cfg, max_batch=batch, progress=True)
    t_run = time.perf_counter() - t0
    t1 = time.perf_counter()
    metrics(trajs, queries, db, cfg.mode)
    t_score = time.perf_counter() - t1

    main_thread = ("prefill", "decode", "sampling", "ending episodes (plan scored)")
    rows = [(k, clock.s[k], clock.n[k], clock.tokens.get(k, 0)) for k in main_thread]
    rows += [("engine's Python (the rest of the loop)", t_run - sum(clock.s[k] for k in main_thread), 0, 0),
             ("metrics (every plan in both modes)", t_score, 1, 0),
             ("tools and parsing (tool threads, overlapped)", clock.s["tools and parsing"],
              clock.n["tools and parsing"], 0)]
    total = t_run + t_score
    policy = sum(t.n_policy_tokens for t in trajs)
    print(f"\n{len(trajs)} episodes, batch {batch}, prompt {cfg.prompt}, {total:.1f} s ({total / max(len(trajs), 1):.2f} s an episode); "
          f"{policy} policy tokens ({policy / t_run:.1f} / s over the run)")
    print("| phase | s | share | calls | tokens | tokens/s |\n|---|---|---|---|---|---|")
    for name, s, n, tok in rows:
        rate = f"{tok / s:.0f}" if tok and s else ""
        print(f"| {name} | {s:.1f} | {s / total:.1%} | {n or ''} | {tok or ''} | {rate} |")
    if args.out:
        Path(args.out).write_text(json.dumps({"episodes": len(trajs), "batch": batch, "total_s": total,
                                              "policy_tokens": policy,
                                              "phases": {n: {"s": s, "calls": c, "tokens": t} for n, s, c, t in rows}},
                                             indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
