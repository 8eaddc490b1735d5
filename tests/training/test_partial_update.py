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
    before, after = load_model(smoke_dir).state_dict(), load_model(tmp_path / "out").state_dict()
    top = len(load_model(smoke_dir).model.layers) - 1
    changed = {k for k in before if not torch.equal(before[k], after[k])}
    assert changed and all(k.startswith((f"model.layers.{top}.", "model.norm.")) for k in changed), changed
