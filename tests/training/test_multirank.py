"""Data parallelism on 2 gloo ranks (torchrun on this CPU machine) against 1 rank with the whole batch.

N ranks with B/N each must take the same update as 1 rank with B: the loss divides by the loss
tokens of all ranks and DeepSpeed averages the gradients. Compared on the saved weights.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[2]
WORKER = Path(__file__).with_name("dist_worker.py")


def ext_dir() -> str:
    """DeepSpeed's CPU comm op (built on first use) in a folder of this checkout's own: checkouts with
    other paths rebuild it under a file lock in a shared ~/.cache folder, and a killed build's lock
    would stall every rank."""
    import hashlib
    import tempfile

    return str(Path(tempfile.gettempdir()) / f"star_torch_ext_{hashlib.sha1(str(ROOT).encode()).hexdigest()[:10]}")


@pytest.fixture(scope="module", autouse=True)
def _comm_op_built():
    """Build the comm op once in one process (2 ranks would both try, one waiting on the other's lock)."""
    lock = Path(ext_dir()) / "deepspeed_shm_comm" / "lock"
    if lock.exists() and not (lock.parent / "deepspeed_shm_comm.so").exists():
        import time

        if time.time() - lock.stat().st_mtime > 900:  # left by a killed build
            lock.unlink()
    env = {**os.environ, "DS_ACCELERATOR": "cpu", "TORCH_EXTENSIONS_DIR": ext_dir()}
    code = "from deepspeed.comm.torch import build_shm_op; build_shm_op()"
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]


def _run(ranks: int, *args: str, ok: bool = True) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items()
           if k not in ("RANK", "LOCAL_RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")}
    env.update(DS_ACCELERATOR="cpu", OMP_NUM_THREADS="1", PYTHONPATH=str(ROOT), TORCH_EXTENSIONS_DIR=ext_dir())
    from star.training.deepspeed_setup import _free_port

    launcher = [sys.executable, "-m", "torch.distributed.run", f"--nproc_per_node={ranks}",
                f"--master_port={_free_port()}"] if ranks > 1 else [sys.executable]
    proc = subprocess.run([*launcher, str(WORKER), *args], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=600)
    if ok:
        assert proc.returncode == 0, proc.stderr[-4000:]
    return proc


def _weights(path: Path) -> dict[str, torch.Tensor]:
    from safetensors.torch import load_file

    return load_file(str(next(path.glob("*.safetensors"))))


def _assert_same(a: dict, b: dict, base: dict) -> None:
    assert a.keys() == b.keys()
    moved = max(float((a[k] - base[k]).abs().max()) for k in a if k in base)
    assert moved > 1e-4  # training really changed the weights
    worst = max(float((a[k] - b[k]).abs().max()) for k in a)
    assert worst < 1e-5 * max(1.0, moved * 10), f"1 rank vs 2 ranks differ by {worst} (update size {moved})"


def test_sft_on_two_ranks_matches_one_rank_with_the_whole_batch(smoke_dir, tmp_path):
    _run(1, "sft", "--model", str(smoke_dir), "--out", str(tmp_path / "one"))
    _run(2, "sft", "--model", str(smoke_dir), "--out", str(tmp_path / "two"))
    _assert_same(_weights(tmp_path / "one"), _weights(tmp_path / "two"), _weights(smoke_dir))
    one = [json.loads(x) for x in (tmp_path / "one" / "sft_metrics.jsonl").read_text().splitlines()]
    two = [json.loads(x) for x in (tmp_path / "two" / "sft_metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in two] == [1, 2]  # rank 0 alone writes the metrics
    for a, b in zip(one, two):
        assert b["loss"] == pytest.approx(a["loss"], rel=1e-5) and b["tokens"] == a["tokens"]


def test_a_grpo_step_on_two_ranks_matches_one_rank_with_the_whole_batch(smoke_dir, tmp_path):
    _run(1, "grpo", "--model", str(smoke_dir), "--out", str(tmp_path / "one"))
    _run(2, "grpo", "--model", str(smoke_dir), "--out", str(tmp_path / "two"))
    _assert_same(_weights(tmp_path / "one" / "last"), _weights(tmp_path / "two" / "last"), _weights(smoke_dir))
    ids = [json.loads((tmp_path / "two" / f"batches-rank{r}.jsonl").read_text())["ids"] for r in (0, 1)]
    whole = json.loads((tmp_path / "one" / "batches-rank0.jsonl").read_text())["ids"]
    assert len(ids[0]) == len(ids[1]) == 1 and sorted(ids[0] + ids[1]) == sorted(whole)  # whole groups per rank
    m1 = json.loads((tmp_path / "one" / "metrics.jsonl").read_text())
    m2 = json.loads((tmp_path / "two" / "metrics.jsonl").read_text())
    for key in ("loss", "reward_mean", "loss_tokens", "grad_norm"):
        assert m2[key] == pytest.approx(m1[key], rel=1e-4), key
    assert not (tmp_path / "two" / "metrics-rank1.jsonl").exists()


def test_a_killed_two_rank_run_resumes_with_the_same_next_batch_on_both_ranks(smoke_dir, tmp_path):
    common = ["grpo", "--model", str(smoke_dir), "--queries", "4", "--steps", "2", "--save-every", "1"]
    _run(2, *common, "--out", str(tmp_path / "full"))
    killed = _run(2, *common, "--out", str(tmp_path / "res"), "--kill-after", "1", ok=False)
    assert killed.returncode != 0 and not (tmp_path / "res" / "summary.json").exists()
    assert (tmp_path / "res" / "checkpoints" / "step-000001" / "trainer_state.json").is_file()
    _run(2, *common, "--out", str(tmp_path / "res"), "--resume")
    for r in (0, 1):
        full = [json.loads(x) for x in (tmp_path / "full" / f"batches-rank{r}.jsonl").read_text().splitlines()]
        res = [json.loads(x) for x in (tmp_path / "res" / f"batches-rank{r}.jsonl").read_text().splitlines()]
        assert [x["step"] for x in res] == [1, 2]  # step 1 before the kill, step 2 after the resume
        assert res[1]["ids"] == full[1]["ids"] and res[1]["ids"] != res[0]["ids"], r
        assert res[1]["loss"] == pytest.approx(full[1]["loss"], rel=1e-4, abs=1e-7)
    summary = json.loads((tmp_path / "res" / "summary.json").read_text())
    assert summary["resumed"] is True and summary["ranks"] == 2
    a, b = _weights(tmp_path / "full" / "last"), _weights(tmp_path / "res" / "last")
    assert max(float((a[k] - b[k]).abs().max()) for k in a) < 1e-5
