"""`star sft --first-turns`: a copy stage on the short first-turn examples, then the trajectories from its model."""

import json

import pytest
import torch

from star.cli import main
from star.training.models import load_model


@pytest.fixture
def sft_inputs(tmp_path, generated_db):
    from star.jsonl import write_jsonl
    from star.training.synthetic import scripted_conversations, write_sft_jsonl

    convs = scripted_conversations(generated_db, 4, seed=0, system="Plan trips.", max_obs_lines=1)
    write_sft_jsonl(tmp_path / "sft.jsonl", convs)
    openings = [{"messages": [m for m in c if m["role"] != "system"][:2], "first_turn": True}
                for c in scripted_conversations(generated_db, 6, seed=1, system="Plan trips.", max_obs_lines=1)]
    write_jsonl(tmp_path / "first_turns.jsonl", openings)
    return tmp_path


def _sft(inputs, out, *extra):
    return main(["sft", "--data", str(inputs / "sft.jsonl"), "--model", str(extra[0]), "--out", str(out),
                 "--checkpoints", str(inputs / "ckpt" / out.name), "--set", "batch_size=2", "--set", "epochs=1",
                 "--set", "max_steps=2", "--set", "zero_stage=0", "--set", "learning_rate=1e-3",
                 "--set", "eval_fraction=0", "--quiet", *extra[1:]])


def test_the_copy_stage_trains_first_and_the_trajectories_start_from_its_model(sft_inputs, smoke_dir):
    plain, staged = sft_inputs / "plain", sft_inputs / "staged"
    assert _sft(sft_inputs, plain, smoke_dir) == 0
    assert _sft(sft_inputs, staged, smoke_dir, "--first-turns", str(sft_inputs / "first_turns.jsonl"),
                "--set", "first_turn_epochs=3", "--set", "first_turn_batch_size=2") == 0
    copy = json.loads((staged / "first_turns" / "sft_summary.json").read_text())
    assert copy["train"] == 6 and copy["steps"] == 3 * 3  # ceil(6 / 2) steps an epoch, 3 epochs
    assert copy["config"]["batch_size"] == copy["config"]["micro_batch_size"] == 2
    assert len((staged / "first_turns" / "sft_metrics.jsonl").read_text().splitlines()) == 9
    assert json.loads((staged / "sft_summary.json").read_text())["steps"] == 2  # then the trajectories, as set
    a, b = load_model(plain).state_dict(), load_model(staged).state_dict()
    assert any(not torch.equal(a[k], b[k]) for k in a)  # same data, seed and steps: only the start differs
    assert not (sft_inputs / "ckpt" / "staged-first-turns").exists()  # the copy model is removed at the end


@pytest.mark.parametrize("how", ["no epochs", "empty file"])
def test_no_copy_stage_without_epochs_or_examples(sft_inputs, smoke_dir, how):
    ft = sft_inputs / "first_turns.jsonl"
    if how == "empty file":
        ft.write_text("")
    epochs = "0" if how == "no epochs" else "2"
    out = sft_inputs / "out"
    assert _sft(sft_inputs, out, smoke_dir, "--first-turns", str(ft), "--set", f"first_turn_epochs={epochs}") == 0
    assert not (out / "first_turns").exists() and (out / "sft_summary.json").is_file()
