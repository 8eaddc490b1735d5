"""The launch section: typed, read from params files, turned into torchrun / DeepSpeed launcher commands,
and (slow) a 2-rank `dvc repro` of the smoke sft and grpo stages through it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from star.training.config import LaunchConfig
from star.training.launch import command, load_launch, relaunch

ROOT = Path(__file__).resolve().parents[2]


def test_defaults_are_one_rank_and_relaunch_does_nothing(tmp_path):
    params = tmp_path / "params.yaml"
    params.write_text(yaml.safe_dump({"sft": {"batch_size": 4}}))
    launch = load_launch(params)
    assert launch == LaunchConfig() and launch.world_size == 1
    assert relaunch(launch, ["sft"]) is None


def test_a_single_node_runs_under_torchrun_with_the_same_command_line(tmp_path):
    params = tmp_path / "params.yaml"
    params.write_text(yaml.safe_dump({"launch": {"nproc_per_node": 4, "master_port": 29611}}))
    cmd = command(load_launch(params), ["sft", "--config", "params.yaml"])
    assert cmd[1:3] == ["-m", "torch.distributed.run"] and "--nproc_per_node=4" in cmd and "--master_port=29611" in cmd
    assert cmd[-5:] == ["-m", "star.cli", "sft", "--config", "params.yaml"]
    assert load_launch(params, nproc_per_node=2).nproc_per_node == 2  # the CLI flag wins


def test_several_nodes_use_deepspeeds_launcher_with_the_hostfile():
    launch = LaunchConfig(nproc_per_node=8, nnodes=2, hostfile="hostfile")
    cmd = command(launch, ["grpo", "--resume"])
    assert cmd[1:3] == ["-m", "deepspeed.launcher.runner"]
    assert {"--num_gpus=8", "--num_nodes=2", "--hostfile=hostfile", "--no_local_rank", "--master_port=29500"} <= set(cmd)
    assert not any(c.startswith("--master_addr") for c in cmd)  # DeepSpeed takes the first host's address
    assert cmd[-4:] == ["--module", "star.cli", "grpo", "--resume"]
    assert "--master_addr=node1" in command(launch.model_copy(update={"master_addr": "node1"}), ["sft"])


def test_bad_launch_settings_say_what_is_wrong(tmp_path):
    with pytest.raises(ValueError, match="needs launch.hostfile"):
        LaunchConfig(nnodes=2)
    with pytest.raises(ValueError, match="torchrun runs on one node"):
        LaunchConfig(nnodes=2, hostfile="h", launcher="torchrun")
    params = tmp_path / "p.yaml"
    params.write_text(yaml.safe_dump({"launch": {"nproc_per_node": 0}}))
    with pytest.raises(ValueError, match="nproc_per_node"):
        load_launch(params)


def test_the_paper_profiles_set_the_papers_gpus():
    from star.config import resolve

    assert resolve("paper-7b")["launch"].world_size == 16
    assert resolve("paper-3b")["launch"].nproc_per_node == 8
    assert resolve("smoke")["launch"].world_size == 1


TINY = {"synthesis.n": 24, "split.rl_size": 6, "split.val_size": 4, "teacher.queries": 6, "teacher.samples": 1,
        "sft.epochs": 1, "sft.batch_size": 4, "rl.max_steps": 1, "launch.nproc_per_node": 2}


@pytest.mark.slow
def test_dvc_repro_runs_the_smoke_sft_and_grpo_stages_on_two_ranks(tmp_path):
    from star.config import resolve
    from star.params_io import write_yaml
    from tests.training.test_multirank import ext_dir

    ws = tmp_path / "ws"
    files = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    for f in files:
        if f.startswith(("star/", "params/")) or f in ("dvc.yaml", "pyproject.toml"):
            (ws / f).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / f, ws / f)
    (ws / ".venv").symlink_to((ROOT / ".venv").resolve())  # dvc.yaml runs .venv/bin/python
    write_yaml(ws / "params.yaml", resolve("smoke", overrides=TINY).to_params())
    dvc = str(Path(sys.executable).with_name("dvc"))
    env = {**os.environ, "PYTHONPATH": str(ws), "MLFLOW_TRACKING_URI": f"sqlite:///{tmp_path / 'mlflow.db'}",
           "TORCH_EXTENSIONS_DIR": ext_dir(), "OMP_NUM_THREADS": "1"}
    subprocess.run([dvc, "init", "--no-scm", "-q"], cwd=ws, env=env, check=True)
    proc = subprocess.run([dvc, "repro", "grpo"], cwd=ws, env=env, capture_output=True, text=True, timeout=1800)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-5000:]
    assert "launching 2 ranks" in proc.stdout + proc.stderr
    sft = json.loads((ws / "models/sft/sft_summary.json").read_text())
    rl = json.loads((ws / "models/rl/summary.json").read_text())
    assert sft["ranks"] == 2 and rl["ranks"] == 2 and rl["steps"] == 1
    assert (ws / "models/rl/selected/model.safetensors").is_file()
