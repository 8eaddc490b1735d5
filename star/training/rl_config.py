"""GRPO / DAPO / ARPO settings (TRL-GRPOConfig-like), one place per default (spec/star-recipe.md §4).

Apart from star.training.config so that SFT stages do not depend on the reward registry this config
checks its reward names against.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from star.evaluation.rewards import SCHEDULED, names
from star.rollout.config import BackendName, VLLMConfig
from star.sandbox.config import DEFAULTS as SANDBOX
from star.sandbox.config import Prompt
from star.training.config import _Config

Algorithm = Literal["grpo", "dapo", "arpo"]
RewardName = str  # a name in star.evaluation.rewards (`names()`): checked against the registry, never listed here


class _Group(_Config):
    """A concern of GRPOConfig, nested under its name (`rl.dapo.oversample`), as VLLMConfig is."""


class DAPOConfig(_Group):
    """DAPO's dynamic sampling (algorithm `dapo`)."""

    oversample: bool = False
    """Draw extra query batches until the rollout batch is full of informative groups (paper: off)."""
    max_draws: int = Field(3, ge=1)
    """With over-sampling: most query batches drawn for one step."""


class ARPOConfig(_Group):
    """ARPO's entropy-guided branching at tool-call boundaries (algorithm `arpo`)."""

    initial: int = Field(4, ge=1)
    """Complete rollouts sampled first per query; branches fill the group up to num_generations."""
    entropy_threshold: float = 0.1
    """Branch at a tool-call boundary when entropy after the observation exceeds the initial entropy by this."""
    entropy_tokens: int = Field(8, ge=1)
    """Tokens after a boundary (or after the prompt) whose mean entropy measures the policy's uncertainty."""
    branches_per_step: int = Field(2, ge=1)
    """Most branches started from one boundary."""


class ValidationConfig(_Group):
    """Checkpoint selection: the policy on the validation queries every `every` steps, the best one kept."""

    every: int = Field(0, ge=0)
    """Validate every N steps and keep the best checkpoint (0: never)."""
    queries: int | None = None
    """Validate on the first N validation queries (None: all)."""
    temperature: float = 0.6
    """Validation sampling temperature (paper: 0.6)."""
    top_p: float = 0.95
    """Validation nucleus sampling (paper: 0.95)."""


class GRPOConfig(_Config):
    """Online RL (GRPO and its DAPO / ARPO variants) over the rollout engine."""

    algorithm: Algorithm = "grpo"
    """Which rollout/filtering variant: grpo, dapo (dynamic sampling) or arpo (entropy-guided branching)."""
    reward: RewardName = "quality"
    """Reward from the evaluation scores, by name in star.evaluation.rewards (quality, sum, macro, success, ...)."""
    curriculum: list[tuple[int, RewardName]] = [(1, "sum"), (3, "macro"), (5, "success")]
    """Curriculum schedule: (first epoch, reward) pairs, 1-based epochs (paper: sum 1-2, macro 3-4, success 5)."""
    advantage: str = "grpo"
    """Advantage estimator from the registry (grpo: reward normalised within the group)."""
    advantage_epsilon: float = Field(1e-4, ge=0.0)
    """Added to the group's reward std before dividing (TRL's 1e-4; 1e-6 inflated near-uniform groups 1.21x)."""
    num_generations: int = Field(8, ge=1)
    """G: rollouts per query (the group)."""
    batch_queries: int = Field(32, ge=1)
    """Queries per rollout batch (paper: 32)."""
    epochs: int = Field(5, ge=1)
    """Passes over the RL training queries (paper: 5)."""
    max_steps: int | None = None
    """Stop after this many rollout batches (None: run all epochs)."""
    time_limit_s: float | None = Field(None, gt=0)
    """Also stop after the step that ends past this many seconds of training (None: no limit; a GPU lease's budget)."""
    train_queries: int | None = Field(None, ge=1)
    """Train on the first N RL queries only (None: all); N = batch_queries repeats one batch, so step rewards compare."""
    learning_rate: float = 2e-6
    """AdamW learning rate (paper: 2e-6)."""
    warmup_ratio: float = Field(0.0, ge=0.0, le=1.0)
    """Share of optimiser steps in linear warm-up (then constant, or decaying if lr_decay)."""
    lr_decay: bool = False
    """Decay the lr linearly to 0 over the run's optimiser steps after warm-up (recipe: constant)."""
    weight_decay: float = 0.0
    """AdamW weight decay."""
    num_iterations: int = Field(1, ge=1)
    """Passes (PPO epochs) over each rollout batch."""
    mini_batches: int = Field(1, ge=1)
    """Optimiser steps per pass over a rollout batch (rollouts split into this many mini-batches)."""
    micro_batch_size: int = Field(1, ge=1)
    """Trajectories per forward pass inside a mini-batch (gradient accumulation)."""
    epsilon_low: float = 0.2
    """Lower clip: ratio floor is 1 - epsilon_low."""
    epsilon_high: float = 0.28
    """Upper clip ("clip-higher"): ratio ceiling is 1 + epsilon_high."""
    kl_coef: float = 0.0
    """Weight of the KL penalty to a frozen reference model (0: no KL term, no reference model loaded)."""
    old_logprobs: Literal["recompute", "rollout"] = "recompute"
    """Old-policy log-probs: recomputed by the trainer before the updates, or taken from the rollout backend."""
    rollout_backend: BackendName = "transformers"
    """Generation backend for rollouts: transformers, vllm (weights synced into the running engine each step), or auto."""
    rollout_batch: int = Field(8, ge=1)
    """Most sequences one generate call decodes together."""
    vllm: VLLMConfig = Field(default_factory=VLLMConfig)
    """vLLM engine options (rollout_backend vllm, or auto where vLLM is installed)."""
    temperature: float = 1.0
    """Sampling temperature for training rollouts (paper: 1.0)."""
    top_p: float = 1.0
    """Nucleus sampling for training rollouts."""
    max_context: int = 30000
    """Context limit (tokens) of a training trajectory; beyond it the rollout is overlength (paper: 30K)."""
    overlong_filter: bool = True
    """Overlength rollouts carry no loss (recipe, DAPO); False trains them with their reward like any other failure."""
    max_new_tokens: int = 2048
    """Tokens one assistant turn may generate."""
    tool_call_budget: int = 60
    """Tool calls per episode before it is stopped (paper: 60)."""
    env_failure_rate: float = Field(0.0, ge=0.0, le=1.0)
    """Probability a tool call fails during training rollouts (validation always runs clean)."""
    observation_style: Literal["compact", "official"] = "compact"
    """Observation text style the agent sees."""
    prompt: Prompt = SANDBOX.prompt
    """System prompt of the rollouts (the pipeline passes `sandbox.prompt`, the one the SFT data was written with)."""
    evaluator_mode: Literal["strict", "official"] = "strict"
    """Evaluator mode that produces the reward's scores (strict closes the official loopholes)."""
    dapo: DAPOConfig = Field(default_factory=DAPOConfig)
    """DAPO's dynamic sampling (algorithm dapo)."""
    arpo: ARPOConfig = Field(default_factory=ARPOConfig)
    """ARPO's entropy-guided branching (algorithm arpo)."""
    validation: ValidationConfig = Field(default_factory=ValidationConfig)
    """Checkpoint selection on the validation queries."""
    save_every: int = Field(1, ge=0)
    """Write a resumable checkpoint every N steps (0: only at the end)."""
    keep_checkpoints: int = Field(2, ge=1)
    """Resumable checkpoints kept on disk (oldest removed first)."""
    zero_stage: int = Field(2, ge=0, le=3)
    """DeepSpeed ZeRO stage (0-3)."""
    bf16: bool | None = None
    """bfloat16 mixed precision with fp32 master weights; None: on with CUDA, off on CPU (slower there)."""
    gradient_clipping: float = 1.0
    """Global gradient-norm clip."""
    train_top_layers: int | None = Field(None, ge=1)
    """Update only the top N blocks and the final norm; the frozen rest runs without a graph (None: all)."""
    seed: int = 0
    """Seed of query order, sampling and failure injection."""
    torch_threads: int | None = None
    """torch intra-op threads on CPU (None: leave torch's default)."""

    @model_validator(mode="after")
    def _check(self) -> "GRPOConfig":
        if self.epsilon_low < 0 or self.epsilon_high < 0:
            raise ValueError("epsilon_low and epsilon_high must be >= 0")
        if self.algorithm == "arpo" and self.arpo.initial > self.num_generations:
            raise ValueError(f"arpo.initial ({self.arpo.initial}) must be <= num_generations ({self.num_generations})")
        for name in (self.reward, *(r for _, r in self.curriculum)):
            if name not in names() or (name in SCHEDULED and name != self.reward):
                raise ValueError(f"unknown reward {name!r}; expected one of {names()}")
        epochs = [e for e, _ in self.curriculum]
        if not epochs or epochs[0] != 1 or epochs != sorted(set(epochs)):
            raise ValueError(f"curriculum must start at epoch 1 with increasing epochs, got {self.curriculum}")
        return self
