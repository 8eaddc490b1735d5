"""The online RL loop: GRPO, with DAPO dynamic sampling and ARPO adaptive rollout as parameters.

One step: next batch of queries → G rollouts each through the rollout engine with the current
weights → evaluator scores → reward → group-normalised advantages (overlength rollouts count in
the group statistics but carry no loss) → `num_iterations` passes of `mini_batches` optimiser
steps on the token-level clipped surrogate (old log-probs recomputed once before the updates)
→ new weights to the rollout backend. Validation every `validation.every` steps keeps the best model;
checkpoints every `save_every` steps make `--resume` continue exactly (same next batch).
"""

from __future__ import annotations

import json
import math
import os
import random
import shutil
import statistics
import sys
import time
from pathlib import Path

from star.agent.config import AgentConfig
from star.jsonl import read_jsonl
from star.evaluation.rewards import compute_reward, final_reward, resolve
from star.rollout.backends.select import resolve_backend
from star.rollout.backends.vllm import VLLMBackend
from star.rollout.base import derive_seed
from star.rollout.config import RolloutConfig
from star.rollout.engine import RolloutEngine
from star.sandbox.database import load_database
from star.training import checkpoint
from star.training import deepspeed_setup as dss
from star.training import distributed as D
from star.training.advantages import group_advantages
from star.training.arpo import arpo_group
from star.training.batch import build_samples, collate
from star.training.checkpoint import outside
from star.training.dapo import filter_groups
from star.training.losses import clipped_surrogate, first_loss_position, token_logprobs
from star.training.metrics import MetricsLogger
from star.training.models import load_model, load_tokenizer, trainable_parameters
from star.training.rl_config import GRPOConfig

SCORE_KEYS = ("cs_micro", "cs_macro", "hard_micro", "hard_macro", "success", "delivered")


class QueryStream:
    """Seeded epoch-by-epoch query order; its state (epoch, cursor) is all a resume needs."""

    def __init__(self, n: int, seed: int, epoch: int = 1, cursor: int = 0):
        if n == 0:
            raise ValueError("no training queries")
        self.n, self.seed, self.epoch, self.cursor = n, seed, epoch, cursor

    def order(self, epoch: int) -> list[int]:
        idx = list(range(self.n))
        random.Random(f"{self.seed}:{epoch}").shuffle(idx)
        return idx

    def next(self, k: int) -> tuple[list[int], int]:
        """k query indices and the (1-based) epoch of the batch; a batch never straddles two epochs."""
        if self.cursor >= self.n:
            self.epoch, self.cursor = self.epoch + 1, 0
        idx = self.order(self.epoch)[self.cursor:self.cursor + k]
        self.cursor += len(idx)
        return idx, self.epoch

    def state(self) -> dict:
        return {"epoch": self.epoch, "cursor": self.cursor}


def steps_per_epoch(n_queries: int, batch: int) -> int:
    return max(1, math.ceil(n_queries / batch))


def training_queries(queries: list[dict], cfg: GRPOConfig) -> list[dict]:
    """The queries the run trains on: all of them, or the first `cfg.train_queries`."""
    if cfg.train_queries is None:
        return list(queries)
    if cfg.train_queries > len(queries):
        raise ValueError(f"train_queries={cfg.train_queries} but only {len(queries)} RL queries were given")
    return list(queries[: cfg.train_queries])


def _score(t, key: str) -> float:
    return float(bool(t.scores.get(key))) if key in ("success", "delivered") else float(t.scores.get(key, 0.0) or 0.0)


def trajectory_row(t) -> dict:
    """What the step metrics need of one trajectory: small and picklable, gathered from every rank."""
    return {"finish_reason": t.finish_reason, "response_tokens": sum(t.policy_mask), "tokens": len(t.token_ids),
            "tool_calls": t.tool_calls, **{key: _score(t, key) for key in SCORE_KEYS},
            **({"coverage": _score(t, "coverage")} if "coverage" in t.scores else {})}


def rollout_metrics(trajectories, rewards) -> dict:
    """Step metrics over trajectories (or their `trajectory_row`s, e.g. gathered from all ranks)."""
    rows = [t if isinstance(t, dict) else trajectory_row(t) for t in trajectories]
    n = max(len(rows), 1)
    reasons = [r["finish_reason"] for r in rows]
    m = {"reward_mean": statistics.fmean(rewards) if rewards else 0.0,
         "reward_std": statistics.pstdev(rewards) if len(rewards) > 1 else 0.0,
         "response_tokens": statistics.fmean([r["response_tokens"] for r in rows]) if rows else 0.0,
         "trajectory_tokens": statistics.fmean([r["tokens"] for r in rows]) if rows else 0.0,
         "tool_calls": statistics.fmean([r["tool_calls"] for r in rows]) if rows else 0.0, "rollouts": len(rows)}
    for key in SCORE_KEYS:
        m[key if key != "success" else "success_rate"] = sum(r[key] for r in rows) / n
    if rows and all("coverage" in r for r in rows):  # TravelPlanner plans: the share of the trip's days covered
        m["coverage"] = sum(r["coverage"] for r in rows) / n
    for reason in ("answer", "format_error", "call_budget", "context_overflow"):
        m[f"finish_{reason}"] = reasons.count(reason) / n
    return m


class GRPOTrainer:
    def __init__(self, model_dir: str | Path, queries: list[dict], out: str | Path, cfg: GRPOConfig | None = None,
                 val_queries: list[dict] | None = None, db=None, progress: bool = True, env_factory=None,
                 checkpoints: str | Path | None = None):
        """`env_factory(seed) -> ProtocolEnv` trains on another task over the same protocol (knowledge QA,
        the learning probe); None: TravelPlanner over `db`. The reward is `cfg.reward` of the env's scores.
        `checkpoints`: where resumable checkpoints go (default OUT/checkpoints); a folder outside `out`
        survives a pipeline stage whose outputs are removed before it reruns (DVC), so a cut-off stage resumes."""
        import torch

        from star.rollout.backends.transformers import TransformersBackend  # lazy: pulls torch
        self.cfg = cfg = cfg or GRPOConfig()
        if cfg.torch_threads:
            torch.set_num_threads(cfg.torch_threads)
        dss.init_distributed()
        # Data parallel: every rank reads the same query stream and takes whole groups (every W-th query).
        self.world, self.rank = D.world(), D.rank()
        progress = progress and self.rank == 0
        torch.manual_seed(cfg.seed)
        random.seed(cfg.seed)
        self.model_dir, self.out, self.progress = Path(model_dir), Path(out), progress
        self.out.mkdir(parents=True, exist_ok=True)
        self.checkpoint_dir = Path(checkpoints) if checkpoints else self.out / "checkpoints"
        self.queries, self.val_queries = training_queries(queries, cfg), val_queries or []
        self.fingerprint = run_fingerprint(model_dir, self.queries, self.val_queries, cfg)
        self.env_factory = env_factory
        self.db = db if db is not None or env_factory is not None else load_database()
        self.tokenizer = load_tokenizer(model_dir)
        self.pad_id = self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None \
            else self.tokenizer.eos_token_id
        self.stream = QueryStream(len(self.queries), cfg.seed)
        per_epoch = steps_per_epoch(len(self.queries), cfg.batch_queries)
        self.total_steps = per_epoch * cfg.epochs if cfg.max_steps is None else cfg.max_steps
        model = load_model(model_dir)
        # Most micro-batches one optimiser step can see; fewer (DAPO drops) are padded with zero-loss steps.
        per_mini = math.ceil(math.ceil(cfg.batch_queries / self.world) * cfg.num_generations / cfg.mini_batches)
        self.gas = math.ceil(per_mini / cfg.micro_batch_size)
        optimizer = torch.optim.AdamW(trainable_parameters(model, cfg.train_top_layers), lr=cfg.learning_rate,
                                      weight_decay=cfg.weight_decay)
        self.scheduler = dss.linear_schedule(optimizer, self.total_steps * cfg.num_iterations * cfg.mini_batches,
                                             cfg.warmup_ratio, decay=cfg.lr_decay)
        self.engine = dss.initialize(model, optimizer, self.scheduler, dss.ds_config(
            cfg.micro_batch_size, self.gas, cfg.zero_stage, cfg.bf16, cfg.gradient_clipping))
        self.backend_name = resolve_backend(cfg.rollout_backend)
        if self.backend_name == "vllm":  # a vLLM engine beside the trainer, weights synced after each update
            # One engine per rank (tensor parallel 1), asleep while the trainer updates where the platform can.
            self.backend = VLLMBackend.from_config(str(model_dir), cfg.vllm, self.tokenizer, seed=cfg.seed,
                                                   max_model_len=cfg.max_context + cfg.max_new_tokens,
                                                   enable_sleep_mode=True, max_batch=cfg.rollout_batch)
        else:
            self.backend = TransformersBackend(load_model(model_dir).to(self.engine.device), self.tokenizer,
                                               max_batch=cfg.rollout_batch)
        self.ref_model = None
        if cfg.kl_coef > 0:
            self.ref_model = load_model(model_dir).to(self.engine.device).eval().requires_grad_(False)
        self.logger = MetricsLogger(self.out / "metrics.jsonl" if self.rank == 0 else None, prefix="rl/")
        self.step = 0
        self.best: dict | None = None

    # -- rollouts ---------------------------------------------------------------------------------
    def _engine(self, seed: int, train: bool):
        cfg = self.cfg
        agent = AgentConfig(style=cfg.observation_style, prompt=cfg.prompt, tool_budget=cfg.tool_call_budget, max_context=cfg.max_context,
                            failure_rate=cfg.env_failure_rate if train else 0.0, eval_mode=cfg.evaluator_mode)
        rollout = RolloutConfig(seed=seed, temperature=cfg.temperature if train else cfg.validation.temperature,
                                top_p=cfg.top_p if train else cfg.validation.top_p, max_new_tokens=cfg.max_new_tokens,
                                max_batch=cfg.rollout_batch, max_in_flight=2 * cfg.rollout_batch, progress=False)
        return RolloutEngine(self.backend, self.db, agent, rollout, agent_name=str(self.model_dir),
                             env_factory=self.env_factory)

    def rollout(self, queries: list[dict], seed: int):
        """Groups of G trajectories per query, with ARPO's branch bookkeeping (parents / branch points)."""
        cfg, G = self.cfg, self.cfg.num_generations
        engine = self._engine(seed, train=True)
        groups, n_branches = [], 0
        if cfg.algorithm == "arpo":
            for q in queries:
                trajs, parents, points, nb = arpo_group(
                    engine, self.engine.module, q, G, cfg.arpo.initial, cfg.arpo.entropy_threshold,
                    cfg.arpo.entropy_tokens, cfg.arpo.branches_per_step, cfg.temperature)
                groups.append((trajs, parents, points))
                n_branches += nb
        else:
            trajs = engine.run(queries, G)
            groups = [(trajs[i:i + G], [None] * G, [0] * G) for i in range(0, len(trajs), G)]
        return groups, n_branches

    # -- one step ---------------------------------------------------------------------------------
    def train_step(self) -> dict:
        cfg, G = self.cfg, self.cfg.num_generations
        t0 = time.perf_counter()
        idx, epoch = self.stream.next(cfg.batch_queries)
        reward_name = resolve(cfg.reward, epoch, cfg.curriculum)
        seed = derive_seed(cfg.seed, "step", self.step)
        self.batch_ids = D.gather([self.queries[i].get("id", i) for i in D.shard(idx)])  # per rank, for resume checks
        groups, n_branches = self.rollout([self.queries[i] for i in D.shard(idx)], seed)

        def rewards_of(group):
            return [compute_reward(cfg.reward, t.scores, t.finish_reason, epoch, cfg.curriculum) for t in group[0]]

        t_score = time.perf_counter()
        rewards = [rewards_of(g) for g in groups]
        t_score = time.perf_counter() - t_score
        drawn = list(zip(groups, rewards))  # every group this step rolled out, kept or not: the step's metrics
        draws = 1
        if cfg.algorithm == "dapo":
            keep = filter_groups(rewards)
            groups, rewards = [groups[i] for i in keep], [rewards[i] for i in keep]
            # Over-sampling: more queries from the stream until the batch is full of informative groups
            # (counted over all ranks, so every rank draws the same queries and loops as often).
            kept = int(D.all_sum(len(groups)))
            while cfg.dapo.oversample and kept < cfg.batch_queries and draws < cfg.dapo.max_draws:
                more_idx, _ = self.stream.next(cfg.batch_queries - kept)
                more, _ = self.rollout([self.queries[i] for i in D.shard(more_idx)], derive_seed(seed, "draw", draws))
                draws += 1
                more_rewards = [rewards_of(g) for g in more]
                keep = filter_groups(more_rewards)
                drawn += zip(more, more_rewards)
                groups += [more[i] for i in keep]
                rewards += [more_rewards[i] for i in keep]
                kept = int(D.all_sum(len(groups)))
        if hasattr(self.backend, "sleep"):
            self.backend.sleep()  # a colocated vLLM engine gives its memory to the update
        t_rollout = time.perf_counter() - t0

        dropped = len(drawn) - len(groups)
        rows = [r for part in D.gather([trajectory_row(t) for g, _ in drawn for t in g[0]]) for r in part]
        all_rewards = [r for part in D.gather([r for _, rs in drawn for r in rs]) for r in part]
        n_groups, dropped, n_branches = (int(v) for v in D.all_reduce([len(groups), dropped, n_branches]))
        metrics = rollout_metrics(rows, all_rewards)
        metrics.update({"epoch": epoch, "reward_fn": reward_name, "rollout_backend": self.backend_name, "groups": n_groups, "groups_dropped": dropped,
                        "dapo_draws": draws, "branches": n_branches, "rollout_time_s": t_rollout})
        t1 = time.perf_counter()
        advantages = group_advantages(rewards, cfg.advantage, cfg.advantage_epsilon)
        # Scoring: rewards and advantages here (the evaluator itself runs inside the rollout, in the env).
        metrics["score_time_s"] = t_score + time.perf_counter() - t1
        t1 = time.perf_counter()
        # All-zero advantages (and no KL) give an exactly zero gradient: skip the forward/backward
        # (decided over all ranks: the update is collective).
        informative = D.all_max(float(bool(groups) and any(a != 0 for g in advantages for a in g)))
        if n_groups and (cfg.kl_coef > 0 or informative):
            metrics.update(self.update(groups, advantages))
        else:  # nothing to learn from: the step still counts (the paper keeps the batch without over-sampling)
            metrics.update({"loss": 0.0, "loss_tokens": 0.0, "grad_norm": 0.0, "optimizer_steps": 0})
        metrics["update_skipped"] = int(metrics.get("optimizer_steps", 0) == 0)
        t_update = time.perf_counter() - t1
        metrics.update({"update_time_s": t_update, "step_time_s": time.perf_counter() - t0,
                        "lr": self.scheduler.get_last_lr()[0]})
        metrics["update_tokens_per_s"] = metrics.get("update_tokens", 0) / t_update if t_update > 0 else 0.0
        metrics["rollout_tokens_per_s"] = sum(r["tokens"] for r in rows) / max(t_rollout, 1e-9)
        self.step += 1
        return self.logger.log(self.step, metrics)

    def update(self, groups, advantages) -> dict:
        import torch

        cfg, engine = self.cfg, self.engine
        trajs, parents, points, advs = [], [], [], []
        for (g_trajs, g_parents, g_points), g_adv in zip(groups, advantages):
            base = len(trajs)
            trajs += g_trajs
            parents += [None if p is None else base + p for p in g_parents]
            points += g_points
            advs += g_adv
        # Trajectories with no loss tokens (overlength, or all-zero advantage is kept: it still
        # shapes nothing but costs a forward) are skipped: they add nothing to the gradient.
        samples = build_samples(trajs, advs, parents, points, mask_overlength=cfg.overlong_filter) if trajs else []
        samples = [s for s in samples if any(s.loss_mask[1:])]
        if not D.all_sum(len(samples)):
            return {"loss": 0.0, "loss_tokens": 0.0, "update_tokens": 0, "optimizer_steps": 0}
        W = self.world
        order = list(range(len(samples)))
        micro = [order[i:i + cfg.micro_batch_size] for i in range(0, len(order), cfg.micro_batch_size)]
        batches = [{k: v.to(engine.device) for k, v in collate([samples[i] for i in mb], self.pad_id).items()}
                   for mb in micro]
        # Old log-probs: the policy that sampled (recomputed by the trainer, or the backend's own).
        # Every pass scores from the micro-batch's first loss token: the prompt needs no logits.
        with torch.no_grad():
            for b in batches:
                b["start"] = start = first_loss_position(b["loss_mask"])
                if cfg.old_logprobs == "recompute":
                    b["old_logprobs"], _ = token_logprobs(engine, b["input_ids"], b["attention_mask"], cfg.temperature,
                                                          start=start)
                else:
                    b["old_logprobs"] = b["rollout_logprobs"]
                if self.ref_model is not None:
                    b["ref_logprobs"], _ = token_logprobs(self.ref_model, b["input_ids"], b["attention_mask"],
                                                          cfg.temperature, start=start)
        # Mini-batches per pass: as one process would split its batch, the most any rank needs (a rank
        # with fewer runs zero-loss micro-steps), so every rank steps the optimiser together.
        per_mini = min(max(1, math.ceil(len(batches) / cfg.mini_batches)), self.gas)
        n_minis = int(D.all_max(math.ceil(len(batches) / per_mini)))
        stats_acc: dict[str, list[float]] = {}
        grad_norms, entropies, tokens_seen, losses = [], [], 0, []
        rng = random.Random(f"{cfg.seed}:{self.step}")
        for _ in range(cfg.num_iterations):
            shuffled = batches[:]
            rng.shuffle(shuffled)
            for m in range(0, n_minis * per_mini, per_mini):
                mini = shuffled[m:m + per_mini]
                # token-mean over the mini-batch of all ranks: each rank's loss sums its own tokens
                n_tokens = D.all_sum(float(sum(float(b["loss_mask"].sum()) for b in mini)))
                mini_loss = 0.0
                for k in range(self.gas):
                    if k < len(mini) and n_tokens > 0:
                        b = mini[k]
                        logp, ent = token_logprobs(engine, b["input_ids"], b["attention_mask"], cfg.temperature,
                                                   with_entropy=True, start=b["start"])
                        # n_tokens / W: DeepSpeed averages gradients over the W ranks, so each rank's
                        # sum over its tokens / (n_tokens / W) averages to the whole batch's token-mean
                        loss, stats = clipped_surrogate(logp, b["old_logprobs"], b["advantages"], b["loss_mask"],
                                                        cfg.epsilon_low, cfg.epsilon_high, n_tokens=n_tokens / W,
                                                        ref_logp=b.get("ref_logprobs"), kl_coef=cfg.kl_coef)
                        mask = b["loss_mask"]
                        if mask.sum() > 0:
                            entropies.append(float((ent.detach() * mask).sum() / mask.sum()))
                            for key, v in stats.items():
                                stats_acc.setdefault(key, []).append(v)
                        tokens_seen += int(b["attention_mask"].sum())
                        mini_loss += float(loss.detach())
                    else:  # keep DeepSpeed's accumulation boundary: a zero-loss micro-step
                        loss = sum(p.sum() for p in engine.module.parameters()) * 0.0
                    engine.backward(loss, scale_wrt_gas=False)
                    gn = dss.step(engine)
                    if gn is not None:
                        grad_norms.append(gn)
                losses.append(mini_loss)
        self.sync_weights()
        losses = D.all_reduce([x / W for x in losses])
        tokens_seen = int(D.all_sum(tokens_seen))
        entropies = [e for part in D.gather(entropies) for e in part]
        merged: dict[str, list[float]] = {}
        for part in D.gather(stats_acc):
            for key, values in part.items():
                merged.setdefault(key, []).extend(values)
        stats_acc = merged
        out = {"loss": statistics.fmean(losses) if losses else 0.0,
               "grad_norm": statistics.fmean(grad_norms) if grad_norms else 0.0,
               "entropy": statistics.fmean(entropies) if entropies else 0.0,
               "update_tokens": tokens_seen, "optimizer_steps": len(losses)}
        for key, values in stats_acc.items():
            agg = min if key == "ratio_min" else max if key == "ratio_max" else statistics.fmean
            out[key] = agg(values) if key != "loss_tokens" else sum(values) / max(cfg.num_iterations, 1)
        return out

    def sync_weights(self) -> None:
        """The trainer's weights into this rank's rollout backend (ZeRO-3: gathered one parameter at a time)."""
        if self.engine.zero_optimization_stage() == 3 and not hasattr(self.backend, "sleep"):
            # the transformers backend loads a state dict: materialise the gathered parameters
            self.backend.update_weights({k: v.detach().clone() for k, v in dss.iter_full_params(self.engine)})
        elif self.engine.zero_optimization_stage() == 3:
            self.backend.update_weights(dss.iter_full_params(self.engine))
        else:
            self.backend.update_weights(dss.full_state_dict(self.engine))

    # -- validation, checkpoints ------------------------------------------------------------------
    def selection_reward(self) -> str:
        """The reward validation ranks checkpoints by: the run's own (a curriculum's last, the one it ends on)."""
        return final_reward(self.cfg.reward, self.cfg.curriculum)

    def validate(self) -> dict:
        name = self.selection_reward()
        queries = self.val_queries[: self.cfg.validation.queries] if self.cfg.validation.queries else self.val_queries
        trajs = self._engine(self.cfg.seed, train=False).run(D.shard(queries), 1)  # each rank a share
        rewards = [r for part in D.gather([compute_reward(name, t.scores, t.finish_reason) for t in trajs])
                   for r in part]
        m = rollout_metrics([r for part in D.gather([trajectory_row(t) for t in trajs]) for r in part], rewards)
        return {"val_success_rate": m["success_rate"], "val_reward": m["reward_mean"],
                "val_delivered": m["delivered"], "val_format_error": m["finish_format_error"]}

    def _save_model(self, name: str, info: dict) -> None:
        extra = {f"{name}.json": json.dumps(info, indent=2) + "\n"}
        profile = self.model_dir / "star_profile.json"
        if profile.is_file():
            extra["star_profile.json"] = profile.read_text()
        dss.save_pretrained(self.engine, self.tokenizer, self.out / name, extra_files=extra)

    def _select(self) -> dict:
        """`selected/` = the best validated model when validation ran, else the last: what evaluation reads."""
        source = "best" if self.best is not None and (self.out / "best").is_dir() else "last"
        step = self.best["step"] if source == "best" else self.step
        info = {"from": source, "step": step}
        if self.rank != 0:
            return info
        target = self.out / "selected"
        if target.exists():
            shutil.rmtree(target)
        # Hard links: the selected model costs no extra disk (a 7B model is ~15 GB).
        shutil.copytree(self.out / source, target, copy_function=_link_or_copy)
        info = {"from": source, "step": step}
        (target / "selected.json").write_text(json.dumps(info, indent=2) + "\n")
        return info

    def _outside_out(self) -> bool:
        return outside(self.checkpoint_dir, self.out)

    def checkpoint(self) -> None:
        checkpoint.save(self.engine, self.checkpoint_dir, self.step,
                        {"stream": self.stream.state(), "best": self.best, "fingerprint": self.fingerprint},
                        keep=self.cfg.keep_checkpoints, before_state=self._keep_outputs)

    def _keep_outputs(self, tag_dir: Path) -> None:
        # What the run wrote so far goes with the checkpoint when its out folder may be removed (DVC).
        if self.rank != 0 or not self._outside_out():
            return
        if self.logger.path and self.logger.path.is_file():
            shutil.copy2(self.logger.path, tag_dir / "metrics.jsonl")
        if self.best is not None and (self.out / "best").is_dir():
            shutil.copytree(self.out / "best", tag_dir / "best", copy_function=_link_or_copy, dirs_exist_ok=True)

    def resume(self) -> bool:
        newest = checkpoint.newest_state(self.checkpoint_dir)
        if newest is None:
            return False
        if newest.get("fingerprint", self.fingerprint) != self.fingerprint:
            # Another model, other queries or another config: that run's state must not leak into this one.
            print(f"grpo: the checkpoints in {self.checkpoint_dir} are from another run (model, queries or "
                  "config differ); starting from step 0", file=sys.stderr)
            if self.rank == 0:
                shutil.rmtree(self.checkpoint_dir, ignore_errors=True)
            return False
        state = checkpoint.load_latest(self.engine, self.checkpoint_dir)
        if state is None:
            return False
        tag_dir = self.checkpoint_dir / f"step-{state['step']:06d}"
        if self.rank == 0 and self._outside_out():
            if (tag_dir / "metrics.jsonl").is_file() and self.logger.path and not self.logger.path.is_file():
                shutil.copy2(tag_dir / "metrics.jsonl", self.logger.path)
            if (tag_dir / "best").is_dir() and not (self.out / "best").is_dir():
                shutil.copytree(tag_dir / "best", self.out / "best", copy_function=_link_or_copy)
        print(f"grpo: resumed from {tag_dir} (step {state['step']} of {self.total_steps})", file=sys.stderr)
        self.step = state["step"]
        self.stream = QueryStream(len(self.queries), self.cfg.seed, **state["stream"])
        self.best = state.get("best")
        self.sync_weights()
        self.logger.truncate_after(self.step)
        return True

    def train(self, resume: bool = False) -> dict:
        from tqdm.auto import tqdm

        cfg = self.cfg
        resumed = self.resume() if resume else False
        if not resumed and self.logger.path and self.logger.path.exists():
            self.logger.path.unlink()
        bar = tqdm(total=self.total_steps, initial=self.step, desc=f"rl ({cfg.algorithm})", disable=not self.progress)
        last, t0, timed_out = {}, time.perf_counter(), False
        while self.step < self.total_steps and not timed_out:
            last = self.train_step()
            if cfg.validation.every and self.val_queries and self.step % cfg.validation.every == 0:
                val = self.validate()
                self.logger.log(self.step, val)
                key = (val["val_success_rate"], val["val_reward"])  # success first, then the run's reward
                if self.best is None or key > (self.best["val_success_rate"], self.best.get("val_reward", float("-inf"))):
                    self.best = {"step": self.step, "reward": self.selection_reward(), **val}
                    self._save_model("best", self.best)
            if cfg.save_every and (self.step % cfg.save_every == 0 or self.step == self.total_steps):
                self.checkpoint()
            bar.update(1)
            bar.set_postfix(reward=f"{last['reward_mean']:.3f}", loss=f"{last['loss']:.4f}")
            # decided on every rank alike (the steps are collective)
            timed_out = bool(cfg.time_limit_s) and D.all_max(float(time.perf_counter() - t0 > cfg.time_limit_s)) > 0
        bar.close()
        self._save_model("last", {"step": self.step})
        selected = self._select()
        # Every step's record, those before a resume included: how many updates the RL model is away from SFT.
        records = read_jsonl(self.logger.path) if self.logger.path and self.logger.path.is_file() else [last]
        updates = int(sum(r.get("optimizer_steps", 0) for r in records))
        summary = {"steps": self.step, "optimizer_steps": updates, "resumed": resumed, "stopped_by_time_limit": timed_out, "best": self.best,
                   "selected": selected, "ranks": self.world, "last_metrics": last, "config": cfg.model_dump()}
        if self.rank == 0:
            (self.out / "summary.json").write_text(json.dumps(summary, indent=2, default=str) + "\n")
            if self._outside_out() and not timed_out:  # finished: the outputs hold it all now
                shutil.rmtree(self.checkpoint_dir, ignore_errors=True)
        return summary


def _link_or_copy(src: str, dst: str) -> str:
    try:
        os.link(src, dst)
    except OSError:  # another filesystem, or links not allowed
        shutil.copy2(src, dst)
    return dst


def run_fingerprint(model_dir, queries: list[dict], val_queries: list[dict], cfg: GRPOConfig) -> str:
    """A GRPO run's identity for resuming: start model, queries and every field that changes what a step
    does (extending a run by more steps still resumes it)."""
    return checkpoint.fingerprint(model_dir, [queries, val_queries], cfg.model_dump(),
                                  {"save_every", "keep_checkpoints", "time_limit_s", "max_steps", "epochs",
                                   "torch_threads"})


def train_grpo(model_dir, queries, out, cfg: GRPOConfig | None = None, val_queries=None, db=None,
               resume: bool = False, progress: bool = True, env_factory=None, checkpoints=None) -> dict:
    return GRPOTrainer(model_dir, queries, out, cfg, val_queries, db, progress, env_factory,
                       checkpoints=checkpoints).train(resume=resume)
