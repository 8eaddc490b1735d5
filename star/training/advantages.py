"""Advantage estimators in a registry (an ablation is a parameter).

Input: rewards of one rollout batch as a list of groups (one group per query, G rewards each,
overlength rollouts included: they count in the group statistics even though their tokens carry
no loss). Output: one scalar advantage per trajectory, same shape. Every estimator takes `eps`, the
constant added to a group's std before dividing (GRPOConfig.advantage_epsilon; estimators that do
not divide ignore it).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from star.training.rl_config import GRPOConfig

AdvantageFn = Callable[[Sequence[float], float], list[float]]
ADVANTAGES: dict[str, AdvantageFn] = {}


def register(name: str):
    """Add an estimator under `name` (a second registration of a name is an error, not an overwrite)."""
    def wrap(fn: AdvantageFn) -> AdvantageFn:
        if name in ADVANTAGES:
            raise ValueError(f"advantage estimator {name!r} is already registered")
        ADVANTAGES[name] = fn
        return fn
    return wrap


def _mean_std(xs: Sequence[float]) -> tuple[float, float]:
    n = len(xs)
    mean = sum(xs) / n
    # Sample standard deviation (n-1), as TRL's GRPO; a single rollout has no spread.
    var = sum((x - mean) ** 2 for x in xs) / (n - 1) if n > 1 else 0.0
    return mean, math.sqrt(var)


@register("grpo")
def grpo(rewards: Sequence[float], eps: float) -> list[float]:
    """(r - mean) / (std + eps) within the group; an all-equal group gives all zeros."""
    mean, std = _mean_std(rewards)
    return [(r - mean) / (std + eps) for r in rewards]


@register("dr_grpo")
def dr_grpo(rewards: Sequence[float], eps: float) -> list[float]:
    """Mean-centred only (no std division, which over-weights near-uniform groups)."""
    mean, _ = _mean_std(rewards)
    return [r - mean for r in rewards]


@register("rloo")
def rloo(rewards: Sequence[float], eps: float) -> list[float]:
    """Leave-one-out baseline: r_i minus the mean of the other rewards of the group."""
    n, total = len(rewards), sum(rewards)
    if n < 2:
        return [0.0] * n
    return [r - (total - r) / (n - 1) for r in rewards]


def group_advantages(groups: Sequence[Sequence[float]], name: str = "grpo",
                     eps: float | None = None) -> list[list[float]]:
    """Advantages of every group; `eps` None takes GRPOConfig's default (TRL's 1e-4)."""
    if name not in ADVANTAGES:
        raise ValueError(f"unknown advantage estimator {name!r} (expected one of {sorted(ADVANTAGES)})")
    if eps is None:
        eps = GRPOConfig.model_fields["advantage_epsilon"].default
    if eps < 0:
        raise ValueError(f"advantage epsilon must be >= 0, got {eps}")
    return [ADVANTAGES[name](list(g), eps) for g in groups]
