"""A run is named by what it ran, and a failed one says where and why, in one line (no Prefect run here;
tests/orchestration/test_flow.py runs the flow itself, slowly)."""

from __future__ import annotations

import sys

import pytest

from star.ablations import overrides_label, overrides_slug, run_dir_name, variant_slug
from star.params_io import PROJECT_DIR, ConfigError
from star.orchestration.stages import StageError

sys.path.insert(0, str(PROJECT_DIR))
from flows.star_flow import (AblationFailed, VariantFailed, experiment_name, failure_line,  # noqa: E402
                             run_title)

LR = {"rl.learning_rate": 0.0002}


def test_overrides_and_a_non_default_profile_are_part_of_every_name():
    assert experiment_name("reward=sum", "smoke") == "reward-sum"        # the README's `dvc exp apply reward-macro`
    names = {experiment_name("reward=sum", p, o) for p in ("smoke", "cpu") for o in (None, LR)}
    assert names == {"reward-sum", "cpu_reward-sum", "reward-sum_rl.learning_rate-0.0002",
                     "cpu_reward-sum_rl.learning_rate-0.0002"}
    assert experiment_name(None, "smoke", LR) == "smoke-pipeline_rl.learning_rate-0.0002"
    assert run_dir_name("reward", LR) == "reward_rl.learning_rate-0.0002" and run_dir_name("reward", None) == "reward"
    assert run_title("reward", "cpu", LR) == "reward (cpu; rl.learning_rate=0.0002)"
    assert run_title("reward", "smoke", None) == "reward (smoke)"


def test_where_a_run_goes_is_not_what_it_ran():
    assert overrides_label({"flow.runs_dir": "/tmp/x", "tracking.experiment": "t", **LR}) == "rl.learning_rate=0.0002"


def test_override_names_are_safe_and_distinct():
    a = overrides_slug({"split.ratio": [1, 0, 0]})
    b = overrides_slug({"split.ratio": [1, 1, 0]})
    assert a != b
    for slug in (a, b, overrides_slug({"a.b": "x/../y z"}), overrides_slug({f"rl.k{i}": i for i in range(40)})):
        assert len(slug) <= 67 and ".." not in slug and all(c.isalnum() or c in "._-" for c in slug), slug
    assert variant_slug("reward=sum") == "reward-sum"


def test_a_failure_is_one_line_with_the_stage_and_the_reason():
    stage = StageError("stage split failed: ValueError: rl_size 100000 exceeds the pool\n(dvc repro exit status 1):\n…")
    assert failure_line(stage) == "stage split failed: ValueError: rl_size 100000 exceeds the pool"
    config = ConfigError("unknown ablation 'no_such_ablation'; known: reward, scale")
    assert failure_line(config) == "ConfigError: unknown ablation 'no_such_ablation'; known: reward, scale"
    variant = VariantFailed(f"size=too_big: {failure_line(stage)}")
    ablation = AblationFailed(f"1 of 2 variants failed: {failure_line(variant)}")
    assert failure_line(ablation) == ("1 of 2 variants failed: size=too_big: stage split failed: ValueError: "
                                      "rl_size 100000 exceeds the pool")


@pytest.mark.parametrize("exc", [RuntimeError(""), KeyError("k")])
def test_an_unexpected_error_still_names_its_type(exc):
    assert failure_line(exc).startswith(type(exc).__name__)
