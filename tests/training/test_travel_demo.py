"""The TravelPlanner learning demonstration (`travel` profile) runs its stages for real at a few queries:
synthesis on the real database (the generated world without STAR_DB) -> teacher -> SFT of SmolLM2 ->
DAPO -> both models on the same held-out queries -> `compare`. The full run and its result are in
docs/experiments/travel-cpu.md; this pins the wiring, not the gain."""

from __future__ import annotations

import json
import os

import pytest

from star.config import resolve
from star.params_io import PROJECT_DIR
from star.orchestration.stages import Workspace, head_commit

SMALL = {"synthesis.n": 60, "split.rl_size": 8, "split.val_size": 6, "teacher.queries": 8, "sft.max_steps": 4,
         "sft.save_every": 2, "rl.max_steps": 1, "rl.batch_queries": 2, "rl.num_generations": 4,
         "rl.dapo.max_draws": 2, "eval.batch": 6}


@pytest.mark.slow
def test_the_travel_profile_runs_sft_dapo_and_the_paired_comparison(tmp_path):
    from mlflow.tracking import MlflowClient

    db = os.environ.get("STAR_DB") or "generated:0"
    values = resolve("travel", overrides={**SMALL, "sandbox.db": db}).to_params()
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    runner = Workspace(tmp_path / "ws", PROJECT_DIR, env={"MLFLOW_TRACKING_URI": uri})
    runner.prepare(values, head_commit(PROJECT_DIR))
    assert runner.repro("compare", log=lambda _: None).status == "ran"
    ws = runner.path

    sft = json.loads((ws / "models/sft/sft_summary.json").read_text())
    assert sft["steps"] == 4 and sft["last_loss"] < sft["first_loss"]
    steps = [json.loads(x) for x in (ws / "models/rl/metrics.jsonl").read_text().splitlines()]
    assert len(steps) == 1 and steps[0]["dapo_draws"] >= 1 and steps[0]["rollout_tokens_per_s"] > 0
    result = json.loads((ws / "metrics/compare/compare.json").read_text())
    assert result["queries"] == 6 and result["names"] == ["SFT", "RL"]
    for side in ("sft", "rl"):
        m = json.loads((ws / f"metrics/eval/{side}/metrics.json").read_text())
        assert m["n"] == 6 and m["config"]["batch"] == 6
    client = MlflowClient(tracking_uri=uri)
    runs = client.search_runs([e.experiment_id for e in client.search_experiments()], "tags.`star.stage` = 'compare'")
    assert len(runs) == 1 and any(k.endswith("official.reward_sum.diff") for k in runs[0].data.metrics)
