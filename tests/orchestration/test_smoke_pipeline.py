"""The smoke pipeline, run for real through DVC in a worktree of this commit that shares the project's
DVC cache (so after `dvc repro` or CI's door walk every stage is restored from DVC's run-cache in
seconds; on a fresh cache it trains for ~10 minutes). It must train, not only start: SFT takes
optimizer steps on teacher trajectories with a falling loss, and GRPO updates the policy from
non-zero advantages. Then the Great Expectations suites check what the data stages wrote.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from star.config import PROJECT_DIR, resolve
from star.tracking.stages import Workspace, head_commit, stage_order


@pytest.fixture(scope="module")
def smoke(tmp_path_factory):
    ws = Workspace(tmp_path_factory.mktemp("smoke") / "ws", PROJECT_DIR,
                   env={"MLFLOW_TRACKING_URI": f"sqlite:///{tmp_path_factory.mktemp('mlflow') / 'mlflow.db'}"})
    ws.prepare(resolve("smoke").to_params(), head_commit(PROJECT_DIR))
    statuses = {name: ws.repro(name, log=lambda _: None).status for name in stage_order(ws.path)}
    yield ws.path, statuses
    subprocess.run(["git", "worktree", "remove", "--force", str(ws.path)], cwd=PROJECT_DIR, capture_output=True)


def _jsonl(path):
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def test_every_stage_ran_or_came_from_dvcs_run_cache(smoke):
    _, statuses = smoke
    assert set(statuses.values()) <= {"ran", "restored", "unchanged"}
    assert {"sandbox", "teacher", "sft", "grpo", "evaluate@rl", "evaluate_ood"} <= set(statuses)


def test_sft_takes_real_steps_on_whole_teacher_trajectories(smoke):
    ws, _ = smoke
    summary = json.loads((ws / "models/sft/sft_summary.json").read_text())
    assert summary["train"] > 0 and summary["steps"] > 0 and summary["dropped"] == 0
    steps = _jsonl(ws / "models/sft/sft_metrics.jsonl")
    assert len(steps) == summary["steps"]
    assert summary["last_loss"] < summary["first_loss"] - 1.0, "the SFT loss did not fall"


def test_grpo_updates_the_policy_from_non_zero_advantages(smoke):
    ws, _ = smoke
    steps = _jsonl(ws / "models/rl/metrics.jsonl")
    assert steps, "GRPO logged no step"
    updated = [s for s in steps if s.get("optimizer_steps", 0) > 0 and not s.get("update_skipped")]
    assert updated, f"no GRPO step updated the policy: rewards {[s.get('reward_mean') for s in steps]}"
    assert any(s.get("reward_max", s.get("reward_mean", 0)) > 0 for s in updated)


def test_evaluations_and_ood_metrics_are_written(smoke):
    ws, _ = smoke
    for key in ("base", "sft", "rl"):
        metrics = json.loads((ws / f"metrics/eval/{key}/metrics.json").read_text())
        assert "success_rate" in json.dumps(metrics)
    ood = json.loads((ws / "metrics/ood/metrics.json").read_text())
    assert set(ood) >= {"qa.average_em", "ood_average", "qa.world.em"}
    assert (ws / "metrics/ood/table.md").read_text().startswith("| Model | World | Avg. |")


def test_the_data_the_stages_wrote_pass_the_quality_suites(smoke):
    ws, _ = smoke
    validated = _jsonl(ws / "data/queries/validated.jsonl")
    assert validated and all(q["reference_plan"] for q in validated)
    assert {"sft_pool", "rl_train", "val"} <= {p.stem for p in (ws / "data/splits").glob("*.jsonl")}

    def check(*args):
        return subprocess.run([sys.executable, "-m", "star.cli", "check-data", *args], capture_output=True, text=True)

    assert check("queries", str(ws / "data/queries/validated.jsonl")).returncode == 0
    assert check("trajectories", str(ws / "data/sft/train.jsonl")).returncode == 0
