"""Rewards from a trajectory's evaluation scores (spec §4), in a registry so the reward is a parameter.

The paper's: sum = cs_micro + cs_macro + hard_micro + hard_macro + success (dense); macro = cs_macro +
hard_macro + success (semi-sparse); success (sparse); curriculum switches among them by epoch. On
official-mode scores they are exactly the paper's; a weak policy games `sum` there with stubs (an empty
day passes the official checks of what it omits), which strict mode refuses (star.evaluation.slots).

Ours: quality = slot credit + cs_macro + cs_macro x hard_macro + success, the one that ranks plans by quality
(`ORDERED`, pinned by tests/evaluation/test_reward_ordering.py): slot credit pays each required slot
filled with a valid item, so partial work earns partial credit and an empty skeleton earns only its cities
and legs; the three verdicts pay a plan that meets every constraint above any with a wrong item.
coverage = sum x the share of the query's days covered (kept for the runs that used it; an empty
full-length plan games it). A format error earns 0 whatever the plan would have scored.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

RewardFn = Callable[[dict], float]


class MissingScore(KeyError):
    """The scores lack a value this reward needs (written by an older evaluator)."""

REWARDS: dict[str, RewardFn] = {}
ORDERED: set[str] = set()  # rewards that claim to rank plans by quality (the ordering test holds them to it)
SCHEDULED = ("curriculum",)  # names resolved per epoch, not scored directly
DEFAULT_CURRICULUM: tuple[tuple[int, str], ...] = ((1, "sum"), (3, "macro"), (5, "success"))


def register(name: str, *, ordered: bool = False):
    """Add a reward under `name` (a second registration of a name is an error, not an overwrite)."""
    def wrap(fn: RewardFn) -> RewardFn:
        if name in REWARDS or name in SCHEDULED:
            raise ValueError(f"reward {name!r} is already registered")
        REWARDS[name] = fn
        if ordered:
            ORDERED.add(name)
        return fn
    return wrap


def names() -> list[str]:
    """Every reward a run may name: the registry's, then the scheduled ones (the CLIs' and configs' one list)."""
    return [*REWARDS, *SCHEDULED]


def _has(scores, key: str) -> bool:
    return (key in scores) if isinstance(scores, dict) else hasattr(scores, key)


def _get(scores, key: str) -> float:
    value = scores.get(key, 0.0) if isinstance(scores, dict) else getattr(scores, key, 0.0)
    return float(value or 0.0)


@register("sum")
def sum_reward(scores) -> float:
    return sum(_get(scores, k) for k in ("cs_micro", "cs_macro", "hard_micro", "hard_macro", "success"))


@register("coverage")
def coverage_reward(scores) -> float:
    base = sum_reward(scores)
    if base and not _has(scores, "coverage"):  # scores written before plans carried their coverage: 0 would read as a real score
        raise MissingScore("the coverage reward needs the plan's 'coverage' score; these scores predate it "
                           "(re-score the plans with the current evaluator)")
    return base * _get(scores, "coverage") if base else 0.0


@register("quality", ordered=True)
def quality_reward(scores) -> float:
    if not _has(scores, "slot_credit") and _get(scores, "delivered"):
        raise MissingScore("the quality reward needs the plan's 'slot_credit' score; these scores predate it "
                           "(re-score the plans with the current evaluator)")
    # hard macro counts only beside cs macro: the hard gate lets a trip that never comes home pass it
    cs = _get(scores, "cs_macro")
    return _get(scores, "slot_credit") + cs + cs * _get(scores, "hard_macro") + _get(scores, "success")


@register("macro")
def macro_reward(scores) -> float:
    return _get(scores, "cs_macro") + _get(scores, "hard_macro") + _get(scores, "success")


@register("success")
def success_reward(scores) -> float:
    return _get(scores, "success")


def curriculum_stage(epoch: int, schedule: Sequence[tuple[int, str]] = DEFAULT_CURRICULUM) -> str:
    """The reward in force at a 1-based epoch: the last schedule entry whose start epoch is <= epoch."""
    current = schedule[0][1]
    for start, name in schedule:
        if epoch >= start:
            current = name
    return current


def resolve(name: str, epoch: int = 1, schedule: Sequence[tuple[int, str]] = DEFAULT_CURRICULUM) -> str:
    if name == "curriculum":
        return curriculum_stage(epoch, schedule)
    if name not in REWARDS:
        raise ValueError(f"unknown reward {name!r} (expected one of {names()})")
    return name


def final_reward(name: str, schedule: Sequence[tuple[int, str]] = DEFAULT_CURRICULUM) -> str:
    """The reward a run trained on `name` ends on: a schedule's last entry, else `name` itself (what validation
    ranks checkpoints by and a comparison leads with)."""
    return schedule[-1][1] if name in SCHEDULED else name


def compute_reward(name: str, scores, finish_reason: str, epoch: int = 1,
                   schedule: Sequence[tuple[int, str]] = DEFAULT_CURRICULUM) -> float:
    """Reward of one trajectory; 0 on a format error."""
    fn = REWARDS[resolve(name, epoch, schedule)]
    if finish_reason == "format_error":
        return 0.0
    return fn(scores or {})
