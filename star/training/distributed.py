"""Data-parallel helpers over torch.distributed: rank, world, sharding and reductions.

Every function works with no process group (one process: rank 0 of 1), so the single-process
path and the library's tests need nothing set up. Reductions use float64 tensors on the
backend's device (CUDA for nccl, CPU for gloo).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def _dist():
    import torch.distributed as dist

    return dist if dist.is_available() and dist.is_initialized() else None


def world() -> int:
    dist = _dist()
    return dist.get_world_size() if dist else 1


def rank() -> int:
    dist = _dist()
    return dist.get_rank() if dist else 0


def is_main() -> bool:
    return rank() == 0


def shard(items: Sequence, r: int | None = None, w: int | None = None) -> list:
    """This rank's share: every w-th item from r (whole items: a GRPO group never straddles ranks)."""
    r, w = rank() if r is None else r, world() if w is None else w
    return list(items[r::w])


def _device():
    import torch

    dist = _dist()
    if dist is not None and dist.get_backend() == "nccl":
        return torch.device("cuda", torch.cuda.current_device())
    return torch.device("cpu")


def all_reduce(values: Sequence[float], op: str = "sum") -> list[float]:
    """Element-wise sum / max / min over ranks (the values themselves with one process)."""
    dist = _dist()
    if dist is None:
        return [float(v) for v in values]
    import torch

    t = torch.tensor([float(v) for v in values], dtype=torch.float64, device=_device())
    dist.all_reduce(t, op={"sum": dist.ReduceOp.SUM, "max": dist.ReduceOp.MAX, "min": dist.ReduceOp.MIN}[op])
    return t.tolist()


def all_sum(value: float) -> float:
    return all_reduce([value])[0]


def all_max(value: float) -> float:
    return all_reduce([value], "max")[0]


def gather(obj: Any) -> list[Any]:
    """Every rank's object, in rank order, on every rank (picklable, small: metric rows)."""
    dist = _dist()
    if dist is None:
        return [obj]
    out: list[Any] = [None] * dist.get_world_size()
    dist.all_gather_object(out, obj)
    return out


def barrier() -> None:
    dist = _dist()
    if dist is not None:
        dist.barrier()
