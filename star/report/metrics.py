"""The ablation report's metrics: one value per evaluation trajectory (`HEADLINE`), averaged per query."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from star.evaluation.audit import hack_flags
from star.evaluation.rewards import compute_reward

# Aggregate keys of star.evaluation.evaluator.aggregate, shown in this order.
AGGREGATE_KEYS = ("success_rate", "commonsense_micro", "commonsense_macro", "hard_micro", "hard_macro",
                  "delivery_rate")


SHORT = {"success_rate": "success", "commonsense_micro": "cs micro", "commonsense_macro": "cs macro",
         "hard_micro": "hard micro", "hard_macro": "hard macro", "delivery_rate": "delivery"}


# Training-curve panels (paper Figures 7-10): the first step-metric key containing each word.
CURVE_PANELS = ("reward", "success", "entropy")


_PLAN_SCORES = ("cs_micro", "cs_macro", "hard_micro", "hard_macro", "success")


@dataclass(frozen=True)
class Metric:
    """A headline metric: one value per evaluation trajectory, averaged per query, then over queries."""

    label: str                                   # column title
    value: Callable[[dict, str, str], float]     # (scores, finish_reason, reward name) -> the trajectory's value
    needs: tuple[str, ...]                       # score keys every trajectory must carry for the metric
    aggregate: str | None = None                 # its key in eval-agent's metrics.json, if any
    rate: bool = True                            # a rate in [0, 1], shown as a fraction (the unit everywhere); else as is


def _flagged(scores: dict) -> bool:
    return hack_flags(scores)["hacked"]


def _reward_value(scores: dict, finish_reason: str, reward: str) -> float:
    return compute_reward(reward, scores, finish_reason)


# The headline metrics in the order the tables show them. One more per-query metric (say a loophole
# gap) is one more line here: the intervals, tests, tables, plot panels and MLflow metrics follow.
HEADLINE: dict[str, Metric] = {
    "delivery": Metric("delivery", lambda s, f, r: float(bool(s["delivered"])), ("delivered",), "delivery_rate"),
    "cs_micro": Metric("cs micro", lambda s, f, r: float(s["cs_micro"]), ("cs_micro",), "commonsense_micro"),
    "cs_macro": Metric("cs macro", lambda s, f, r: float(s["cs_macro"]), ("cs_macro",), "commonsense_macro"),
    "hard_micro": Metric("hard micro", lambda s, f, r: float(s["hard_micro"]), ("hard_micro",), "hard_micro"),
    "hard_macro": Metric("hard macro", lambda s, f, r: float(s["hard_macro"]), ("hard_macro",), "hard_macro"),
    "success": Metric("success", lambda s, f, r: float(bool(s["success"])), ("success",), "success_rate"),
    "mean_reward": Metric("mean reward", _reward_value, _PLAN_SCORES, None, rate=False),
    # Behaviour: where variants of a small model differ while next to no plan passes (the paired
    # SFT-vs-RL comparisons moved tool calls and answers long before success).
    "tool_calls": Metric("tool calls", lambda s, f, r: float(s["tool_calls"]), ("tool_calls",), "mean_tool_calls",
                         rate=False),
    "answered": Metric("answered", lambda s, f, r: float(f == "answer"), ()),
    "format_error": Metric("format error", lambda s, f, r: float(f == "format_error"), ()),
    "context_full": Metric("context full", lambda s, f, r: float(f == "context_overflow"), ()),
    # The reward-hacking audit (star.evaluation.audit): plans that leave slots the query requires empty
    # (short, skeletal or vacuous ones), and the reward they earn, so a gain made of stubs shows at a glance.
    "incomplete": Metric("incomplete plans", lambda s, f, r: float(_flagged(s)), ("slots_empty",)),
    "incomplete_reward": Metric("reward from incomplete plans",
                                lambda s, f, r: _reward_value(s, f, r) if _flagged(s) else 0.0,
                                (*_PLAN_SCORES, "slots_empty"), rate=False),
}


# The loophole audit (star.evaluation.audit): the share of plans passing the official evaluator but failing
# the strict one. eval-agent writes it as an aggregate only, so it is a column without an interval.
LOOPHOLE_GAP = "loophole gap"


class ReportError(ValueError):
    """The inputs cannot be compared (no variants, no shared queries, unreadable files)."""


def outcomes_from_trajectories(trajectories: list[dict]) -> dict[str, float]:
    """Per-query success: the mean of `scores.success` over that query's trajectories."""
    per: dict[str, list[float]] = {}
    for t in trajectories:
        qid = t.get("query_id")
        scores = t.get("scores") or {}
        if qid is None:
            continue
        success = scores.get("success", t.get("success"))
        per.setdefault(str(qid), []).append(float(bool(success)))
    return {q: float(np.mean(v)) for q, v in per.items()}


def samples_from_trajectories(trajectories: list[dict]) -> dict[str, list[tuple[dict, str]]]:
    """Per query, each trajectory's (scores + its tool calls, finish_reason), per-check detail left out."""
    per: dict[str, list[tuple[dict, str]]] = {}
    for t in trajectories:
        qid = t.get("query_id")
        if qid is None:
            continue
        scores = {k: v for k, v in (t.get("scores") or {}).items() if k != "checks"}
        if "tool_calls" in t:  # the episode's, beside its plan's scores: one dict per sample for every metric
            scores["tool_calls"] = t["tool_calls"]
        per.setdefault(str(qid), []).append((scores, str(t.get("finish_reason", ""))))
    return per


def per_query_metrics(samples: dict[str, list[tuple[dict, str]]], reward: str = "sum",
                      names: list[str] | None = None) -> dict[str, dict[str, float]]:
    """metric -> query id -> the mean of the metric over that query's samples, for each HEADLINE
    metric (or those in `names`) whose score keys every sample carries."""
    out: dict[str, dict[str, float]] = {}
    for name in names or list(HEADLINE):
        m = HEADLINE[name]
        if not samples or not all(k in s for runs in samples.values() for s, _ in runs for k in m.needs):
            continue
        out[name] = {q: float(np.mean([m.value(s, f, reward) for s, f in runs])) for q, runs in samples.items()}
    return out
