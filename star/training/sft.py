"""Supervised fine-tuning on multi-turn chat data with a DeepSpeed engine.

Loss: cross-entropy on the policy's own tokens only (data.py), averaged over every such token of
the global batch (not per micro-batch), so long and short conversations weigh by their tokens.
"""

from __future__ import annotations

import json
import math
import random
import shutil
import sys
import time
from pathlib import Path

from star.training import checkpoint
from star.training import deepspeed_setup as dss
from star.training import distributed as D
from star.training.config import SFTConfig
from star.training.data import IGNORE, collate, encode_all, fit_to_length, load_conversations, micro_batches
from star.training.losses import model_device
from star.training.metrics import MetricsLogger
from star.training.models import load_model, load_tokenizer, read_profile, trainable_parameters


def token_losses(model, batch):
    """Summed CE over label tokens, and their count (next-token shift applied)."""
    import torch.nn.functional as F

    batch = {k: v.to(model_device(model)) for k, v in batch.items()}
    logits = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).logits[:, :-1]
    labels = batch["labels"][:, 1:]
    loss = F.cross_entropy(logits.float().reshape(-1, logits.size(-1)), labels.reshape(-1),
                           ignore_index=IGNORE, reduction="sum")
    return loss, int((labels != IGNORE).sum())


def mean_loss(model, examples, micro_batch_size: int, pad_id: int) -> float:
    """Token-mean loss over examples without gradients (held-out evaluation)."""
    import torch

    total, count = 0.0, 0
    with torch.no_grad():
        for s in range(0, len(examples), micro_batch_size):
            loss, n = token_losses(model, collate(examples[s:s + micro_batch_size], pad_id))
            total, count = total + float(loss), count + n
    return total / max(count, 1)


def train_sft(data: str | Path, model_dir: str | Path, out: str | Path, cfg: SFTConfig | None = None,
              progress: bool = True, checkpoints: str | Path | None = None, resume: bool = False) -> dict:
    """Fine-tune the model at `model_dir` on `data` and save model + tokenizer at `out`; returns a summary.

    Every `cfg.save_every` steps a resumable checkpoint goes to `checkpoints` (default OUT/checkpoints);
    `resume` continues from the newest one written by the same run (model, data, config). A folder
    outside `out` survives DVC removing `out` before it reruns the stage, and is deleted at the end."""
    import torch
    from tqdm.auto import tqdm

    cfg = cfg or SFTConfig()
    if cfg.torch_threads:
        torch.set_num_threads(cfg.torch_threads)
    dss.init_distributed()
    W, R = D.world(), D.rank()
    if cfg.batch_size % (cfg.micro_batch_size * W):
        raise ValueError(f"batch_size ({cfg.batch_size}) must be a multiple of micro_batch_size x ranks "
                         f"({cfg.micro_batch_size} x {W})")
    progress = progress and D.is_main()
    random.seed(cfg.seed)
    torch.manual_seed(cfg.seed)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)

    conversations = load_conversations(data)
    tokenizer = load_tokenizer(model_dir)
    model = load_model(model_dir)
    pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
    examples, fit = fit_to_length(encode_all(tokenizer, conversations, None, progress), cfg.max_length)
    if fit["dropped"] or fit["truncated"]:
        print(f"sft: {fit['truncated']} of {len(conversations)} conversations truncated to max_length "
              f"{cfg.max_length} (longest {fit['longest_tokens']} tokens), {fit['dropped']} dropped (no policy token left)")
    rng = random.Random(cfg.seed)
    order = list(range(len(examples)))
    rng.shuffle(order)
    n_eval = int(len(examples) * cfg.eval_fraction) if len(examples) > 1 else 0
    held_out = [examples[i] for i in order[:n_eval]]
    train = [examples[i] for i in order[n_eval:]]

    gas = cfg.batch_size // (cfg.micro_batch_size * W)  # per rank: W ranks together see batch_size
    steps_per_epoch = max(1, math.ceil(len(train) / cfg.batch_size))
    total_steps = steps_per_epoch * cfg.epochs
    if cfg.max_steps is not None:
        total_steps = min(total_steps, cfg.max_steps)
    eval_before = mean_loss(model, held_out, cfg.micro_batch_size, pad_id) if held_out else None

    optimizer = torch.optim.AdamW(trainable_parameters(model, cfg.train_top_layers), lr=cfg.learning_rate,
                                  weight_decay=cfg.weight_decay)
    scheduler = dss.linear_schedule(optimizer, total_steps, cfg.warmup_ratio)
    engine = dss.initialize(model, optimizer, scheduler,
                            dss.ds_config(cfg.micro_batch_size, gas, cfg.zero_stage, cfg.bf16, cfg.gradient_clipping))
    logger = MetricsLogger(out / "sft_metrics.jsonl" if D.is_main() else None, prefix="sft/")
    ckpt_dir = Path(checkpoints) if checkpoints else out / "checkpoints"
    ident = checkpoint.fingerprint(model_dir, checkpoint.file_digest(data), cfg.model_dump(),
                                   {"save_every", "keep_checkpoints", "max_steps", "epochs", "torch_threads"})
    start, losses = _resume(engine, ckpt_dir, ident, logger, out) if resume else (0, [])
    if not start and logger.path and logger.path.exists():
        logger.path.unlink()

    def keep_metrics(tag_dir: Path) -> None:  # the curve so far goes with the checkpoint
        if logger.path and logger.path.is_file() and checkpoint.outside(ckpt_dir, out):
            shutil.copy2(logger.path, tag_dir / "sft_metrics.jsonl")

    step, t_start = 0, time.perf_counter()
    bar = tqdm(total=total_steps, initial=start, desc="sft", disable=not progress)
    for epoch in range(cfg.epochs):
        batches = micro_batches([len(e) for e in train], cfg.micro_batch_size, cfg.seed, epoch, cfg.bucketing)
        # One optimiser step = gas x W micro-batches, rank r taking every W-th from r; the loss divides
        # by the label tokens of all of them (every rank holds the data, so each counts them alike).
        for g in range(0, len(batches), gas * W):
            if step >= total_steps:
                break
            if step < start:  # done before the checkpoint this run resumed from
                step += 1
                continue
            step_batches = batches[g:g + gas * W]
            n_tokens = sum(sum(int(sum(train[i].loss_mask[1:])) for i in mb) for mb in step_batches)
            group = [collate([train[i] for i in mb], pad_id) for mb in D.shard(step_batches, R, W)]
            t0, step_loss, seen, grad_norm = time.perf_counter(), 0.0, 0, None
            for k in range(gas):
                if k < len(group):
                    loss_sum, _ = token_losses(engine, group[k])
                    # x W: DeepSpeed averages gradients over ranks; the sum over ranks is the batch's gradient
                    loss = loss_sum * W / max(n_tokens, 1)
                    step_loss += float(loss.detach())
                    seen += int(group[k]["attention_mask"].sum())
                else:  # a short last group: zero-loss micro-steps keep DeepSpeed's accumulation boundary
                    loss = sum(p.sum() for p in engine.module.parameters()) * 0.0
                engine.backward(loss, scale_wrt_gas=False)
                norm = dss.step(engine)
                grad_norm = norm if norm is not None else grad_norm
            step += 1
            step_loss, seen = D.all_reduce([step_loss / W, seen])
            seen = int(seen)
            dt = time.perf_counter() - t0
            losses.append(step_loss)
            logger.log(step, {"loss": step_loss, "lr": scheduler.get_last_lr()[0], "epoch": epoch + 1,
                              "grad_norm": grad_norm if grad_norm is not None else float("nan"),
                              "tokens": seen, "tokens_per_s": seen / dt, "step_time_s": dt})
            bar.update(1)
            bar.set_postfix(loss=f"{step_loss:.3f}")
            if cfg.save_every and step % cfg.save_every == 0 and step < total_steps:
                checkpoint.save(engine, ckpt_dir, step, {"fingerprint": ident, "losses": losses},
                                keep=cfg.keep_checkpoints, before_state=keep_metrics)
    bar.close()
    eval_after = mean_loss(engine.module, held_out, cfg.micro_batch_size, pad_id) if held_out else None
    summary = {"conversations": len(conversations), "train": len(train), "held_out": len(held_out), "steps": step,
               **fit, "ranks": W,
               "first_loss": losses[0] if losses else None, "last_loss": losses[-1] if losses else None,
               "eval_loss_before": eval_before, "eval_loss_after": eval_after,
               "train_time_s": time.perf_counter() - t_start, "profile": read_profile(model_dir),
               "resumed_from_step": start or None, "config": cfg.model_dump()}
    dss.save_pretrained(engine, tokenizer, out, extra_files={
        "sft_summary.json": json.dumps(summary, indent=2) + "\n",
        **({"star_profile.json": (Path(model_dir) / "star_profile.json").read_text()}
           if (Path(model_dir) / "star_profile.json").is_file() else {})})
    if D.is_main() and checkpoint.outside(ckpt_dir, out):  # finished: the model holds it all now
        shutil.rmtree(ckpt_dir, ignore_errors=True)
    return summary


def _resume(engine, ckpt_dir: Path, ident: str, logger, out: Path) -> tuple[int, list[float]]:
    """(step, losses so far) from the newest checkpoint of this same run, else (0, [])."""
    newest = checkpoint.newest_state(ckpt_dir)
    if newest is None:
        return 0, []
    if newest.get("fingerprint") != ident:
        print(f"sft: the checkpoints in {ckpt_dir} are from another run (model, data or config differ); "
              "starting from step 0", file=sys.stderr)
        if D.is_main():
            shutil.rmtree(ckpt_dir, ignore_errors=True)
        return 0, []
    state = checkpoint.load_latest(engine, ckpt_dir)
    tag_dir = ckpt_dir / f"step-{state['step']:06d}"
    if logger.path and checkpoint.outside(ckpt_dir, out) and (tag_dir / "sft_metrics.jsonl").is_file():
        shutil.copy2(tag_dir / "sft_metrics.jsonl", logger.path)
    if logger.path:
        logger.truncate_after(state["step"])
    print(f"sft: resumed from {tag_dir} (step {state['step']})", file=sys.stderr)
    return state["step"], list(state.get("losses", []))
