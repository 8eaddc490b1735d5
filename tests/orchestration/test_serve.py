"""`star serve` borrows the user's Prefect profile and `star serve --stop` gives it back.

Each step runs in its own process (as `star serve` and `star serve --stop` do), against a profiles
file in a temporary PREFECT_HOME, never the user's."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib

from star.params_io import PROJECT_DIR

OURS = "http://127.0.0.1:4299/api"


def _call(tmp_path, code: str) -> str:
    env = {**os.environ, "PREFECT_HOME": str(tmp_path / "home"), "PREFECT_PROFILES_PATH": str(tmp_path / "profiles.toml"),
           "PYTHONPATH": str(PROJECT_DIR)}
    env.pop("PREFECT_API_URL", None)
    env.pop("PREFECT_PROFILE", None)
    proc = subprocess.run([sys.executable, "-c", "from pathlib import Path\n"
                           "from star.orchestration.cli_serve import point_prefect_profile, restore_prefect_profile\n"
                           f"project = Path({str(tmp_path / 'project')!r})\n" + code],
                          env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def _profile(tmp_path, name: str) -> dict:
    return tomllib.loads((tmp_path / "profiles.toml").read_text())["profiles"][name]


def test_stop_puts_back_the_users_api_url(tmp_path):
    (tmp_path / "profiles.toml").write_text('active = "mine"\n\n[profiles.mine]\n'
                                            'PREFECT_API_URL = "http://elsewhere:4200/api"\nPREFECT_LOGGING_LEVEL = "DEBUG"\n')
    _call(tmp_path, f"point_prefect_profile(project, {OURS!r})\npoint_prefect_profile(project, {OURS!r})")
    assert _profile(tmp_path, "mine")["PREFECT_API_URL"] == OURS  # what a bare `prefect …` now talks to
    out = _call(tmp_path, "restore_prefect_profile(project)")
    assert "restored" in out
    # a second `star serve` before the stop did not make ours the value to restore
    assert _profile(tmp_path, "mine") == {"PREFECT_API_URL": "http://elsewhere:4200/api", "PREFECT_LOGGING_LEVEL": "DEBUG"}
    assert not (tmp_path / "project/runs/serve/prefect-profile.json").exists()


def test_stop_removes_an_api_url_the_user_never_set_and_keeps_a_newer_choice(tmp_path):
    (tmp_path / "profiles.toml").write_text('active = "mine"\n\n[profiles.mine]\nPREFECT_LOGGING_LEVEL = "DEBUG"\n')
    _call(tmp_path, f"point_prefect_profile(project, {OURS!r})\nrestore_prefect_profile(project)")
    assert _profile(tmp_path, "mine") == {"PREFECT_LOGGING_LEVEL": "DEBUG"}
    # the user pointed the profile elsewhere while the services ran: their choice stays
    _call(tmp_path, f"point_prefect_profile(project, {OURS!r})")
    text = (tmp_path / "profiles.toml").read_text().replace(OURS, "http://their-server/api")
    (tmp_path / "profiles.toml").write_text(text)
    _call(tmp_path, "restore_prefect_profile(project)")
    assert _profile(tmp_path, "mine")["PREFECT_API_URL"] == "http://their-server/api"
