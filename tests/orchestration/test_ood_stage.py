"""The out-of-domain branch (qa_data → qa_index → eval_qa) runs its dvc.yaml commands for real
on the smoke world and logs one MLflow stage run with the per-dataset metrics and the Table 2 file.

eval_qa reads `models/rl/selected`; here a tiny saved policy stands in for GRPO's output so the
branch runs without training (four stages through `dvc repro --single-item`; test_smoke_pipeline.py
runs it after a real grpo stage).
"""

from __future__ import annotations

import json

import pytest

from star.config import resolve
from star.params_io import PROJECT_DIR
from star.orchestration.stages import Workspace, head_commit

TINY = {"qa.limit": 2, "qa.builtin.questions": 20, "qa.episode.max_new_tokens": 16}


@pytest.mark.slow
def test_ood_stage_evaluates_the_selected_model_and_logs_the_table(tmp_path):
    from mlflow.tracking import MlflowClient

    from star.rollout.tiny_model import build_tiny_model

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    values = resolve("smoke", overrides=TINY).to_params()
    runner = Workspace(tmp_path / "ws", PROJECT_DIR, env={"MLFLOW_TRACKING_URI": uri})
    runner.prepare(values, head_commit(PROJECT_DIR))
    for name in ("sandbox", "qa_data", "qa_index"):
        runner.repro(name, log=lambda _: None)
    ws = runner.path
    questions = (ws / "data/qa/world/world.jsonl").read_text().splitlines()
    assert len(questions) == 20 and (ws / "data/qa/index").is_dir()

    build_tiny_model(ws / "models/rl/selected", hidden=32, layers=1, vocab_size=512, seed=0)
    assert runner.repro("eval_qa", log=lambda _: None).status == "ran"

    metrics = json.loads((ws / "metrics/ood/metrics.json").read_text())
    assert set(metrics) >= {"qa.world.em", "qa.average_em", "ood_average"}
    assert metrics["ood_average"] == 100.0 * metrics["qa.average_em"]
    results = json.loads((ws / "metrics/ood/results.json").read_text())
    assert results["model"] == "rl" and results["datasets"]["world"]["n"] == 2  # qa.limit reached the CLI
    table = (ws / "metrics/ood/table.md").read_text().splitlines()
    assert table[0] == "| Model | World | Avg. |" and any(row.startswith("| rl |") for row in table)

    client = MlflowClient(tracking_uri=uri)
    runs = client.search_runs([e.experiment_id for e in client.search_experiments()],
                              "tags.`star.stage` = 'eval_qa'")
    assert len(runs) == 1
    run = runs[0]
    assert run.data.metrics["qa.world.em"] == metrics["qa.world.em"]
    assert run.data.params["qa.limit"] == "2" and run.data.params["qa.retrieval.method"] == "bm25"
    outputs = {a.path for a in client.list_artifacts(run.info.run_id, "outputs")}
    assert {"outputs/table.md", "outputs/metrics.json", "outputs/results.json"} <= outputs
