import pytest

from star.evaluation.rewards import REWARDS, MissingScore, compute_reward, curriculum_stage, resolve

SCORES = {"cs_micro": 0.875, "cs_macro": 0.0, "hard_micro": 0.6, "hard_macro": 0.0, "success": False,
          "delivered": True}
PERFECT = {"cs_micro": 1.0, "cs_macro": 1.0, "hard_micro": 1.0, "hard_macro": 1.0, "success": True}


def test_registry_has_the_recipe_rewards():
    assert {"sum", "macro", "success"} <= set(REWARDS)


def test_sum_macro_success_from_scores():
    assert compute_reward("sum", SCORES, "answer") == pytest.approx(1.475)
    assert compute_reward("macro", SCORES, "answer") == 0.0
    assert compute_reward("success", SCORES, "answer") == 0.0
    assert compute_reward("sum", PERFECT, "answer") == 5.0
    assert compute_reward("macro", PERFECT, "answer") == 3.0
    assert compute_reward("success", PERFECT, "answer") == 1.0


def test_format_error_earns_zero_whatever_the_scores():
    for name in ("sum", "macro", "success", "curriculum"):
        assert compute_reward(name, PERFECT, "format_error") == 0.0


def test_curriculum_switches_by_epoch():
    assert [curriculum_stage(e) for e in range(1, 7)] == ["sum", "sum", "macro", "macro", "success", "success"]
    assert compute_reward("curriculum", SCORES, "answer", epoch=2) == pytest.approx(1.475)
    assert compute_reward("curriculum", SCORES, "answer", epoch=3) == 0.0
    assert compute_reward("curriculum", PERFECT, "answer", epoch=5) == 1.0
    custom = [(1, "success"), (2, "sum")]
    assert resolve("curriculum", 1, custom) == "success" and resolve("curriculum", 4, custom) == "sum"


def test_unknown_reward_is_a_clear_error():
    with pytest.raises(ValueError, match="unknown reward 'dense'"):
        compute_reward("dense", SCORES, "answer")


def test_coverage_scales_sum_by_the_share_of_days_the_plan_covers():
    assert compute_reward("coverage", {**SCORES, "coverage": 1.0}, "answer") == pytest.approx(1.475)
    # a one-day stub of a 3-day trip passing half the commonsense checks vacuously
    stub = {"cs_micro": 0.5, "cs_macro": 0.0, "hard_micro": 0.0, "hard_macro": 0.0, "success": False,
            "coverage": 1 / 3}
    assert compute_reward("sum", stub, "answer") == pytest.approx(0.5)
    assert compute_reward("coverage", stub, "answer") == pytest.approx(0.5 / 3)
    assert compute_reward("coverage", {**PERFECT, "coverage": 1.0}, "format_error") == 0.0


def test_coverage_refuses_scores_that_predate_it_rather_than_reading_zero():
    with pytest.raises(MissingScore, match="coverage"):
        compute_reward("coverage", SCORES, "answer")
    assert compute_reward("coverage", {"cs_micro": 0.0}, "call_budget") == 0.0  # nothing to scale


def test_the_config_accepts_exactly_the_registered_rewards():
    from pydantic import ValidationError

    from star.evaluation.rewards import names
    from star.training.rl_config import GRPOConfig

    for name in names():
        assert GRPOConfig(reward=name).reward == name
    with pytest.raises(ValidationError, match="unknown reward 'dense'"):
        GRPOConfig(reward="dense")
    with pytest.raises(ValidationError, match="unknown reward 'curriculum'"):
        GRPOConfig(curriculum=[(1, "sum"), (2, "curriculum")])  # a schedule of schedules


def test_a_second_reward_of_one_name_is_refused_not_overwritten():
    from star.evaluation.rewards import register

    with pytest.raises(ValueError, match="'sum' is already registered"):
        register("sum")(lambda scores: 0.0)
    assert compute_reward("sum", PERFECT, "answer") == 5.0


def test_quality_pays_slot_credit_then_the_verdicts():
    partial = {**SCORES, "slot_credit": 0.5}
    assert compute_reward("quality", partial, "answer") == pytest.approx(0.5)
    assert compute_reward("quality", {**PERFECT, "slot_credit": 1.0}, "answer") == 4.0
    # hard macro pays only beside cs macro (the hard gate passes a trip that never comes home)
    assert compute_reward("quality", {**SCORES, "hard_macro": 1.0, "slot_credit": 0.8}, "answer") == pytest.approx(0.8)
    assert compute_reward("quality", {**PERFECT, "slot_credit": 1.0}, "format_error") == 0.0
    assert compute_reward("quality", {"delivered": False}, "call_budget") == 0.0  # no plan: nothing missing
    with pytest.raises(MissingScore, match="slot_credit"):
        compute_reward("quality", SCORES, "answer")
