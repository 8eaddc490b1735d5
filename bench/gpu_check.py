"""GPU acceptance run: SFT then a few GRPO steps of a small locally built Qwen2 through DeepSpeed, in bf16
on CUDA, printing step times and peak memory (scripts/gpu_check.sh runs it; `--device cpu` is a
degraded check of the same path here). The model is built on the spot: no weights to carry.

    python bench/gpu_check.py --out /tmp/gpu_check [--device cuda] [--hidden 512 --layers 8]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def _peak_gib(device: str) -> float | None:
    import torch

    return torch.cuda.max_memory_allocated() / 2**30 if device == "cuda" else None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("/tmp/star_gpu_check"))
    parser.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    parser.add_argument("--hidden", type=int, default=512)
    parser.add_argument("--layers", type=int, default=8)
    parser.add_argument("--sft-steps", type=int, default=8)
    parser.add_argument("--grpo-steps", type=int, default=3)
    parser.add_argument("--zero-stage", type=int, default=2)
    parser.add_argument("--generations", type=int, default=4, help="G: rollouts per query")
    parser.add_argument("--max-new-tokens", type=int, default=128, help="longest assistant turn in the rollouts")
    parser.add_argument("--tool-budget", type=int, default=8, help="tool calls per rollout")
    args = parser.parse_args(argv)

    import torch

    if args.device == "cuda" and not torch.cuda.is_available():
        print("gpu_check: no CUDA device (use --device cpu for the degraded check)", file=sys.stderr)
        return 2
    if args.device == "cpu":
        os.environ["CUDA_VISIBLE_DEVICES"] = ""  # DeepSpeed then picks its CPU accelerator
    from star.sandbox.database import load_database
    from star.synthesis.pipeline import synthesize
    from star.training.config import SFTConfig, SmokeModelConfig
    from star.training.rl_config import GRPOConfig
    from star.training.grpo import train_grpo
    from star.training.metrics import read_metrics
    from star.training.models import build_smoke
    from star.training.sft import train_sft
    from star.training.synthetic import scripted_conversations, write_sft_jsonl

    bf16 = args.device == "cuda"
    out = args.out
    out.mkdir(parents=True, exist_ok=True)
    db = load_database("generated:0")
    t0 = time.perf_counter()
    heads = max(4, args.hidden // 64)
    base = build_smoke(out / "base", SmokeModelConfig(hidden_size=args.hidden, num_hidden_layers=args.layers,
                                                      num_attention_heads=heads, num_key_value_heads=max(1, heads // 2),
                                                      intermediate_size=3 * args.hidden, tokenizer_docs=800), db=db)
    n_params = sum(p.numel() for p in __import__("star.training.models", fromlist=["load_model"]).load_model(base).parameters())
    report = {"device": torch.cuda.get_device_name() if bf16 else "cpu", "torch": torch.__version__,
              "params_M": round(n_params / 1e6, 1), "bf16": bf16, "zero_stage": args.zero_stage,
              "build_s": round(time.perf_counter() - t0, 1)}

    write_sft_jsonl(out / "sft.jsonl", scripted_conversations(db, 4 * args.sft_steps, seed=0, system="Plan trips.",
                                                              max_obs_lines=2))
    sft_cfg = SFTConfig(batch_size=4, micro_batch_size=2, epochs=1, max_steps=args.sft_steps, learning_rate=1e-4,
                        eval_fraction=0.0, zero_stage=args.zero_stage, bf16=bf16)
    summary = train_sft(out / "sft.jsonl", base, out / "sft", sft_cfg, progress=False)
    rows = read_metrics(out / "sft" / "sft_metrics.jsonl")
    report["sft"] = {"steps": summary["steps"], "first_loss": round(summary["first_loss"], 3),
                     "last_loss": round(summary["last_loss"], 3),
                     "step_time_s": [round(r["step_time_s"], 3) for r in rows],
                     "tokens_per_s": round(sum(r["tokens"] for r in rows[1:]) / max(sum(r["step_time_s"] for r in rows[1:]), 1e-9)),
                     "peak_mem_gib": _peak_gib(args.device)}
    if bf16:
        torch.cuda.reset_peak_memory_stats()

    queries = synthesize(db, 4, seed=0)
    rl_cfg = GRPOConfig(batch_queries=2, num_generations=args.generations, max_steps=args.grpo_steps,
                        learning_rate=1e-5, max_new_tokens=args.max_new_tokens, max_context=4096,
                        tool_call_budget=args.tool_budget, rollout_batch=8, save_every=0,
                        validation={"every": 0}, zero_stage=args.zero_stage, bf16=bf16)
    train_grpo(out / "sft", queries, out / "rl", rl_cfg, db=db, progress=False)
    rows = read_metrics(out / "rl" / "metrics.jsonl")
    report["grpo"] = {"steps": len(rows),
                      **{k: [round(r[k], 3) for r in rows] for k in ("step_time_s", "rollout_time_s", "update_time_s",
                                                                     "reward_mean")},
                      "rollout_tokens_per_s": round(sum(r["rollout_tokens_per_s"] for r in rows) / max(len(rows), 1)),
                      "peak_mem_gib": _peak_gib(args.device)}
    report["total_s"] = round(time.perf_counter() - t0, 1)
    print(json.dumps(report, indent=2))
    (out / "gpu_check.json").write_text(json.dumps(report, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
