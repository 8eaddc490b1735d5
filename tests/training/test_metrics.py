import json

import pytest

from star.training.metrics import MetricsLogger, read_metrics


def test_jsonl_rows_and_rewind_on_resume(tmp_path):
    log = MetricsLogger(tmp_path / "m.jsonl")
    for step in (1, 2, 3):
        log.log(step, {"reward_mean": step / 10, "flag": True, "bad": float("nan")})
    log.truncate_after(2)
    rows = read_metrics(tmp_path / "m.jsonl")
    assert [r["step"] for r in rows] == [1, 2]
    assert rows[0] == {"step": 1, "reward_mean": 0.1, "flag": 1, "bad": None}  # JSON-clean values


def test_mlflow_receives_step_metrics_when_a_run_is_active(tmp_path, monkeypatch):
    import mlflow

    monkeypatch.setenv("MLFLOW_DISABLE_TELEMETRY", "true")
    mlflow.set_tracking_uri(f"sqlite:///{tmp_path / 'mlflow.db'}")
    log = MetricsLogger(tmp_path / "m.jsonl", prefix="rl/")
    with mlflow.start_run() as run:
        log.log(1, {"reward_mean": 0.5, "reward_fn": "sum"})
        log.log(2, {"reward_mean": 0.75})
    history = mlflow.tracking.MlflowClient().get_metric_history(run.info.run_id, "rl/reward_mean")
    assert [(m.step, m.value) for m in history] == [(1, 0.5), (2, 0.75)]
    assert json.loads((tmp_path / "m.jsonl").read_text().splitlines()[0])["reward_fn"] == "sum"


def test_step_metrics_carry_plan_coverage_only_where_the_scores_have_it():
    from star.agent.trajectory import Trajectory
    from star.training.grpo import rollout_metrics

    def traj(scores):
        return Trajectory("q", [], "answer", scores=scores, token_ids=[1, 2], policy_mask=[0, 1])

    stub, full = {"cs_micro": 0.5, "coverage": 1 / 3}, {"cs_micro": 0.5, "coverage": 1.0}
    assert rollout_metrics([traj(stub), traj(full)], [0.5, 0.5])["coverage"] == pytest.approx(2 / 3)
    assert "coverage" not in rollout_metrics([traj({"cs_micro": 1.0})], [1.0])  # a QA episode: no trip to cover
