"""Start `star sft` / `star grpo` on several ranks: the CLI re-runs itself under a launcher.

When params' `launch` section asks for more than one rank and this process was not started by a
launcher (no LOCAL_RANK), the training CLI runs the same command line under torchrun (one node) or
DeepSpeed's launcher (a hostfile's nodes, started over pdsh/ssh from this node) and returns its exit
code. Inside, every rank runs the CLI as usual; star.training.distributed gives it its share.
dvc.yaml therefore keeps one `star sft ...` command whatever the number of ranks.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from star.training.config import LaunchConfig
from star.training.deepspeed_setup import _free_port, child_env


def load_launch(path: str | Path | None, nproc_per_node: int | None = None) -> LaunchConfig:
    """The `launch:` section of a params file (defaults when absent), `nproc_per_node` overriding it."""
    import yaml

    values: dict = {}
    if path:
        data = yaml.safe_load(Path(path).read_text()) or {}
        section = data.get("launch") if isinstance(data, dict) else None
        if section is not None and not isinstance(section, dict):
            raise ValueError(f"{path}: `launch` must be a mapping of LaunchConfig fields")
        values.update(section or {})
    if nproc_per_node is not None:
        values["nproc_per_node"] = nproc_per_node
    return LaunchConfig(**values)


def under_launcher() -> bool:
    return "LOCAL_RANK" in os.environ


def command(launch: LaunchConfig, argv: list[str]) -> list[str]:
    """The launcher command that runs `python -m star.cli ARGV` on every rank."""
    port = launch.master_port or (_free_port() if launch.nnodes == 1 else 29500)
    kind = launch.launcher if launch.launcher != "auto" else ("torchrun" if launch.nnodes == 1 else "deepspeed")
    if kind == "torchrun":
        return [sys.executable, "-m", "torch.distributed.run", f"--nproc_per_node={launch.nproc_per_node}",
                f"--nnodes={launch.nnodes}", f"--master_addr={launch.master_addr}", f"--master_port={port}",
                "-m", "star.cli", *argv]
    cmd = [sys.executable, "-m", "deepspeed.launcher.runner", f"--num_gpus={launch.nproc_per_node}",
           f"--num_nodes={launch.nnodes}", f"--master_port={port}"]
    if launch.nnodes == 1 or launch.master_addr not in ("127.0.0.1", "localhost"):
        # across nodes a loopback address cannot be rank 0's: DeepSpeed then takes the first host's
        cmd.append(f"--master_addr={launch.master_addr}")
    if launch.hostfile:
        cmd.append(f"--hostfile={launch.hostfile}")
    # --no_local_rank: ranks read LOCAL_RANK from the environment, as under torchrun
    return [*cmd, "--no_local_rank", "--module", "star.cli", *argv]


def relaunch(launch: LaunchConfig, argv: list[str]) -> int | None:
    """Run argv on launch.world_size ranks and return the exit code; None when this process should
    train by itself (one rank, or already a launcher's rank)."""
    if launch.world_size == 1 or under_launcher():
        return None
    env = child_env(dict(os.environ))
    env.setdefault("PYTHONUNBUFFERED", "1")
    try:
        import torch

        if not torch.cuda.is_available():
            env.setdefault("DS_ACCELERATOR", "cpu")
    except ImportError:  # pragma: no cover
        pass
    cmd = command(launch, argv)
    print(f"star: launching {launch.world_size} ranks ({launch.nnodes} node(s) x {launch.nproc_per_node}): "
          f"{' '.join(cmd[:8])} ...", file=sys.stderr, flush=True)
    return subprocess.run(cmd, env=env).returncode
