import pytest
from pydantic import ValidationError

from star.training.config import SFTConfig, SmokeModelConfig, resolve_config
from star.training.rl_config import GRPOConfig


@pytest.mark.parametrize("cls", [SFTConfig, GRPOConfig, SmokeModelConfig])
def test_every_field_has_a_one_line_docstring(cls):
    for name, field in cls.model_fields.items():
        assert field.description and "\n" not in field.description, name


def test_paper_defaults():
    sft, rl = SFTConfig(), GRPOConfig()
    assert (sft.batch_size, sft.learning_rate, sft.warmup_ratio, sft.epochs) == (32, 5e-6, 0.1, 4)
    assert (rl.num_generations, rl.batch_queries, rl.learning_rate, rl.epochs, rl.kl_coef) == (8, 32, 2e-6, 5, 0.0)
    assert rl.epsilon_high > rl.epsilon_low and rl.max_context == 30000 and rl.tool_call_budget == 60


def test_profile_overrides_then_file_then_sets(tmp_path):
    assert resolve_config(SFTConfig, "sft", "paper-1.5b").epochs == 6
    assert resolve_config(SFTConfig, "sft", "smoke").batch_size == 8
    params = tmp_path / "params.yaml"
    params.write_text("sft:\n  epochs: 3\nrl:\n  reward: macro\n")
    assert resolve_config(SFTConfig, "sft", "smoke", params).epochs == 3
    cfg = resolve_config(GRPOConfig, "rl", None, params, ["algorithm=dapo", "epsilon_high=0.3"])
    assert (cfg.reward, cfg.algorithm, cfg.epsilon_high) == ("macro", "dapo", 0.3)


def test_bad_values_are_rejected():
    with pytest.raises(ValueError, match="unknown SFTConfig field"):
        resolve_config(SFTConfig, "sft", None, None, ["lr=1"])
    with pytest.raises(ValidationError):
        GRPOConfig(algorithm="ppo")
    with pytest.raises(ValidationError, match="arpo.initial"):
        GRPOConfig(algorithm="arpo", num_generations=4, arpo={"initial": 6})
    with pytest.raises(ValidationError, match="curriculum must start at epoch 1"):
        GRPOConfig(curriculum=[(2, "sum")])


def test_checkpoints_are_selected_by_the_runs_own_reward():
    from types import SimpleNamespace

    from star.training.grpo import GRPOTrainer

    assert GRPOTrainer.selection_reward(SimpleNamespace(cfg=GRPOConfig(reward="quality"))) == "quality"
    assert GRPOTrainer.selection_reward(SimpleNamespace(cfg=GRPOConfig(reward="macro"))) == "macro"
    # a curriculum is ranked by the reward it ends on, not by whichever stage validation falls in
    assert GRPOTrainer.selection_reward(SimpleNamespace(cfg=GRPOConfig(reward="curriculum"))) == "success"


def test_the_grpo_cli_offers_every_registered_reward_and_only_those(capsys):
    import pytest

    from star.cli import build_parser
    from star.evaluation.rewards import names

    parser = build_parser("grpo")
    base = ["grpo", "--model", "m", "--queries", "q", "--out", "o", "--reward"]
    assert [parser.parse_args([*base, n]).reward for n in names()] == names()
    with pytest.raises(SystemExit):
        parser.parse_args([*base, "dense"])
    assert "invalid choice: 'dense'" in capsys.readouterr().err
