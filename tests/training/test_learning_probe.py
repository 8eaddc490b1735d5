"""Learning probe: the real GRPOTrainer (rollout engine, DeepSpeed update, weight sync) must raise a
trivially learnable reward far beyond its seed-to-seed noise within a handful of steps.

The task (tests/training/probe.py): reply with one token; reward 1 when that token is in a fixed half of
the vocabulary. A random tiny model starts near 0.5, and any working policy gradient drives it towards 1
in a few steps. A flipped advantage sign drives it to 0, a loss mask that misses the policy tokens or a
weight sync that never reaches the rollout backend leaves it flat: loss-level unit tests catch none of these.
Checked by breaking the code locally: with the surrogate's sign flipped (losses.py) the three curves fell
from ~0.6 to 0.0-0.03 and the test failed; with update_weights skipped they stayed at 0.53-0.73 and it failed.
"""

from __future__ import annotations

import math
import statistics

import pytest

from tests.training.probe import N_ROLLOUTS, FirstTokenEnv, build_probe_model, run_probe

STEPS = 10
SEEDS = (0, 1, 2)


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory):
    return build_probe_model(tmp_path_factory.mktemp("probe") / "tiny")


def test_grpo_raises_a_learnable_reward_far_beyond_its_noise(tiny_dir, tmp_path):
    model_dir, targets = tiny_dir
    curves = [run_probe(model_dir, targets, tmp_path / f"seed{s}", s, STEPS) for s in SEEDS]
    print("probe reward curves:", curves)
    assert all(len(c) == STEPS for c in curves), curves
    first = [c[0] for c in curves]
    last = [statistics.fmean(c[-2:]) for c in curves]
    # Noise of one step's mean reward: binomial s.e. at the start rate over its rollouts, and the
    # seed-to-seed spread of the starting step; the rise must beat both many times over.
    p0 = statistics.fmean(first)
    se = math.sqrt(max(p0 * (1 - p0), 0.05) / N_ROLLOUTS)
    spread = statistics.stdev(first)
    for start, end, curve in zip(first, last, curves):
        assert end - start > max(5 * se, 3 * spread, 0.25), f"reward did not rise: {curves}"
        assert end > 0.85, f"reward did not rise: {curves}"


def test_a_time_limit_ends_grpo_after_the_step_that_crosses_it(tiny_dir, tmp_path):
    from star.training.rl_config import GRPOConfig
    from star.training.grpo import train_grpo

    model_dir, targets = tiny_dir
    cfg = GRPOConfig(num_generations=4, batch_queries=2, epochs=100, max_steps=50, time_limit_s=1e-3,
                     reward="success", max_new_tokens=1, max_context=256, save_every=0, zero_stage=0)
    queries = [{"id": f"p{i}", "prompt": f"Say one word, number {i}."} for i in range(2)]
    summary = train_grpo(model_dir, queries, tmp_path, cfg, progress=False,
                         env_factory=lambda s: FirstTokenEnv(targets))
    assert summary["steps"] == 1 and summary["stopped_by_time_limit"]
    assert (tmp_path / "selected" / "config.json").is_file()  # the model of the last step is kept


def test_a_dapo_steps_metrics_count_the_rollouts_of_every_draw(tiny_dir, tmp_path):
    """Over-sampling draws more queries until groups carry signal; the step's reward and finish rates are over
    all of them (a step whose informative group came from its third draw once logged reward 0 from the first)."""
    import json

    from star.training.rl_config import GRPOConfig
    from star.training.grpo import train_grpo

    model_dir, _ = tiny_dir
    cfg = GRPOConfig(algorithm="dapo", dapo={"oversample": True, "max_draws": 3}, num_generations=2, batch_queries=2,
                     max_steps=1, reward="success", max_new_tokens=1, max_context=256, save_every=0, zero_stage=0)
    queries = [{"id": f"p{i}", "prompt": f"Say one word, number {i}."} for i in range(8)]
    # No token is a target: every group is all zeros, so DAPO drops each and draws to its limit.
    train_grpo(model_dir, queries, tmp_path, cfg, progress=False, env_factory=lambda s: FirstTokenEnv(frozenset()))
    step = json.loads((tmp_path / "metrics.jsonl").read_text().splitlines()[0])
    assert step["dapo_draws"] == 3 and step["groups"] == 0 and step["groups_dropped"] == 6
    assert step["rollouts"] == 3 * 2 * 2 and step["reward_mean"] == 0.0
