"""SFT then GRPO through the CLI with the real rollout engine, evaluator and DeepSpeed (tiny settings)."""

import json

import pytest

from star.cli import main

TINY_RL = ["--set", "batch_queries=1", "--set", "num_generations=2", "--set", "max_new_tokens=8",
           "--set", "max_context=2400", "--set", "tool_call_budget=2", "--set", "arpo.initial=1",
           "--set", "save_every=1", "--set", "zero_stage=1", "--quiet"]


@pytest.fixture(scope="module")
def pipeline_inputs(tmp_path_factory, generated_db):
    from star.jsonl import write_jsonl
    from star.synthesis.pipeline import synthesize
    from star.training.synthetic import scripted_conversations, write_sft_jsonl

    root = tmp_path_factory.mktemp("e2e")
    write_sft_jsonl(root / "sft.jsonl", scripted_conversations(generated_db, 6, seed=0, system="Plan trips.",
                                                               max_obs_lines=1))
    write_jsonl(root / "rl.jsonl", synthesize(generated_db, 3, seed=0))
    return root


@pytest.fixture(scope="module")
def sft_model(pipeline_inputs, smoke_dir):
    out = pipeline_inputs / "sft"
    code = main(["sft", "--data", str(pipeline_inputs / "sft.jsonl"), "--model", str(smoke_dir), "--out", str(out),
                 "--set", "batch_size=2", "--set", "epochs=1", "--set", "max_steps=2", "--set", "zero_stage=0",
                 "--quiet"])
    assert code == 0
    return out


def test_sft_saves_a_loadable_model_with_metrics(sft_model):
    from star.training.models import load_model, load_tokenizer

    summary = json.loads((sft_model / "sft_summary.json").read_text())
    assert summary["steps"] == 2 and summary["profile"] == "smoke"
    rows = [json.loads(x) for x in (sft_model / "sft_metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows] == [1, 2] and all(r["loss"] > 0 for r in rows)
    # ZeRO 0 with a torch optimizer: DeepSpeed keeps no norm, so the trainer measures it before the step
    assert all(r["grad_norm"] > 0 and r["grad_norm"] == r["grad_norm"] for r in rows)
    assert load_model(sft_model).config.model_type == "qwen2" and load_tokenizer(sft_model).chat_template


def test_one_grpo_step_end_to_end(sft_model, pipeline_inputs):
    out = pipeline_inputs / "rl-grpo"
    code = main(["grpo", "--model", str(sft_model), "--queries", str(pipeline_inputs / "rl.jsonl"), "--out", str(out),
                 "--val", str(pipeline_inputs / "rl.jsonl"), "--db", "generated", "--set", "max_steps=1",
                 "--set", "validation.every=1", "--set", "validation.queries=1", *TINY_RL])
    assert code == 0
    row = json.loads((out / "metrics.jsonl").read_text().splitlines()[0])
    for key in ("reward_mean", "reward_std", "success_rate", "cs_micro", "hard_macro", "response_tokens", "tool_calls",
                "grad_norm", "step_time_s", "rollout_time_s", "update_time_s", "groups_dropped", "branches"):
        assert key in row, key
    assert (out / "last" / "config.json").is_file()
    val = json.loads((out / "metrics.jsonl").read_text().splitlines()[1])
    assert val["step"] == 1 and "val_success_rate" in val
    assert json.loads((out / "best" / "best.json").read_text())["step"] == 1  # first validation is the best so far
    # Evaluation reads selected/: the best validated model, here the one validation's step.
    assert json.loads((out / "selected" / "selected.json").read_text()) == {"from": "best", "step": 1}
    assert json.loads((out / "summary.json").read_text())["selected"] == {"from": "best", "step": 1}
    assert (out / "selected" / "model.safetensors").read_bytes() == (out / "best" / "model.safetensors").read_bytes()
    assert (out / "checkpoints" / "step-000001" / "trainer_state.json").is_file()


@pytest.mark.parametrize("zero_stage", [1, 3])
def test_an_exported_checkpoint_holds_the_weights_of_its_step(sft_model, tmp_path, zero_stage):
    import torch

    from star.training import checkpoint
    from star.training import deepspeed_setup as dss
    from star.training.models import load_model, load_tokenizer

    model = load_model(sft_model)
    before = {k: v.clone() for k, v in model.state_dict().items()}
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    engine = dss.initialize(model, optimizer, None, dss.ds_config(1, 1, zero_stage, False, 1.0))
    ids = torch.tensor([[1, 2, 3, 4]])
    engine.backward(engine(input_ids=ids, labels=ids).loss)
    engine.step()
    after = dss.full_state_dict(engine)
    checkpoint.save(engine, tmp_path / "checkpoints", 1, {})

    out = tmp_path / "step1"
    assert main(["export-checkpoint", "--checkpoint", str(tmp_path / "checkpoints" / "step-000001"),
                 "--model", str(sft_model), "--out", str(out)]) == 0
    exported = load_model(out).state_dict()
    assert any(not exported[k].equal(before[k]) for k in before)  # the update is in there
    assert all(torch.allclose(exported[k], after[k].float().cpu()) for k in after)
    assert json.loads((out / "exported.json").read_text())["step"] == 1
    assert load_tokenizer(out).chat_template == load_tokenizer(sft_model).chat_template


def test_exporting_a_zero0_checkpoint_reads_the_module_state(sft_model, tmp_path):
    import torch

    from star.training.models import load_model

    model = load_model(sft_model)
    state = {k: v + 1.0 for k, v in model.state_dict().items()}
    ckpt = tmp_path / "checkpoints" / "step-000003"
    ckpt.mkdir(parents=True)
    torch.save({"module": state}, ckpt / "mp_rank_00_model_states.pt")
    (ckpt / "trainer_state.json").write_text(json.dumps({"step": 3}))
    out = tmp_path / "step3"
    assert main(["export-checkpoint", "--checkpoint", str(ckpt), "--model", str(sft_model), "--out", str(out)]) == 0
    loaded = load_model(out).state_dict()
    assert all(loaded[k].equal(state[k]) for k in state)


def test_exporting_an_incomplete_checkpoint_is_a_clear_error(sft_model, tmp_path, capsys):
    ckpt = tmp_path / "step-000002"
    ckpt.mkdir()
    code = main(["export-checkpoint", "--checkpoint", str(ckpt), "--model", str(sft_model), "--out", str(tmp_path / "x")])
    assert code == 2
    assert "not a complete checkpoint (no trainer_state.json" in capsys.readouterr().err
    assert not (tmp_path / "x").exists()


def test_bad_config_field_is_a_clear_cli_error(sft_model, pipeline_inputs, capsys):
    code = main(["grpo", "--model", str(sft_model), "--queries", str(pipeline_inputs / "rl.jsonl"),
                 "--out", str(pipeline_inputs / "bad"), "--set", "group_size=8"])
    assert code == 2
    assert "unknown GRPOConfig field(s) ['group_size']" in capsys.readouterr().err


@pytest.mark.slow
@pytest.mark.parametrize("algorithm,reward", [("grpo", "sum"), ("grpo", "macro"), ("grpo", "success"),
                                              ("grpo", "curriculum"), ("dapo", "sum"), ("dapo-oversample", "sum"),
                                              ("arpo", "macro"), ("grpo-kl", "sum")])
def test_each_algorithm_and_reward_runs(sft_model, pipeline_inputs, algorithm, reward):
    out = pipeline_inputs / f"rl-{algorithm}-{reward}"
    extra = {"dapo-oversample": ["--set", "dapo.oversample=true"],
             "grpo-kl": ["--set", "kl_coef=0.05"]}.get(algorithm, [])
    algorithm = algorithm.split("-")[0]
    code = main(["grpo", "--model", str(sft_model), "--queries", str(pipeline_inputs / "rl.jsonl"), "--out", str(out),
                 "--db", "generated", "--algorithm", algorithm, "--reward", reward, "--set", "max_steps=2", *extra,
                 "--set", "env_failure_rate=0.1", *TINY_RL])
    assert code == 0
    rows = [json.loads(x) for x in (out / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows] == [1, 2]
    assert json.loads((out / "selected" / "selected.json").read_text()) == {"from": "last", "step": 2}  # no validation
    if algorithm == "arpo":
        assert all(r["branches"] <= 1 for r in rows)  # budget: G - initial = 1 per query
    if extra and extra[1].startswith("kl_coef"):
        assert all("kl_ref" in r for r in rows)  # the KL term ran against the frozen reference


@pytest.mark.slow
def test_resume_with_real_rollouts_continues_from_the_checkpoint(sft_model, pipeline_inputs):
    out = pipeline_inputs / "rl-resume"
    args = ["grpo", "--model", str(sft_model), "--queries", str(pipeline_inputs / "rl.jsonl"), "--out", str(out),
            "--db", "generated", *TINY_RL]
    assert main([*args, "--set", "max_steps=1"]) == 0
    assert main([*args, "--set", "max_steps=2", "--resume"]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["resumed"] and summary["steps"] == 2


def _curve(out) -> list[dict]:
    keep = ("step", "loss", "reward_mean", "grad_norm", "response_tokens", "tool_calls")
    return [{k: r.get(k) for k in keep} for r in map(json.loads, (out / "metrics.jsonl").read_text().splitlines())]


def test_a_cut_off_stage_resumes_from_checkpoints_outside_its_outputs(sft_model, pipeline_inputs):
    """DVC removes a stage's outputs before it reruns; checkpoints kept beside them carry the run over,
    and the resumed run ends where an uninterrupted one does."""
    import shutil

    root = pipeline_inputs
    base = ["grpo", "--model", str(sft_model), "--queries", str(root / "rl.jsonl"), "--db", "generated",
            *TINY_RL, "--set", "max_steps=2"]
    assert main([*base, "--out", str(root / "rl-whole")]) == 0
    out, ckpt = root / "rl-cut", root / "ckpt-cut"
    # Cut off after step 1 (a time limit stands in for the kill): its step-1 checkpoint stays.
    assert main([*base, "--out", str(out), "--checkpoints", str(ckpt), "--resume", "--set", "time_limit_s=0.001"]) == 0
    assert json.loads((out / "summary.json").read_text())["steps"] == 1
    assert (ckpt / "step-000001" / "trainer_state.json").is_file()
    shutil.rmtree(out)  # what `dvc repro` does to the stage's outs
    assert main([*base, "--out", str(out), "--checkpoints", str(ckpt), "--resume"]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["resumed"] and summary["steps"] == 2
    assert _curve(out) == _curve(root / "rl-whole")  # step 1 carried over, step 2 the same as uninterrupted
    assert not ckpt.exists()  # finished: the checkpoints go


def test_a_checkpoint_of_another_run_is_not_resumed(sft_model, pipeline_inputs):
    root = pipeline_inputs
    base = ["grpo", "--model", str(sft_model), "--queries", str(root / "rl.jsonl"), "--db", "generated", *TINY_RL]
    ckpt, out = root / "ckpt-other", root / "rl-other"
    assert main([*base, "--out", str(out), "--checkpoints", str(ckpt), "--set", "max_steps=2",
                 "--set", "time_limit_s=0.001"]) == 0
    assert (ckpt / "step-000001").is_dir()
    # Another learning rate: that run's step-1 state must not become this run's.
    assert main([*base, "--out", str(out), "--checkpoints", str(ckpt), "--resume", "--set", "max_steps=1",
                 "--set", "learning_rate=0.5"]) == 0
    assert json.loads((out / "summary.json").read_text())["resumed"] is False


def test_a_cut_off_sft_resumes_from_its_checkpoint_and_ends_as_an_uninterrupted_run(pipeline_inputs, smoke_dir,
                                                                                    monkeypatch):
    import shutil

    from star.training.metrics import MetricsLogger

    from star.training.sft import train_sft
    from star.training.config import SFTConfig

    cfg = SFTConfig(batch_size=2, epochs=1, zero_stage=0, save_every=1, learning_rate=1e-3)
    data = pipeline_inputs / "sft.jsonl"
    whole = train_sft(data, smoke_dir, pipeline_inputs / "sft-whole", cfg.model_copy(update={"max_steps": 3}),
                      progress=False)
    out, ckpt = pipeline_inputs / "sft-cut", pipeline_inputs / "sft-ckpt"
    # Killed while logging step 2 (after step 1's checkpoint): the run dies mid-way.
    log = MetricsLogger.log

    def dies_at_step_2(self, step, row):
        if step == 2:
            raise KeyboardInterrupt("killed")
        return log(self, step, row)

    monkeypatch.setattr(MetricsLogger, "log", dies_at_step_2)
    with pytest.raises(KeyboardInterrupt):
        train_sft(data, smoke_dir, out, cfg.model_copy(update={"max_steps": 3}), progress=False, checkpoints=ckpt)
    monkeypatch.setattr(MetricsLogger, "log", log)
    assert (ckpt / "step-000001" / "trainer_state.json").is_file()
    shutil.rmtree(out)  # what `dvc repro` does to the stage's outs
    resumed = train_sft(data, smoke_dir, out, cfg.model_copy(update={"max_steps": 3}), progress=False,
                        checkpoints=ckpt, resume=True)
    assert resumed["resumed_from_step"] == 1 and resumed["steps"] == 3
    rows = lambda d: [(r["step"], r["loss"]) for r in map(json.loads, (d / "sft_metrics.jsonl").read_text().splitlines())]  # noqa: E731
    assert rows(out) == rows(pipeline_inputs / "sft-whole")
    assert resumed["first_loss"] == whole["first_loss"] and resumed["last_loss"] == whole["last_loss"]
    assert (out / "model.safetensors").read_bytes() == (pipeline_inputs / "sft-whole" / "model.safetensors").read_bytes()
    assert not ckpt.exists()
