"""A small, real run of the whole pipeline, through the same dvc.yaml commands DVC and Prefect run.

sandbox → synthesize → validate → split → teacher → sft_data on the generated world, tracked in a
throw-away MLflow store, then the Great Expectations suites on what the stages wrote; then the model
stages (build_model → sft → grpo → evaluate@{base,sft,rl}) and the out-of-domain branch
(qa_data → qa_index → evaluate_ood), one nested MLflow run per stage.
"""

from __future__ import annotations

import json
import subprocess
import sys

from star.config import resolve
from star.tracking.stages import VariantRunner, needed_stages

TINY = {"synthesis.n": 24, "split.rl_size": 6, "split.val_size": 4, "teacher.queries": 6, "teacher.samples": 1,
        "sft.epochs": 1, "rl.max_steps": 1, "eval.limit": 2, "qa.limit": 2, "qa.builtin.questions": 20}


def test_the_pipeline_runs_for_real_and_its_data_pass_the_quality_suites(tmp_path):
    values = resolve("smoke", overrides=TINY).to_params()
    runner = VariantRunner(values, tmp_path / "ws", tmp_path / "cache",
                           env={"MLFLOW_TRACKING_URI": f"sqlite:///{tmp_path / 'mlflow.db'}"})
    stages = needed_stages(runner, ["sft_data"])
    assert stages == ["sandbox", "synthesize", "validate", "split", "teacher", "sft_data"]
    for name in stages:
        assert not runner.run(name, log=lambda _: None).cached

    ws = tmp_path / "ws"
    validated = [json.loads(line) for line in (ws / "data/queries/validated.jsonl").read_text().splitlines()]
    assert validated and all(q["reference_plan"] for q in validated)
    splits = {p.stem: p for p in (ws / "data/splits").glob("*.jsonl")}
    assert {"sft_pool", "rl_train", "val"} <= set(splits)
    kept = (ws / "data/sft/train.jsonl").read_text().splitlines()
    assert kept, "rejection sampling kept no trajectory of the built-in teacher"

    def check(*args):
        return subprocess.run([sys.executable, "-m", "star.cli", "check-data", *args], capture_output=True, text=True)

    assert check("queries", str(ws / "data/queries/validated.jsonl")).returncode == 0
    assert check("trajectories", str(ws / "data/sft/train.jsonl")).returncode == 0

    # Running again reuses every stage: nothing is recomputed.
    again = VariantRunner(values, tmp_path / "ws2", tmp_path / "cache", env=runner.env)
    assert all(again.run(name, log=lambda _: None).cached for name in stages)

    # The model stages and the out-of-domain branch, smallest settings.
    rest = [n for n in needed_stages(runner, None) if n not in stages]
    assert {"build_model", "sft", "grpo", "evaluate@base", "evaluate@sft", "evaluate@rl", "qa_data", "qa_index",
            "evaluate_ood"} <= set(rest)
    for name in rest:
        runner.run(name, log=lambda _: None)
    selected = json.loads((ws / "models/rl/selected/selected.json").read_text())
    assert selected == {"from": "last", "step": 1}  # smoke runs no validation during RL
    for key in ("base", "sft", "rl"):
        metrics = json.loads((ws / f"metrics/eval/{key}/metrics.json").read_text())
        assert "success_rate" in json.dumps(metrics)
    ood = json.loads((ws / "metrics/ood/metrics.json").read_text())
    assert set(ood) >= {"qa.average_em", "ood_average", "qa.world.em"}
    assert (ws / "metrics/ood/table.md").read_text().startswith("| Model | World | Avg. |")

    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=runner.env["MLFLOW_TRACKING_URI"])
    runs = client.search_runs([e.experiment_id for e in client.search_experiments()], max_results=500)
    logged = {r.data.tags.get("star.stage") for r in runs}
    assert {n.replace("@", "_") for n in [*stages, *rest]} <= logged  # evaluate@rl logs as evaluate_rl
    ood_run = next(r for r in runs if r.data.tags.get("star.stage") == "evaluate_ood")
    assert ood_run.data.metrics["qa.world.em"] == ood["qa.world.em"]  # per-dataset EM, Table 2 file attached
    assert "outputs/table.md" in {a.path for a in client.list_artifacts(ood_run.info.run_id, "outputs")}
