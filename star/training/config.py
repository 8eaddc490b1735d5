"""Training settings: model profiles, SFT and launch, one place per default (GRPO's: star.training.rl_config).

Paper defaults (spec/star-recipe.md §3-4) are the field defaults; small CPU profiles override
them through `SMALL_OVERRIDES` (applied by the CLIs when the model is a smoke/cpu build) or
through params files.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from star.params_io import layer_to_dotted, set_dotted

Profile = Literal["smoke", "cpu", "paper-1.5b", "paper-3b", "paper-7b"]


class _Config(BaseModel):
    model_config = ConfigDict(use_attribute_docstrings=True, extra="forbid")


class SmokeModelConfig(_Config):
    """Shape of the tiny locally built Qwen2 model and its tokenizer."""

    vocab_size: int = 2048
    """Target vocabulary of the byte-level BPE tokenizer (special tokens included)."""
    hidden_size: int = 128
    """Width of the residual stream."""
    num_hidden_layers: int = 4
    """Number of transformer blocks."""
    num_attention_heads: int = 4
    """Query heads per block."""
    num_key_value_heads: int = 2
    """Key/value heads per block (grouped-query attention)."""
    intermediate_size: int = 384
    """Width of the SwiGLU feed-forward layer."""
    max_position_embeddings: int = 32768
    """Longest sequence the rotary embedding is configured for (paper: 32K at inference)."""
    seed: int = 0
    """Seed of the random initialisation and of the tokenizer's training text."""
    tokenizer_docs: int = 4000
    """How many Python standard-library docstrings to mix into the tokenizer corpus (general English)."""
    tokenizer_world: Literal["generated", "sandbox"] = "generated"
    """Whose text trains the tokenizer: the generated world, or the pipeline's sandbox (the real database's names)."""


class ModelConfig(_Config):
    """Which policy model the pipeline starts from (`star build-model`)."""

    profile: Profile = "smoke"
    """smoke (tiny local Qwen2), cpu (SmolLM2-135M-Instruct), or paper-1.5b / paper-3b / paper-7b (Qwen2.5-Instruct)."""
    smoke: SmokeModelConfig = SmokeModelConfig()
    """Shape of the smoke model and its tokenizer (used by the smoke profile only)."""


class SFTConfig(_Config):
    """Supervised fine-tuning on rejection-sampled multi-turn trajectories."""

    batch_size: int = 32
    """Sequences per optimiser step (global batch; paper: 32)."""
    micro_batch_size: int = 1
    """Sequences (or packed rows) per forward pass; the rest is gradient accumulation."""
    learning_rate: float = 5e-6
    """Peak learning rate of AdamW (paper: 5e-6)."""
    warmup_ratio: float = Field(0.1, ge=0.0, le=1.0)
    """Share of the optimiser steps spent in linear warm-up (paper: 0.1); linear decay afterwards."""
    epochs: int = Field(4, ge=1)
    """Passes over the SFT data (paper: 4; 6 for the 1.5B model)."""
    weight_decay: float = 0.0
    """AdamW weight decay."""
    max_length: int = 32768
    """Sequences longer than this many tokens are truncated (their tail loses its loss)."""
    bucketing: bool = True
    """Group conversations of similar length into micro-batches to cut padding (order shuffled per epoch)."""
    eval_fraction: float = Field(0.1, ge=0.0, lt=1.0)
    """Share of conversations held out to measure the loss before and after training."""
    zero_stage: int = Field(2, ge=0, le=3)
    """DeepSpeed ZeRO stage (0-3)."""
    bf16: bool | None = None
    """bfloat16 mixed precision with fp32 master weights; None: on with CUDA, off on CPU (slower there)."""
    gradient_clipping: float = 1.0
    """Global gradient-norm clip."""
    train_top_layers: int | None = Field(None, ge=1)
    """Update only the top N blocks and the final norm; the frozen rest runs without a graph (None: all)."""
    seed: int = 0
    """Seed of data order and dropout."""
    max_steps: int | None = None
    """Stop after this many optimiser steps (None: run all epochs)."""
    first_turn_epochs: int = Field(0, ge=0)
    """Copy stage: passes over the first-turn examples (`star sft --first-turns`) before the trajectories; 0: none."""
    first_turn_batch_size: int = Field(16, ge=1)
    """Sequences per optimiser step, and per forward pass, in the copy stage (its examples are ~60 tokens)."""
    save_every: int = Field(0, ge=0)
    """Optimiser steps between resumable checkpoints (0: none); `star sft --resume` continues from the newest."""
    keep_checkpoints: int = Field(1, ge=1)
    """Resumable checkpoints kept (the newest ones)."""
    torch_threads: int | None = None
    """torch intra-op threads on CPU (None: leave torch's default)."""


# Overrides for the CPU profiles: the paper's lr and batch sizes are for 1.5B-7B models and
# hundreds of GPU hours; a tiny model on two cores needs fewer, larger steps to learn anything.
SMALL_OVERRIDES: dict[str, dict[str, dict]] = {
    "smoke": {
        "sft": {"batch_size": 8, "learning_rate": 3e-3, "epochs": 4, "max_length": 4096},
        "rl": {"batch_queries": 2, "num_generations": 4, "learning_rate": 1e-4, "max_context": 3072,
                 "max_new_tokens": 256, "tool_call_budget": 12, "arpo": {"initial": 2}},
    },
    "cpu": {
        "sft": {"batch_size": 8, "learning_rate": 5e-5, "epochs": 2, "max_length": 4096},
        "rl": {"batch_queries": 2, "num_generations": 4, "learning_rate": 1e-5, "max_context": 4096,
                 "max_new_tokens": 256, "tool_call_budget": 12, "arpo": {"initial": 2}},
    },
    # The paper trains the 1.5B model for 6 SFT epochs instead of 4.
    "paper-1.5b": {"sft": {"epochs": 6}},
}


def resolve_config(cls, section: str, profile: str | None = None, path=None, sets: list[str] | None = None):
    """Build `cls` from: field defaults < small-profile overrides < a params file < `--set key=value` pairs.

    The params file is YAML or JSON; when it has a top-level `section` key ("sft" / "rl") only that
    part is read. Values in `--set` are parsed as YAML scalars/lists (so `epochs=2`, `bf16=false`); a dotted key
    sets a nested field (`dapo.oversample=true`).
    """
    import copy

    import yaml

    values: dict = copy.deepcopy(SMALL_OVERRIDES.get(profile or "", {}).get(section, {}))
    if path:
        from pathlib import Path

        p = Path(path)
        if not p.is_file():
            raise FileNotFoundError(f"config file not found: {p}")
        data = yaml.safe_load(p.read_text()) or {}
        if not isinstance(data, dict):
            raise ValueError(f"{p}: expected a mapping of {cls.__name__} fields")
        # nested sections merge key by key, as params/ layers do (`arpo: {entropy_tokens: 4}` keeps `initial`)
        for key, value in layer_to_dotted(data.get(section, data) if section in data else data).items():
            set_dotted(values, key, value, source=str(p))
    for item in sets or []:
        key, sep, raw = item.partition("=")
        if not sep:
            raise ValueError(f"--set expects key=value, got {item!r}")
        set_dotted(values, key.strip(), yaml.safe_load(raw), source="--set")  # `dapo.oversample=true` nests
    known = set(cls.model_fields)
    unknown = sorted(set(values) - known)
    if unknown:
        raise ValueError(f"unknown {cls.__name__} field(s) {unknown}")
    return cls(**values)


class LaunchConfig(_Config):
    """How many training processes the sft and grpo stages start (`launch:` in params; read by star.training.launch)."""

    nproc_per_node: int = Field(1, ge=1)
    """Training ranks per node: one per GPU (on CPU, gloo ranks sharing the cores)."""
    nnodes: int = Field(1, ge=1)
    """Nodes; more than 1 needs `hostfile` and is started by DeepSpeed's launcher (pdsh/ssh) from the first node."""
    hostfile: str | None = None
    """DeepSpeed hostfile (`host slots=N` per line) naming the nodes; required when nnodes > 1."""
    master_addr: str = "127.0.0.1"
    """Address of rank 0 (the first node's hostname or IP on several nodes)."""
    master_port: int | None = Field(None, ge=1, le=65535)
    """Rendezvous port (None: a free port on one node, 29500 across nodes)."""
    launcher: Literal["auto", "torchrun", "deepspeed"] = "auto"
    """auto: torchrun on one node, DeepSpeed's launcher across nodes."""

    @model_validator(mode="after")
    def _check(self) -> "LaunchConfig":
        if self.nnodes > 1 and not self.hostfile:
            raise ValueError(f"launch.nnodes={self.nnodes} needs launch.hostfile (DeepSpeed's `host slots=N` file)")
        if self.nnodes > 1 and self.launcher == "torchrun":
            raise ValueError("launch.launcher=torchrun runs on one node; several nodes use launcher deepspeed or auto")
        return self

    @property
    def world_size(self) -> int:
        return self.nproc_per_node * self.nnodes
