"""DeepSpeed engine setup that works on this CPU machine (gloo) and on GPU nodes (nccl).

On CPU, DeepSpeed needs the torch.distributed variables even for one process (otherwise it looks
for MPI), `DS_ACCELERATOR=cpu` set before its import, and a *torch* optimizer: DeepSpeed's own
Adam compiles fused kernels (~90 s) that buy nothing here (notes/stack.md). Under the `deepspeed`
launcher or torchrun the variables are already set and are left alone.
"""

from __future__ import annotations

import fcntl
import os
import socket
import sys
import time
from contextlib import contextmanager
from pathlib import Path

from star.training import distributed as D

# Variables init_distributed put into this process's environment. A child process must not inherit
# them: its own init would try to listen on the MASTER_PORT this process's group already holds.
_SET_HERE: set[str] = set()


def child_env(env: dict[str, str]) -> dict[str, str]:
    """env without the distributed variables this process set for itself (a launcher's are kept)."""
    return {k: v for k, v in env.items() if k not in _SET_HERE}


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def use_cuda() -> bool:
    import torch

    return torch.cuda.is_available()


def init_distributed() -> None:
    """Initialise torch.distributed once per process (single process unless a launcher set ranks)."""
    import torch

    defaults = {"RANK": "0", "LOCAL_RANK": "0", "WORLD_SIZE": "1", "MASTER_ADDR": "127.0.0.1"}
    if not torch.cuda.is_available():
        defaults["DS_ACCELERATOR"] = "cpu"
    if "MASTER_PORT" not in os.environ:
        defaults["MASTER_PORT"] = str(_free_port())
    for key, value in defaults.items():
        if key not in os.environ:
            os.environ[key] = value
            _SET_HERE.add(key)
    import deepspeed
    import torch.distributed as dist

    if not dist.is_initialized():
        if not torch.cuda.is_available():
            with _comm_op_build_guard():  # built (or loaded) here, alone: init_distributed below is collective
                from deepspeed.comm.torch import build_shm_op

                build_shm_op()
        deepspeed.init_distributed(dist_backend="nccl" if torch.cuda.is_available() else "gloo")


BATON_STALE_S = 300.0


@contextmanager
def _comm_op_build_guard():
    """On CPU, DeepSpeed builds (or loads) its comm op through torch's extension loader, which holds a baton
    file (`lock`) meanwhile; a process killed then leaves it, and every later process waits on it forever
    (a killed pipeline stage did exactly that). Our own flock, which the kernel drops when its holder dies,
    is held around it: a baton found under our flock that has not changed for 5 minutes is a dead one's and is
    removed (a stall bounded at 5 minutes instead of forever)."""
    try:
        from torch.utils.cpp_extension import _get_build_directory

        folder = Path(_get_build_directory("deepspeed_shm_comm", False))
    except Exception:  # torch moved its private helper: go on as DeepSpeed does
        yield
        return
    with open(folder / ".star-build.flock", "a+") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            baton = folder / "lock"
            # A process that is not ours (another checkout's code) may hold it for a minute or two while it
            # builds: only a baton older than BATON_STALE_S is taken for a dead one's and removed.
            while baton.exists() and time.time() - baton.stat().st_mtime < BATON_STALE_S:
                time.sleep(1)
            if baton.exists():
                print(f"deepspeed: removed {baton}, a build lock left by a killed process", file=sys.stderr)
                baton.unlink(missing_ok=True)
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def ds_config(micro_batch_size: int, grad_accum: int, zero_stage: int, bf16: bool | None,
              gradient_clipping: float) -> dict:
    """bf16=None: on with CUDA, off on CPU (measured here: bf16 backward ~6x slower than fp32 on 2 cores)."""
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if bf16 is None:
        bf16 = use_cuda()
    return {
        "train_micro_batch_size_per_gpu": micro_batch_size,
        "gradient_accumulation_steps": grad_accum,
        "train_batch_size": micro_batch_size * grad_accum * world,
        "zero_optimization": {"stage": zero_stage},
        "bf16": {"enabled": bool(bf16)},
        "gradient_clipping": gradient_clipping,
        "steps_per_print": 10**9,  # our own metrics log every step
        "wall_clock_breakdown": False,
    }


def initialize(model, optimizer, scheduler, config: dict):
    """Wrap model + torch optimizer + scheduler in a DeepSpeed engine."""
    init_distributed()
    import deepspeed

    engine, _, _, _ = deepspeed.initialize(model=model, optimizer=optimizer, lr_scheduler=scheduler, config=config)
    return engine


def linear_schedule(optimizer, total_steps: int, warmup_ratio: float, decay: bool = True):
    """Linear warm-up over warmup_ratio of the steps, then linear decay to 0 (or constant)."""
    import torch

    warmup = int(round(total_steps * warmup_ratio))

    def factor(step: int) -> float:
        if warmup and step < warmup:
            return (step + 1) / warmup
        if not decay:
            return 1.0
        return max(0.0, (total_steps - step) / max(1, total_steps - warmup))

    return torch.optim.lr_scheduler.LambdaLR(optimizer, factor)


def step(engine) -> float | None:
    """`engine.step()`, returning the gradient norm before clipping when this call ends an accumulation
    window: DeepSpeed's own under ZeRO (and with fp16/bf16), measured here otherwise (with a plain torch
    optimizer and ZeRO 0 DeepSpeed clips without keeping the norm)."""
    boundary = engine.is_gradient_accumulation_boundary()
    norm = None
    if boundary and not engine.zero_optimization():
        import torch

        grads = [p.grad.detach().float().norm() for p in engine.module.parameters() if p.grad is not None]
        norm = float(torch.linalg.vector_norm(torch.stack(grads))) if grads else 0.0
    engine.step()
    if not boundary:
        return None
    ds_norm = engine.get_global_grad_norm()
    return float(ds_norm) if ds_norm is not None else norm


def full_state_dict(engine) -> dict:
    """The model's full weights on every ZeRO stage. Collective under ZeRO-3: every rank must call it;
    stage 3 gathers its partitions onto rank 0 only (other ranks get an empty dict)."""
    if engine.zero_optimization_stage() == 3:
        return engine._zero3_consolidated_16bit_state_dict() or {}
    return engine.module.state_dict()


def iter_full_params(engine):
    """(name, full tensor) for every weight, on every rank: what a rank's own rollout engine loads.
    Under ZeRO-3 each parameter is gathered on all ranks for the moment it is consumed (collective:
    every rank iterates to the end), so no rank holds more than one whole parameter extra."""
    if engine.zero_optimization_stage() != 3:
        yield from engine.module.state_dict().items()
        return
    import deepspeed

    for name, param in engine.module.named_parameters():
        with deepspeed.zero.GatheredParameters([param], modifier_rank=None):
            yield name, param.data
    for name, buf in engine.module.named_buffers():
        yield name, buf


def save_pretrained(engine, tokenizer, out, extra_files: dict[str, str] | None = None) -> None:
    """Save the engine's model + tokenizer by path, atomically (temp dir + rename). Every rank calls it;
    rank 0 writes."""
    import shutil
    import tempfile
    from pathlib import Path

    out = Path(out)
    state = full_state_dict(engine)  # collective under ZeRO-3: every rank takes part
    if not D.is_main():  # rank 0 writes; the others wait until the directory is in place
        D.barrier()
        return
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    os.chmod(tmp, 0o755)
    try:
        engine.module.save_pretrained(tmp, state_dict=state)
        tokenizer.save_pretrained(tmp)
        for name, text in (extra_files or {}).items():
            (tmp / name).write_text(text)
        old = out.with_name(f".{out.name}.old")
        if out.exists():
            for f in out.iterdir():  # keep what else lives there (metrics, summaries)
                if not (tmp / f.name).exists():
                    f.rename(tmp / f.name)
            out.rename(old)
        tmp.rename(out)
        shutil.rmtree(old, ignore_errors=True)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
        D.barrier()
