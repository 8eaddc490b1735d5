"""Resumable checkpoints: DeepSpeed's engine state (weights, optimizer, scheduler) + our trainer state
(step, data order, RNG streams), so `--resume` continues exactly where a killed run stopped.

The trainer state is JSON beside DeepSpeed's files; the RNG states are converted to plain lists
so they load without unpickling arbitrary objects.
"""

from __future__ import annotations

import json
import os
import random
import re
import shutil
import tempfile
from pathlib import Path

from star.training import distributed as D

STATE_FILE = "trainer_state.json"
_TAG = re.compile(r"^step-(\d+)$")


def rng_state() -> dict:
    import numpy as np
    import torch

    version, internal, gauss = random.getstate()
    np_state = np.random.get_state()
    return {"python": [version, list(internal), gauss],
            "numpy": [np_state[0], np_state[1].tolist(), int(np_state[2]), int(np_state[3]), float(np_state[4])],
            "torch": torch.get_rng_state().tolist()}


def set_rng_state(state: dict) -> None:
    import numpy as np
    import torch

    version, internal, gauss = state["python"]
    random.setstate((version, tuple(internal), gauss))
    name, keys, pos, has_gauss, cached = state["numpy"]
    np.random.set_state((name, np.array(keys, dtype=np.uint32), pos, has_gauss, cached))
    torch.set_rng_state(torch.tensor(state["torch"], dtype=torch.uint8))


def tags(root: str | Path) -> list[tuple[int, str]]:
    root = Path(root)
    if not root.is_dir():
        return []
    found = [(int(m.group(1)), p.name) for p in root.iterdir() if (m := _TAG.match(p.name))
             and (p / STATE_FILE).is_file()]
    return sorted(found)


def _write_json(path: Path, data: dict) -> None:
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    with os.fdopen(fd, "w") as fh:
        json.dump(data, fh)
    os.replace(tmp, path)


def save(engine, root: str | Path, step: int, state: dict, keep: int = 2, before_state=None) -> Path:
    """Write checkpoint `step-N` under root; the trainer-state file is written last (its presence marks completion).

    Collective with several ranks (a shared `root`): DeepSpeed's save writes each rank's shards, each rank
    its RNG streams (`rng-rank{R}.json`), and rank 0 the trainer state once all of them are on disk."""
    root = Path(root)
    tag = f"step-{step:06d}"
    engine.save_checkpoint(str(root), tag=tag)
    rank = D.rank()
    if D.world() > 1:
        _write_json(root / tag / f"rng-rank{rank}.json", rng_state())
        D.barrier()
    if rank == 0:
        if before_state is not None:  # more files that belong to this checkpoint, written before it counts
            before_state(root / tag)
        _write_json(root / tag / STATE_FILE, {**state, "step": step, "rng": rng_state()})
        for _, old in tags(root)[:-keep]:
            shutil.rmtree(root / old, ignore_errors=True)
    D.barrier()
    return root / tag


def fingerprint(model_dir: str | Path, inputs, config: dict, skip: set[str]) -> str:
    """What a checkpoint must share with a run to resume it: the start model's files, the training inputs
    and every config field but `skip` (how often it saves, how long it may run)."""
    import hashlib

    h = hashlib.sha1()
    h.update(json.dumps({k: v for k, v in config.items() if k not in skip}, sort_keys=True, default=str).encode())
    h.update(json.dumps(inputs, sort_keys=True, default=str).encode())
    root = Path(model_dir)
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        h.update(f"{path.relative_to(root)}:{file_digest(path)}".encode())
    return h.hexdigest()


def file_digest(path: str | Path) -> str:
    import hashlib

    h = hashlib.sha1()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 22), b""):
            h.update(chunk)
    return h.hexdigest()


def outside(folder: str | Path, out: str | Path) -> bool:
    """Whether checkpoint `folder` lies outside the run's output folder (so it outlives DVC removing it)."""
    return Path(out).resolve() not in Path(folder).resolve().parents


def newest_state(root: str | Path) -> dict | None:
    """The trainer state of the newest complete checkpoint (without loading it), else None."""
    found = tags(root)
    if not found:
        return None
    return json.loads((Path(root) / found[-1][1] / STATE_FILE).read_text())


def load_latest(engine, root: str | Path) -> dict | None:
    """Restore the newest complete checkpoint into the engine; returns the trainer state (None if none).
    Every rank calls it (DeepSpeed's load is collective) and finds the same newest tag."""
    found = tags(root)
    if not found:
        return None
    _, tag = found[-1]
    path, _ = engine.load_checkpoint(str(root), tag=tag, load_optimizer_states=True, load_lr_scheduler_states=True)
    if path is None:
        raise RuntimeError(f"DeepSpeed could not load checkpoint {Path(root) / tag}")
    state = json.loads((Path(root) / tag / STATE_FILE).read_text())
    rng = state.pop("rng")
    own = Path(root) / tag / f"rng-rank{D.rank()}.json"  # several ranks: each its own streams
    set_rng_state(json.loads(own.read_text()) if D.world() > 1 and own.is_file() else rng)
    return state
