"""The Prefect flow `star` in this process (a temporary Prefect server): variants as DVC workspaces
sharing the run-cache, saved as DVC experiments, nested in MLflow; a failing variant fails the run.

Slow (real stages run): `pytest -m slow`. CI walks the same door for real through `star serve` and the
README's deployment command (scripts/walk_doors.py).
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from star.params_io import PROJECT_DIR

pytestmark = pytest.mark.slow


@pytest.fixture
def flow_env(tmp_path, monkeypatch):
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{tmp_path}/mlflow.db")
    monkeypatch.setenv("PREFECT_HOME", str(tmp_path / "prefect"))
    monkeypatch.setenv("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "180")
    sys.path.insert(0, str(PROJECT_DIR))
    from flows.star_flow import star
    from star.tracking.config import TrackingConfig
    from star.tracking.mlflow_logging import Tracker

    return star, Tracker(TrackingConfig(), uri=f"sqlite:///{tmp_path}/mlflow.db")


def test_ablation_variants_share_dvcs_run_cache_and_become_experiments(tmp_path, flow_env):
    star, t = flow_env
    summary = star(ablation="reward", profile="smoke", stages=["split"], concurrency=1,
                   overrides={"flow.runs_dir": str(tmp_path / "runs")})
    variants = summary["variants"]
    assert [v["variant"] for v in variants] == ["reward=sum", "reward=macro", "reward=success", "reward=curriculum"]
    assert summary["failed"] == {}
    # Each upstream stage is computed at most once (by whichever variant came first, or by an earlier
    # `dvc repro` of the project); the others get it from DVC's run-cache.
    for stage in ("sandbox", "synthesize", "validate", "split"):
        assert sum(v["stages"][stage] == "ran" for v in variants) <= 1, stage
    assert all(v["stages"]["split"] in ("restored", "unchanged") for v in variants[1:])

    shown = subprocess.run([str(PROJECT_DIR / ".venv/bin/dvc"), "exp", "show", "--json"], cwd=PROJECT_DIR,
                           capture_output=True, text=True)
    names = {e["name"] for base in json.loads(shown.stdout) for e in (base.get("experiments") or [])}
    assert {"reward-sum", "reward-macro", "reward-success", "reward-curriculum"} <= names

    children = t.children(summary["parent_run_id"])
    assert sorted(c.info.run_name for c in children) == sorted(v["variant"] for v in variants)
    assert all(c.info.status == "FINISHED" for c in children)
    for v in variants:
        assert t.client.get_run(v["run_id"]).data.params["rl.reward"] == v["variant"].split("=")[1]
        assert t.client.get_run(v["run_id"]).data.tags["star.dvc_experiment"] == v["experiment"]


def test_a_failing_variant_fails_the_flow_and_its_runs(tmp_path, flow_env):
    star, t = flow_env
    bad = tmp_path / "sizes.yaml"
    bad.write_text("description: one variant asks for more RL queries than the pool holds\naxis: size\n"
                   "levels:\n  ok: {split.rl_size: 16}\n  too_big: {split.rl_size: 100000}\n")
    with pytest.raises(Exception, match="1 of 2 variants failed: size=too_big"):
        star(ablation=str(bad), profile="smoke", stages=["split"], concurrency=1,
             overrides={"flow.runs_dir": str(tmp_path / "runs")})
    parent = t.find_runs("tags.`star.kind` = 'ablation'")[-1]
    assert parent.info.status == "FAILED"
    children = {c.info.run_name: c for c in t.children(parent.info.run_id)}
    assert children["size=ok"].info.status == "FINISHED"
    failed = children["size=too_big"]
    assert failed.info.status == "FAILED" and failed.data.tags["star.failed_stage"] == "split"
    assert "stage split failed" in failed.data.tags["star.error"]
