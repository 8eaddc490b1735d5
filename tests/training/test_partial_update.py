"""`train_top_layers`: an update touches the top blocks and the final norm, nothing below them."""

import pytest
import torch

from star.cli import main
from star.training.models import load_model, trainable_parameters


def test_top_layers_and_final_norm_are_the_only_trainable_parameters(smoke_dir):
    model = load_model(smoke_dir)
    blocks = model.model.layers
    params = trainable_parameters(model, 1)
    expected = {id(p) for p in blocks[-1].parameters()} | {id(p) for p in model.model.norm.parameters()}
    assert {id(p) for p in params} == expected
    assert not model.model.embed_tokens.weight.requires_grad and not model.lm_head.weight.requires_grad


def test_every_parameter_trains_by_default(smoke_dir):
    model = load_model(smoke_dir)
    assert len(trainable_parameters(model, None)) == len(list(model.parameters()))


def test_more_top_layers_than_the_model_has_is_a_clear_error(smoke_dir):
    model = load_model(smoke_dir)
    with pytest.raises(ValueError, match=r"train_top_layers=99 but the model has \d+ blocks"):
        trainable_parameters(model, 99)


def test_sft_with_the_top_layer_changes_only_the_top_layer(tmp_path, smoke_dir, generated_db):
    from star.training.synthetic import scripted_conversations, write_sft_jsonl

    write_sft_jsonl(tmp_path / "sft.jsonl", scripted_conversations(generated_db, 4, seed=0, system="Plan trips.",
                                                                   max_obs_lines=1))
    code = main(["sft", "--data", str(tmp_path / "sft.jsonl"), "--model", str(smoke_dir), "--out",
                 str(tmp_path / "out"), "--set", "batch_size=2", "--set", "epochs=1", "--set", "max_steps=2",
                 "--set", "zero_stage=0", "--set", "train_top_layers=1", "--set", "learning_rate=1e-3", "--quiet"])
    assert code == 0
    _assert_only_the_top_block_changed(load_model(smoke_dir), load_model(tmp_path / "out"))


def test_a_grpo_update_with_the_top_layer_changes_only_the_top_layer_and_the_rollout_model_follows(
        tmp_path, smoke_dir, generated_db):
    from star.synthesis.pipeline import synthesize
    from star.training.grpo import GRPOTrainer
    from star.training.rl_config import GRPOConfig

    queries = synthesize(generated_db, 1, seed=0)
    cfg = GRPOConfig(train_top_layers=1, kl_coef=0.04, learning_rate=1e-3, num_generations=2, batch_queries=1,
                     max_new_tokens=8, max_context=2400, tool_call_budget=2, zero_stage=0, seed=0)
    trainer = GRPOTrainer(smoke_dir, queries, tmp_path / "rl", cfg, db=generated_db, progress=False)
    groups, _ = trainer.rollout(queries, seed=0)
    stats = trainer.update(groups, [[1.0, -1.0]])  # one better, one worse rollout: a real gradient
    assert stats["optimizer_steps"] == 1 and stats["grad_norm"] > 0
    changed = _assert_only_the_top_block_changed(load_model(smoke_dir), trainer.engine.module)
    synced, after = trainer.backend.model.state_dict(), trainer.engine.module.state_dict()
    assert all(torch.equal(synced[k], after[k]) for k in changed)


def _assert_only_the_top_block_changed(before_model, after_model) -> set[str]:
    """Some weights changed, all of them in the top block or the final norm; returns their names."""
    before, after = before_model.state_dict(), after_model.state_dict()
    top = len(before_model.model.layers) - 1
    changed = {k for k in before if not torch.equal(before[k], after[k])}
    assert changed and all(k.startswith((f"model.layers.{top}.", "model.norm.")) for k in changed), changed
    return changed
