"""MLflow logging against a real sqlite store in a temporary directory."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from star.tracking.config import TrackingConfig
from star.tracking.mlflow_logging import PARENT_ENV, Tracker, eval_rows, read_jsonl, trajectory_markdown
from star.orchestration.stage_run import normalise_command

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


@pytest.fixture(scope="module")
def tracker(tmp_path_factory):
    root = tmp_path_factory.mktemp("mlflow")
    return Tracker(TrackingConfig(experiment="star-test"), project_dir=root, uri=f"sqlite:///{root}/mlflow.db")


def test_parent_child_and_stage_runs_nest(tracker):
    parent = tracker.start_run("reward (smoke)", "ablation", tags={"star.ablation": "reward"})
    child = tracker.start_run("reward=sum", "variant", parent_id=parent)
    stage = tracker.start_run("grpo", "stage", parent_id=child)
    for r in (stage, child, parent):
        tracker.end_run(r)
    assert [r.info.run_id for r in tracker.children(parent)] == [child]
    assert [r.info.run_id for r in tracker.children(child)] == [stage]
    run = tracker.client.get_run(parent)
    assert run.data.tags["star.kind"] == "ablation" and run.info.status == "FINISHED"
    assert "git.commit" in run.data.tags  # provenance tag (this checkout is a git repository)


def test_params_are_flattened(tracker):
    from star.config import resolve

    run = tracker.start_run("params", "variant")
    tracker.log_params(run, resolve("smoke").values)
    params = tracker.client.get_run(run).data.params
    assert params["rl.num_generations"] == "8" and params["sandbox.db"] == "generated:0"
    many = tracker.start_run("many", "variant")
    tracker.log_params(many, {"grid": {f"k{i}": i for i in range(150)}})  # more than one batch of 100
    assert len(tracker.client.get_run(many).data.params) == 150


def test_step_metrics_keep_their_history(tracker):
    run = tracker.start_run("grpo", "stage")
    n = tracker.log_step_metrics(run, [{"step": s, "reward_mean": 0.1 * s, "entropy": 1 - 0.1 * s,
                                        "note": "text is skipped", "per_level": {"easy": 0.5}} for s in range(5)])
    assert n == 15
    hist = tracker.client.get_metric_history(run, "reward_mean")
    assert [(m.step, round(m.value, 3)) for m in sorted(hist, key=lambda m: m.step)] == \
        [(s, round(0.1 * s, 3)) for s in range(5)]
    assert len(tracker.client.get_metric_history(run, "per_level.easy")) == 5


def test_eval_table_is_metrics_and_artifacts(tracker, tmp_path):
    run = tracker.start_run("evaluate", "stage")
    table = {"success_rate": 0.25, "commonsense_micro": 0.9, "by_level": {"easy": {"success_rate": 0.5}},
             "checks": {"valid_cost": 0.75}, "mode": "official", "config": {"temperature": 0.7, "samples": 2}}
    assert tracker.log_eval_table(run, table) == 4
    data = tracker.client.get_run(run).data
    assert data.metrics["eval.success_rate"] == 0.25 and data.metrics["eval.by_level.easy.success_rate"] == 0.5
    # the settings that produced the table are params, not constant "metrics" the UI's charts would pick
    assert not any(".config." in k for k in data.metrics)
    assert data.params["eval.config.temperature"] == "0.7" and data.params["eval.config.samples"] == "2"
    arts = {a.path for a in tracker.client.list_artifacts(run, "eval")}
    assert arts == {"eval/metrics.json", "eval/metrics.csv"}
    assert ("by_level.easy", "success_rate", 0.5) in eval_rows(table)
    csv_text = tracker.client.download_artifacts(run, "eval/metrics.csv", str(tmp_path))
    assert "temperature" not in open(csv_text).read()


def test_ui_links_open_mlflows_machine_learning_view():
    from star.tracking.mlflow_logging import ui_url

    assert ui_url("http://127.0.0.1:5000/", "3") == "http://127.0.0.1:5000/#/experiments/3/runs?workflowType=machine_learning"
    assert ui_url("http://h:5000", "3", "abc", "/artifacts/report/report.md") == \
        "http://h:5000/#/experiments/3/runs/abc/artifacts/report/report.md?workflowType=machine_learning"


def test_a_result_files_config_is_params(tracker):
    run = tracker.start_run("sft", "stage")
    assert tracker.log_results(run, {"final_loss": 1.5, "steps": 44, "config": {"learning_rate": 0.003}}) == 2
    data = tracker.client.get_run(run).data
    assert set(data.metrics) == {"final_loss", "steps"} and data.params == {"config.learning_rate": "0.003"}


def test_sample_trajectories_are_readable_artifacts(tracker):
    run = tracker.start_run("teacher", "stage")
    trajs = [{"query_id": f"q{i}", "messages": [{"role": "user", "content": "Plan a trip"},
                                                {"role": "assistant", "content": "<answer>Day 1</answer>"}],
              "scores": {"success": True}, "plan": [{"days": 1}]} for i in range(4)]
    assert tracker.log_trajectories(run, trajs, n=2) == 2
    names = sorted(a.path for a in tracker.client.list_artifacts(run, "trajectories"))
    assert names == ["trajectories/00_q0.md", "trajectories/01_q1.md", "trajectories/sample.jsonl"]
    assert "## assistant" in trajectory_markdown(trajs[0])


def test_read_jsonl_names_the_bad_line(tmp_path):
    p = tmp_path / "steps.jsonl"
    p.write_text('{"step": 0}\n\n[1]\n')
    with pytest.raises(ValueError, match="steps.jsonl:3"):
        read_jsonl(p)


def test_none_options_are_dropped_and_star_runs_with_this_interpreter():
    assert normalise_command(["star", "grpo", "--max-steps", "None", "--lr", "1e-6"]) == \
        [sys.executable, "-m", "star.cli", "grpo", "--lr", "1e-6"]


def _stage_run(tmp_path, monkeypatch, capfd, uri, *args):
    """The wrapper in this process (mlflow already imported); the stage command is a real subprocess."""
    from star.orchestration.stage_run import main

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)  # the module's store: one schema migration per session
    monkeypatch.delenv(PARENT_ENV, raising=False)
    rc = main(list(args))
    out = capfd.readouterr().out
    return rc, (out.split("RUN ")[1].split()[0] if "RUN " in out else None)


def test_stage_wrapper_logs_a_nested_run_and_the_stage_outputs(tracker, tmp_path, monkeypatch, capfd):
    (tmp_path / "params.yaml").write_text("run: {profile: smoke}\nrl: {learning_rate: 0.001}\n"
                                          "tracking: {experiment: wrapped}\n")
    script = ("import json,os,pathlib;"
              "pathlib.Path('steps.jsonl').write_text(''.join(json.dumps({'step': s, 'reward_mean': s / 10}) + '\\n'"
              " for s in range(3)));"
              "pathlib.Path('m.json').write_text(json.dumps({'success_rate': 0.5}));"
              "print('RUN', os.environ['MLFLOW_RUN_ID'])")
    rc, run_id = _stage_run(tmp_path, monkeypatch, capfd, tracker.uri, "grpo", "--params", "params.yaml",
                            "--sections", "rl", "--steps", "steps.jsonl",
                            "--eval", "eval=m.json", "--project-dir", str(tmp_path), "--", sys.executable, "-c", script)
    assert rc == 0
    t = Tracker(TrackingConfig(experiment="wrapped"), project_dir=tmp_path, uri=tracker.uri)
    run = t.client.get_run(run_id)
    assert run.info.status == "FINISHED" and run.data.params == {"rl.learning_rate": "0.001"}
    assert run.data.metrics["eval.success_rate"] == 0.5 and run.data.metrics["reward_mean"] == 0.2
    parent = t.client.get_run(run.data.tags["mlflow.parentRunId"])
    assert parent.data.tags["star.kind"] == "pipeline"  # `dvc repro` pipeline run


@pytest.mark.slow
def test_stages_of_one_dvc_repro_share_one_pipeline_run(tracker, tmp_path):
    """Two stage commands started by one process named `dvc` (as `dvc repro` starts them) nest together."""
    (tmp_path / "params.yaml").write_text("run: {profile: smoke}\n")
    fake_dvc = tmp_path / "dvc"
    fake_dvc.write_text(f"#!{sys.executable}\nimport subprocess, sys\n"
                        "for cmd in sys.argv[1:]:\n    subprocess.run(cmd, shell=True, check=True)\n")
    fake_dvc.chmod(0o755)
    stage = (f"{sys.executable} -m star.orchestration.stage_run --params params.yaml {{}} -- "
             f"{sys.executable} -c \"import os; print('RUN', os.environ['MLFLOW_RUN_ID'])\"")
    env = {**os.environ, "MLFLOW_TRACKING_URI": tracker.uri}
    env.pop(PARENT_ENV, None)
    out = subprocess.run([str(fake_dvc), stage.format("a"), stage.format("b")], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=300).stdout
    ids = [line.split()[1] for line in out.splitlines() if line.startswith("RUN ")]
    parents = {tracker.client.get_run(i).data.tags["mlflow.parentRunId"] for i in ids}
    assert len(ids) == 2 and len(parents) == 1


def test_a_failing_stage_fails_its_run_and_keeps_the_exit_status(tracker, tmp_path, monkeypatch, capfd):
    rc, run_id = _stage_run(tmp_path, monkeypatch, capfd, tracker.uri, "sft", "--project-dir", str(tmp_path), "--",
                            sys.executable, "-c", "import os, sys; print('RUN', os.environ['MLFLOW_RUN_ID']); sys.exit(3)")
    assert rc == 3
    t = tracker
    assert t.client.get_run(run_id).info.status == "FAILED"
    rc, _ = _stage_run(tmp_path, monkeypatch, capfd, tracker.uri, "x", "--project-dir", str(tmp_path), "--",
                       "no-such-command-xyz")
    assert rc == 127
