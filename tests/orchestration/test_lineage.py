"""Datasets, models and episodes as MLflow entities, against a real sqlite store in a temporary directory."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from star.orchestration.stage_run import outputs_digest, parse_stage_command, run_name
from star.tracking import lineage
from star.tracking.config import TrackingConfig
from star.tracking.episodes import episode_rows, log_episode_table, log_episode_traces
from star.tracking.mlflow_logging import Tracker

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


@pytest.fixture(scope="module")
def tracker(tmp_path_factory):
    root = tmp_path_factory.mktemp("mlflow")
    return Tracker(TrackingConfig(experiment="lineage-test"), project_dir=root, uri=f"sqlite:///{root}/mlflow.db")


def _model_dir(path, weights: bytes):
    path.mkdir(parents=True)
    (path / "config.json").write_text('{"model_type": "qwen2"}')
    (path / "model.safetensors").write_bytes(weights)
    return path


def test_data_files_become_dataset_inputs_with_digest_context_and_rows(tracker, tmp_path):
    (tmp_path / "data/splits").mkdir(parents=True)
    (tmp_path / "data/splits/val.jsonl").write_text('{"id": 1}\n{"id": 2}\n')
    deps = ["star/cli.py", "data/splits/val.jsonl", "models/sft", "data/missing.jsonl"]
    assert lineage.data_deps(deps, tmp_path) == ["data/splits/val.jsonl"]
    run = tracker.start_run("eval_agent_rl", "stage")
    lineage.log_datasets(tracker.client, run, ["data/splits/val.jsonl"], tmp_path, lineage.dataset_context("eval_agent@rl"))
    (inp,) = tracker.client.get_run(run).inputs.dataset_inputs
    assert inp.dataset.name == "data/splits/val.jsonl"
    assert inp.dataset.digest == lineage.path_digest(tmp_path / "data/splits/val.jsonl")[:16]
    assert {t.key: t.value for t in inp.tags} == {"mlflow.data.context": "evaluation", "star.rows": "2"}
    assert lineage.dataset_context("sft") == "training" and lineage.dataset_context("split") == "input"


def test_a_trained_model_is_logged_registered_and_found_again_by_its_weights(tracker, tmp_path):
    _model_dir(tmp_path / "models/rl/selected", b"weights-A")
    _model_dir(tmp_path / "models/rl/last", b"weights-B")
    outs = lineage.model_dirs(["models/rl"], tmp_path)
    assert outs == ["models/rl/last", "models/rl/selected"]
    run = tracker.start_run("reward=sum · grpo", "stage")
    ids = lineage.log_models(tracker.client, tracker.experiment_id, run, outs, tmp_path, "grpo", "smoke",
                             "reward=sum", {"rl.reward": "sum"})
    assert len(ids) == 2
    model = tracker.client.get_logged_model(ids[1])
    assert model.tags[lineage.MODEL_PATH] == "models/rl/selected" and model.source_run_id == run
    assert model.params == {"rl.reward": "sum"}
    versions = tracker.client.search_model_versions(f"name = '{lineage.registered_name('smoke')}'")
    assert {v.tags["star.path"] for v in versions} >= {"models/rl/selected", "models/rl/last"}
    # an evaluation finds the model by its weights wherever the directory is, and logs metrics against it
    copy = _model_dir(tmp_path / "elsewhere", b"weights-A")
    assert lineage.find_model(tracker.client, tracker.experiment_id, copy) == ids[1]
    assert lineage.find_model(tracker.client, tracker.experiment_id, _model_dir(tmp_path / "new", b"other")) is None
    ev = tracker.start_run("reward=sum · eval_agent_rl", "stage")
    lineage.link_model_input(tracker.client, ev, ids[1])
    lineage.log_model_metrics(tracker.client, ev, ids[1], {"eval.success_rate": 0.25})
    assert tracker.client.get_run(ev).inputs.model_inputs[0].model_id == ids[1]
    assert {m.key: m.value for m in tracker.client.get_logged_model(ids[1]).metrics} == {"eval.success_rate": 0.25}


EPISODES = [
    {"query_id": "q1", "level": "easy", "sample": 0, "finish_reason": "answer", "tool_calls": 1,
     "answer": "Day 1:\nCurrent City: from A to B", "scores": {"delivered": True, "cs_micro": 0.5, "success": False},
     "messages": [{"role": "system", "content": "s"}, {"role": "user", "content": "plan a trip"},
                  {"role": "assistant", "content": '<think>x</think><tool_call>{"name": "SearchCity", '
                                                   '"arguments": {"state": "Texas"}}</tool_call>'},
                  {"role": "user", "content": "<tool_response>Austin</tool_response>"},
                  {"role": "assistant", "content": "<think>y</think><answer>Day 1:</answer>"}]},
    {"query_id": "q2", "finish_reason": "format_error", "format_error": "bad_json", "tool_calls": 0,
     "scores": {"delivered": False}, "messages": [{"role": "system", "content": "s"},
                                                  {"role": "user", "content": "q"},
                                                  {"role": "assistant", "content": "<think>"}]},
]


def test_episodes_are_a_table_row_and_a_trace_each(tracker):
    rows = episode_rows(EPISODES)
    assert rows[0]["tools"] == "SearchCity" and rows[0]["delivered"] == 1.0 and rows[0]["plan"].startswith("Day 1")
    assert rows[1]["format_error"] == "bad_json" and rows[1]["plan"] == ""
    run = tracker.start_run("eval_agent_sft", "stage")
    assert log_episode_table(tracker.client, run, EPISODES, "episodes/trajectories.json") == 2
    table = json.loads(Path(tracker.client.download_artifacts(run, "episodes/trajectories.json")).read_text())
    assert table["columns"][:2] == ["episode", "query_id"] and len(table["data"]) == 2
    assert log_episode_traces(tracker.client, tracker.experiment_id, run, EPISODES) == 2
    traces = tracker.client.search_traces(locations=[tracker.experiment_id], run_id=run)
    assert len(traces) == 2
    spans = {s.name for t in traces for s in t.data.spans}
    assert {"turn 1: SearchCity", "observation 2", "turn 3: answer", "turn 1: format_error"} <= spans


def test_a_restored_stage_finds_its_computing_run_by_the_digest_of_its_result_files(tmp_path):
    cmd = (".venv/bin/python -m star.orchestration.stage_run --params params.yaml eval_agent_rl --sections eval "
           "--eval eval=m/metrics.json --trajectories m/trajectories.jsonl -- star eval-agent --model x")
    args = parse_stage_command(cmd)
    assert args.stage == "eval_agent_rl" and args.eval_tables == ["eval=m/metrics.json"]
    assert parse_stage_command("star sandbox --out data/sandbox") is None
    assert outputs_digest(args, tmp_path) is None  # nothing written yet
    (tmp_path / "m").mkdir()
    (tmp_path / "m/metrics.json").write_text("{}")
    (tmp_path / "m/trajectories.jsonl").write_text("{}\n")
    first = outputs_digest(args, tmp_path)
    assert first and outputs_digest(args, tmp_path) == first
    (tmp_path / "m/metrics.json").write_text('{"n": 1}')
    assert outputs_digest(args, tmp_path) != first


def test_stage_runs_are_named_as_dvc_names_the_stage(monkeypatch):
    from star.orchestration.stage_run import stage_label

    monkeypatch.setenv("DVC_STAGE", "eval_agent@rl")
    assert stage_label("eval_agent_rl") == "eval_agent@rl"
    monkeypatch.setenv("DVC_STAGE", "learn/dvc.yaml:learn_sft@learn")
    assert stage_label("learn_sft") == "learn_sft"
    monkeypatch.delenv("DVC_STAGE")
    assert stage_label("grpo") == "grpo"


def test_stage_runs_are_named_by_variant_and_stage():
    assert run_name("grpo", {"run": {"variant": "reward=sum"}}) == "reward=sum · grpo"
    assert run_name("grpo", {"run": {"variant": None}}) == "grpo"
