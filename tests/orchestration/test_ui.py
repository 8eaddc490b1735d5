"""The MLflow UI renders our runs in headless Chromium (scripts/mlflow_ui_screenshot.py). Slow; needs Chromium."""

from __future__ import annotations

import shutil
import subprocess
import sys

import pytest

from star.params_io import PROJECT_DIR

pytestmark = pytest.mark.slow


@pytest.mark.skipif(not any(shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome")),
                    reason="Chromium is not installed (Debian: apt-get install -y chromium)")
def test_mlflow_ui_shows_the_ablation_run(tmp_path):
    from star.tracking.config import TrackingConfig
    from star.tracking.mlflow_logging import Tracker

    uri = f"sqlite:///{tmp_path}/mlflow.db"
    t = Tracker(TrackingConfig(artifact_root=str(tmp_path / "mlruns")), project_dir=tmp_path, uri=uri)
    parent = t.start_run("reward (ui-test)", "ablation")
    t.end_run(t.start_run("reward=sum", "variant", parent_id=parent))
    t.end_run(parent)
    out = tmp_path / "ui.png"
    proc = subprocess.run([sys.executable, str(PROJECT_DIR / "scripts/mlflow_ui_screenshot.py"), "--tracking-uri", uri,
                           "--out", str(out)], capture_output=True, text=True, timeout=400)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "1/1 top-level run names rendered" in proc.stdout
    assert out.read_bytes()[:4] == b"\x89PNG"
