"""Benchmark: rollouts. `--suite engine` (default): the asynchronous rollout engine, with wave and with
continuous batching, vs the lock-step baseline, same episodes, same model. `--suite backend`: our
TransformersBackend against HF `generate` on a real model (decode tok/s, prefill tok/s, a GRPO-shaped
group batch). `--suite grpo`: one GRPO step of the learn task split into rollout / scoring / update.
`--suite vllm`: vLLM (its CPU build here, `STAR_VLLM=1 bash scripts/setup.sh`) vs TransformersBackend vs HF
`generate` on (a) a GRPO group and (b) 32 rollouts of 4 prompts, then (c) one TravelPlanner GRPO step of the
`cpu` profile with each rollout backend (rollout / scoring / update split); engine start-up reported apart.

    .venv/bin/python bench/rollout.py [--episodes 32] [--batch 8] [--in-flight 16] [--threads 2]
                                      [--workload scripted|teacher] [--hidden 128 --layers 4]
    .venv/bin/python bench/rollout.py --suite backend --model models/learn/base [--prompt-tokens 661]
    .venv/bin/python bench/rollout.py --suite grpo --model models/learn/sft --params params.yaml
    .venv/bin/python bench/rollout.py --suite vllm --model models/learn/base [--skip-grpo]

A tiny Qwen2 policy (random weights, our own tokenizer) decodes every turn for real. Because a
random policy cannot follow the protocol, each episode's turns are fixed by a guide (teacher
forcing: the model decodes exactly those tokens, step by step with its KV cache, at the cost of
generating them): `scripted` gives each episode a long-tailed number of short tool calls (most
episodes short, a few long — the shape of real rollouts) before its answer; `teacher` replays
the built-in teacher's full trajectories. The engines run the same episodes with the same
seeds and the same backend (with its prefix KV cache, emptied before every run); the script
checks that they produce identical trajectories, then prints trajectories/s, turns/s, the model's
forward passes (what sets the pace on a GPU, where a pass costs about the same at any batch size),
and the speed-ups (async / lock-step target >= 1.5x), best of `--repeats` runs.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


class PassCounter:
    """Counts a model's forward passes (prefill or decode step: on a GPU each costs about the same)."""

    def __init__(self, model):
        self.passes, self._forward = 0, model.forward
        model.forward = self._count

    def _count(self, *args, **kwargs):
        self.passes += 1
        return self._forward(*args, **kwargs)


def scripted_turns(db, queries, rng):
    from star.agent.turns import render_answer, render_tool_call

    states, cities = list(db.state_cities), db.city_set
    out = {}
    for q in queries:
        n = min(int(rng.paretovariate(1.2)) - 1, 24)  # long tail: most 0-3 calls, a few 10+
        turns = []
        for j in range(n):
            if rng.random() < 0.5:
                turns.append(render_tool_call("SearchCity", {"state": rng.choice(states)}, f"Checking step {j}."))
            else:
                a, b = rng.sample(cities, 2)
                turns.append(render_tool_call("GoogleDistanceMatrix", {"origin": a, "destination": b,
                                                                       "mode": rng.choice(["taxi", "self-driving"])},
                                              f"Distance for leg {j}."))
        turns.append(render_answer("Day 1:\nCurrent City: -", "That is all I need."))
        out[q["query"]] = turns
    return out


def _best(fn, repeats: int):
    """(best wall seconds, last result) over `repeats` calls."""
    best, out = float("inf"), None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def backend_suite(args) -> int:
    """Our backend vs HF generate on the same model, float32, `--threads` threads, best of `--repeats`."""
    import torch

    from star.rollout.backends.transformers import TransformersBackend
    from star.rollout.base import SamplingParams
    from star.rollout.chat import prompt_ids
    from star.agent.prompt import system_prompt

    torch.set_num_threads(args.threads)
    if not args.model:
        print("bench: --suite backend needs --model (e.g. models/learn/base from `star build-model --profile cpu`)")
        return 2
    ours = TransformersBackend.from_pretrained(args.model, device="cpu", dtype="float32", max_batch=64,
                                               prefix_cache=0)
    model, tok = ours.model, ours.tokenizer
    G, new = args.group, args.new_tokens
    # A GRPO-shaped prompt: the TravelPlanner system prompt and a query, cut to --prompt-tokens.
    long_ids = prompt_ids(tok, [{"role": "system", "content": system_prompt("compact") * 4},
                                {"role": "user", "content": "Plan a 3-day trip from Dallas to Austin."}])
    long_ids = long_ids[-args.prompt_tokens:]
    short_ids = prompt_ids(tok, [{"role": "user", "content": "Tell me about Austin."}])
    pad = tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id

    def hf(ids: list[int], n: int, forced_len: int):
        x = torch.tensor([ids] * n)
        with torch.inference_mode():
            return model.generate(x, attention_mask=torch.ones_like(x), do_sample=True, temperature=1.0, top_p=1.0,
                                  top_k=0, max_new_tokens=forced_len, min_new_tokens=forced_len, pad_token_id=pad)

    torch.manual_seed(0)
    hf(short_ids, 2, 4)  # warm-up
    rows = []
    # Decode: batch 8 from a short prompt; both produce exactly `new` tokens (ours replays HF's sample,
    # teacher-forced: the same forward passes as sampling them).
    t_hf, out = _best(lambda: hf(short_ids, 8, new), args.repeats)
    forced = [r[len(short_ids):].tolist() for r in out]
    params = [SamplingParams(max_new_tokens=new, seed=i) for i in range(8)]
    t_ours, _ = _best(lambda: ours.generate([short_ids] * 8, params, forced=forced), args.repeats)
    rows.append(("decode, batch 8, short prompt", 8 * new / t_ours, 8 * new / t_hf, t_ours, t_hf))
    # Prefill: one forward over the long prompt, last-position logits only.
    x = torch.tensor([long_ids])
    with torch.inference_mode():
        t_pre, _ = _best(lambda: model(input_ids=x, logits_to_keep=1), args.repeats)
    # The group: G rollouts of one long prompt.
    t_hf_g, out = _best(lambda: hf(long_ids, G, new), args.repeats)
    forced = [r[len(long_ids):].tolist() for r in out]
    params = [SamplingParams(max_new_tokens=new, seed=i) for i in range(G)]
    t_g, _ = _best(lambda: ours.generate([long_ids] * G, params, forced=forced), args.repeats)
    ours.share_prefix = False
    t_g_plain, _ = _best(lambda: ours.generate([long_ids] * G, params, forced=forced), args.repeats)
    ours.share_prefix = True
    print(f"model {args.model}: float32, {args.threads} torch threads, best of {args.repeats}")
    print("| measurement | ours | HF generate | ours / HF |")
    print("|---|---|---|---|")
    r = rows[0]
    print(f"| {r[0]}: tok/s | {r[1]:.1f} | {r[2]:.1f} | {r[1] / r[2]:.2f}x |")
    print(f"| prefill {len(long_ids)} tokens (batch 1): tok/s | {len(long_ids) / t_pre:.0f} | | |")
    print(f"| group: {G} rollouts of one {len(long_ids)}-token prompt, {new} new tokens each: s "
          f"| {t_g:.1f} (shared prefix) / {t_g_plain:.1f} (per row) | {t_hf_g:.1f} | {t_hf_g / t_g:.2f}x faster |")
    return 0


def grpo_suite(args) -> int:
    """One GRPO step of the learn task (params `rl` + `learn`) from --model: its time split."""
    import json

    import torch

    from star.qa.cli_learn import _learn_config
    from star.qa.learn import read_jsonl, split_questions, train
    from star.training.config import resolve_config
    from star.training.rl_config import GRPOConfig

    torch.set_num_threads(args.threads)
    if not args.model:
        print("bench: --suite grpo needs --model (the learn SFT model, models/learn/sft)")
        return 2
    cfg = _learn_config(args.params, [])
    rl = resolve_config(GRPOConfig, "rl", None, args.params, [f"max_steps={args.steps}", "save_every=0"])
    queries = split_questions(cfg)["rl"]
    with tempfile.TemporaryDirectory() as out:
        train(args.model, queries, out, rl, cfg, progress=False)
        rows = [r for r in read_jsonl(Path(out) / "metrics.jsonl") if "rollout_time_s" in r]
    print(f"GRPO on the learn task from {args.model}: {rl.batch_queries} queries x {rl.num_generations} rollouts a step, "
          f"{args.threads} torch threads")
    print("| step | rollout s | scoring s | update s | step s | rollout tok/s | reward |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['step']} | {r['rollout_time_s']:.1f} | {r['score_time_s']:.3f} | {r['update_time_s']:.1f} "
              f"| {r['step_time_s']:.1f} | {r['rollout_tokens_per_s']:.0f} | {r['reward_mean']:.3f} |")
    print(json.dumps({k: rows[-1][k] for k in ("rollout_time_s", "score_time_s", "update_time_s")}))
    return 0


def vllm_suite(args) -> int:
    """(a) a group, (b) 32 rollouts of 4 prompts: vLLM vs ours vs HF generate, same float32 weights, each
    sequence exactly --new-tokens long (HF: min_new_tokens; ours replays HF's sample, which costs the same
    passes as sampling; vLLM: min_tokens). Best of --repeats after a warm-up of each shape. (c) one GRPO step."""
    import json

    import torch

    from star.agent.prompt import system_prompt
    from star.rollout.backends.select import vllm_available
    from star.rollout.backends.transformers import TransformersBackend
    from star.rollout.base import SamplingParams
    from star.rollout.chat import prompt_ids

    if not args.model:
        print("bench: --suite vllm needs --model (e.g. models/learn/base from `star build-model --profile cpu`)")
        return 2
    if not vllm_available():
        print("bench: --suite vllm needs vLLM (STAR_VLLM=1 bash scripts/setup.sh)")
        return 2
    torch.set_num_threads(args.threads)
    os.environ.setdefault("OMP_NUM_THREADS", str(args.threads))
    if args.only_grpo:
        return _grpo_table(args)
    from star.rollout.backends.vllm import VLLMBackend

    t0 = time.perf_counter()
    engine = VLLMBackend(args.model, dtype="float32", max_model_len=4096, cpu_kv_cache_gib=2,
                         enforce_eager=not args.compiled)
    t_start = time.perf_counter() - t0
    ours = TransformersBackend.from_pretrained(args.model, device="cpu", dtype="float32", max_batch=64, prefix_cache=0)
    model, tok = ours.model, ours.tokenizer
    pad = tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id
    new = args.new_tokens
    long_ids = prompt_ids(tok, [{"role": "system", "content": system_prompt("compact") * 4},
                                {"role": "user", "content": "Plan a 3-day trip from Dallas to Austin."}])[-args.prompt_tokens:]
    four = [prompt_ids(tok, [{"role": "system", "content": system_prompt("compact")},
                             {"role": "user", "content": f"Plan a {d}-day trip from {a} to {b}."}])
            for d, a, b in ((3, "Dallas", "Austin"), (5, "Ohio", "Texas"), (7, "Denver", "Utah"), (3, "Miami", "Tampa"))]

    def hf(prompts: list[list[int]]):
        outs = []
        distinct = list(dict.fromkeys(map(tuple, prompts)))  # in order; prompts come grouped
        for p in distinct:  # one generate call per distinct prompt
            n = sum(tuple(q) == p for q in prompts)
            x = torch.tensor([list(p)] * n)
            with torch.inference_mode():
                outs += [r[len(p):].tolist() for r in model.generate(
                    x, attention_mask=torch.ones_like(x), do_sample=True, temperature=1.0, top_p=1.0, top_k=0,
                    max_new_tokens=new, min_new_tokens=new, pad_token_id=pad)]
        return outs

    def vllm(prompts: list[list[int]]):
        from vllm.inputs import TokensPrompt

        engine.llm.reset_prefix_cache()  # each run starts cold, as ours does (prefix_cache=0)
        sps = [engine._vllm.SamplingParams(temperature=1.0, max_tokens=new, min_tokens=new, seed=i, logprobs=0)
               for i in range(len(prompts))]
        return engine.llm.generate([TokensPrompt(prompt_token_ids=list(p)) for p in prompts], sps, use_tqdm=False)

    rows = []
    for name, prompts in ((f"(a) group: {args.group} rollouts of one {len(long_ids)}-token prompt", [long_ids] * args.group),
                          (f"(b) 32 rollouts of 4 prompts (~{len(four[0])} tokens)", [p for p in four for _ in range(8)])):
        vllm(prompts[:2]), hf(prompts[:2])  # warm-up: first-call costs of each engine
        t_hf, sample = _best(lambda: hf(prompts), args.repeats)
        params = [SamplingParams(max_new_tokens=new, seed=i) for i in range(len(prompts))]
        t_ours, _ = _best(lambda: ours.generate(prompts, params, forced=sample), args.repeats)
        t_v, _ = _best(lambda: vllm(prompts), args.repeats)
        rows.append((name, len(prompts) * new, t_v, t_ours, t_hf))
    print(f"model {args.model}: float32 everywhere, {args.threads} threads, best of {args.repeats}; vLLM "
          f"{'compiled' if args.compiled else 'eager'}, engine start {t_start:.0f} s (not in the rows)")
    print("| workload | tokens | vLLM s (tok/s) | TransformersBackend s (tok/s) | HF generate s (tok/s) "
          "| vLLM / HF | vLLM / ours |")
    print("|---|---|---|---|---|---|---|")
    for name, n, tv, to, th in rows:
        print(f"| {name}, {new} new tokens each | {n} | {tv:.1f} ({n / tv:.0f}) | {to:.1f} ({n / to:.0f}) "
              f"| {th:.1f} ({n / th:.0f}) | {th / tv:.2f}x | {to / tv:.2f}x |")
    if args.skip_grpo:
        return 0
    del engine
    import gc

    gc.collect()
    return _grpo_table(args)


def _grpo_table(args) -> int:
    import json

    results = {name: _cpu_grpo_step(args, name) for name in ("vllm", "transformers")}
    print("(c) one TravelPlanner GRPO step, cpu profile (SmolLM2, "
          f"{results['vllm']['rollouts']} rollouts, seed 0):")
    print("| rollout backend | rollout s | scoring s | update s | step s | rollout tok/s | engine start s | reward |")
    print("|---|---|---|---|---|---|---|---|")
    for name, r in results.items():
        print(f"| {name} | {r['rollout_time_s']:.1f} | {r['score_time_s']:.3f} | {r['update_time_s']:.1f} "
              f"| {r['step_time_s']:.1f} | {r['rollout_tokens_per_s']:.0f} | {r['start_s']:.0f} | {r['reward_mean']:.3f} |")
    v, t = results["vllm"], results["transformers"]
    print(f"step speed-up vLLM / transformers: {t['step_time_s'] / v['step_time_s']:.2f}x "
          f"(rollout {t['rollout_time_s'] / v['rollout_time_s']:.2f}x)")
    print(json.dumps({k: {m: r[m] for m in ("rollout_time_s", "score_time_s", "update_time_s", "step_time_s")}
                      for k, r in results.items()}))
    return 0


def _cpu_grpo_step(args, backend: str) -> dict:
    """One GRPO step of the `cpu` profile's rl section on TravelPlanner queries of its world, from --model."""
    import json

    from star.config import resolve
    from star.sandbox.database import load_database
    from star.synthesis.pipeline import synthesize
    from star.training.rl_config import GRPOConfig
    from star.training.grpo import GRPOTrainer

    rl = GRPOConfig(**{**resolve("cpu").sections["rl"].model_dump(), "max_steps": 1, "save_every": 0,
                       "rollout_backend": backend, "torch_threads": args.threads})
    db = load_database(resolve("cpu").sections["sandbox"].db)
    queries = synthesize(db, rl.batch_queries, seed=args.seed)
    with tempfile.TemporaryDirectory() as out:
        t0 = time.perf_counter()
        trainer = GRPOTrainer(args.model, queries, out, rl, db=db, progress=False)
        start = time.perf_counter() - t0
        trainer.train_step()
        row = json.loads((Path(out) / "metrics.jsonl").read_text().splitlines()[-1])
        del trainer
    return {**row, "start_s": start, "rollouts": rl.batch_queries * rl.num_generations}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--suite", choices=("engine", "backend", "grpo", "vllm"), default="engine")
    ap.add_argument("--skip-grpo", action="store_true", help="vllm suite: only (a) and (b)")
    ap.add_argument("--only-grpo", action="store_true", help="vllm suite: only (c), the cpu-profile GRPO step")
    ap.add_argument("--compiled", action="store_true", help="vllm suite: torch.compile the engine (default eager)")
    ap.add_argument("--model", default=None, help="backend / grpo suites: a saved model directory")
    ap.add_argument("--params", default="params.yaml", help="grpo suite: resolved params (learn profile)")
    ap.add_argument("--steps", type=int, default=1, help="grpo suite: GRPO steps")
    ap.add_argument("--group", type=int, default=8, help="backend suite: rollouts of one prompt")
    ap.add_argument("--prompt-tokens", type=int, default=661, help="backend suite: length of the group's prompt")
    ap.add_argument("--new-tokens", type=int, default=64, help="backend suite: tokens generated per sequence")
    ap.add_argument("--episodes", type=int, default=32)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--in-flight", type=int, default=16)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--workload", choices=("scripted", "teacher"), default="scripted")
    ap.add_argument("--hidden", type=int, default=128)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--repeats", type=int, default=2, help="alternating runs per engine; the best wall time counts")
    args = ap.parse_args()
    if args.suite == "backend":
        return backend_suite(args)
    if args.suite == "vllm":
        return vllm_suite(args)
    if args.suite == "grpo":
        return grpo_suite(args)

    import torch

    torch.set_num_threads(args.threads)
    from star.teachers.builtin import BuiltinTeacher
    from star.rollout.backends.guided import GuidedBackend, ReplayGuide
    from star.rollout.backends.transformers import TransformersBackend
    from star.rollout.base import SamplingParams
    from star.rollout.config import RolloutConfig
    from star.rollout.engine import RolloutEngine
    from star.rollout.lockstep import LockstepEngine
    from star.rollout.tiny_model import build_tiny_model
    from star.sandbox.database import load_database
    from star.synthesis.pipeline import synthesize

    db = load_database("generated:0")
    queries = synthesize(db, args.episodes, seed=args.seed)
    rng = random.Random(args.seed)
    with tempfile.TemporaryDirectory() as tmp:
        build_tiny_model(tmp, hidden=args.hidden, layers=args.layers, vocab_size=1024)
        base = TransformersBackend.from_pretrained(tmp, device=args.device, max_batch=args.batch)
    if args.workload == "scripted":
        guide = ReplayGuide.from_turns(base.tokenizer, scripted_turns(db, queries, rng))
    else:
        teacher = BuiltinTeacher(db)
        guide = ReplayGuide(base.tokenizer, [teacher.run(q, str(i), 0, seed=i) for i, q in enumerate(queries)])
    rc = RolloutConfig(max_batch=args.batch, max_in_flight=args.in_flight, max_new_tokens=4096, seed=args.seed,
                       progress=False)
    # Warm-up (first-call costs), then alternate the engines `--repeats` times; each run starts
    # with an empty prefix cache so neither reuses the other's histories. Best wall time counts.
    base.generate([[1, 2, 3]], SamplingParams(max_new_tokens=2, seed=0))
    counter = PassCounter(base.model)
    engines = {"lock-step": (LockstepEngine, rc), "async": (RolloutEngine, rc.model_copy(update={"continuous": False})),
               "async, continuous batching": (RolloutEngine, rc)}
    best, results, counts = {}, {}, {}
    for _ in range(args.repeats):
        for name, (cls, cfg) in engines.items():
            base._prefix.clear()
            backend = GuidedBackend(base, guide)
            counter.passes = 0
            t0 = time.perf_counter()
            trajs = cls(backend, db, rollout_config=cfg).run(queries)
            wall = time.perf_counter() - t0
            if name not in best or wall < best[name]:
                best[name] = wall
            results[name], counts[name] = trajs, counter.passes
    rows = []
    for name in engines:
        trajs, wall = results[name], best[name]
        turns = sum(sum(m["role"] == "assistant" for m in t.messages) for t in trajs)
        toks = sum(t.n_policy_tokens for t in trajs)
        rows.append((name, len(trajs), wall, len(trajs) / wall, turns / wall, toks / wall, counts[name]))
    same = all(a.token_ids == b.token_ids and a.messages == b.messages
               for other in list(engines)[1:] for a, b in zip(results["lock-step"], results[other]))
    calls = [t.tool_calls for t in results["async"]]
    print(f"workload {args.workload}: {args.episodes} episodes, tool calls per episode mean "
          f"{sum(calls) / len(calls):.1f} (max {max(calls)}); model hidden {args.hidden} x {args.layers} layers; "
          f"batch {args.batch}, in flight {args.in_flight}, {args.threads} torch threads on {args.device}")
    print("| engine | episodes | best wall s | trajectories/s | turns/s | policy tokens/s | model passes |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r[0]} | {r[1]} | {r[2]:.1f} | {r[3]:.3f} | {r[4]:.2f} | {r[5]:.0f} | {r[6]} |")
    print(f"speed-up async / lock-step: {rows[1][3] / rows[0][3]:.2f}x (target >= 1.5x); continuous batching / "
          f"async: {rows[2][3] / rows[1][3]:.2f}x in wall time, {rows[1][6] / rows[2][6]:.2f}x fewer model passes; "
          f"identical trajectories: {'yes' if same else 'NO'}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
