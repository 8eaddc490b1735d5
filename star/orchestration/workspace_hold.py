"""An exclusive hold on one variant workspace, across runs, processes and workers on one machine.

Two runs that share a variant (two deployment runs of one ablation, or a rerun started while a
killed run's stage still computes) must not work in the same git worktree at once: DVC then fails
with "is busy" and `dvc exp save` breaks. The hold is an flock on `.locks/workspace-SLUG.lock`
beside the workspace; the kernel drops it when the holding process dies, however it dies. A
second run waits for it and says whom it waits for.

Beside the lock, a record (`workspace-SLUG.json`) names the holder: pid, flow run, MLflow runs and
the stage process group that is running. A clean release deletes it, so a record found on
acquiring says the last holder died mid-run; the new holder gets it back (`stale`) to stop what
is left of that run and close its MLflow runs.
"""

from __future__ import annotations

import fcntl
import json
import os
import time
from pathlib import Path
from typing import Callable


class WorkspaceHold:
    """`with WorkspaceHold(lock_dir, slug, owner) as hold:` … `hold.stale` is the dead holder's record."""

    def __init__(self, lock_dir: Path, slug: str, owner: dict, log: Callable[[str], None] = print,
                 poll_s: float = 5.0, kind: str = "workspace"):
        self.lock_path = Path(lock_dir) / f"{kind}-{slug}.lock"
        self.record_path = Path(lock_dir) / f"{kind}-{slug}.json"
        self.owner = {"pid": os.getpid(), **owner}
        self.log = log
        self.poll_s = poll_s
        self.stale: dict | None = None
        self.waited_s = 0.0
        self._fh = None

    def read(self) -> dict | None:
        try:
            return json.loads(self.record_path.read_text())
        except (OSError, ValueError):
            return None

    def acquire(self) -> "WorkspaceHold":
        self.lock_path.parent.mkdir(parents=True, exist_ok=True)
        self._fh = open(self.lock_path, "a+")
        start, said = time.time(), False
        while True:
            try:
                fcntl.flock(self._fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if not said:
                    holder = self.read() or {}
                    self.log(f"{self.lock_path.stem.replace('-', ' ', 1)} is held by "
                             f"{_describe(holder)}; waiting for it")
                    said = True
                time.sleep(self.poll_s)
        self.waited_s = time.time() - start
        self.stale = self.read()
        self.update()
        return self

    def update(self, **fields) -> None:
        """Merge `fields` into the holder's record (written atomically)."""
        self.owner.update(fields)
        self.owner.setdefault("since", time.time())
        write_record(self.record_path, self.owner)

    def release(self, remove_lock: bool = False) -> None:
        if self._fh is None:
            return
        try:
            self.record_path.unlink(missing_ok=True)
            if remove_lock:  # a one-off hold (a run's own): nobody else will ever wait on it
                self.lock_path.unlink(missing_ok=True)
        finally:
            fcntl.flock(self._fh, fcntl.LOCK_UN)
            self._fh.close()
            self._fh = None

    def __enter__(self) -> "WorkspaceHold":
        return self.acquire()

    def __exit__(self, *exc) -> None:
        # A process that dies never gets here: its record stays, which is how the next holder knows.
        self.release()


def orphaned(lock_dir: Path, kind: str) -> list[dict]:
    """Records of `kind` holds whose holder died (their lock is free, their record stayed); each is
    claimed (removed) as it is returned, so two runs never both clean up after the same one."""
    found = []
    for record in sorted(Path(lock_dir).glob(f"{kind}-*.json")) if Path(lock_dir).is_dir() else []:
        lock = record.with_suffix(".lock")
        with open(lock, "a+") as fh:
            try:
                fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:  # its holder is alive
                continue
            try:
                data = json.loads(record.read_text())
            except (OSError, ValueError):
                data = None
            record.unlink(missing_ok=True)
            lock.unlink(missing_ok=True)
            fcntl.flock(fh, fcntl.LOCK_UN)
        if data:
            found.append(data)
    return found


def write_record(path: Path, record: dict) -> None:
    tmp = Path(path).with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps(record, default=str))
    os.replace(tmp, path)


def note(path: Path | None, **fields) -> None:
    """Add `fields` to the record at `path` (the current stage and its process group), if held."""
    if path is None or not Path(path).is_file():
        return
    try:
        record = json.loads(Path(path).read_text())
    except (OSError, ValueError):
        record = {}
    write_record(path, {**record, **fields})


def _describe(holder: dict) -> str:
    parts = [f"PID {holder['pid']}" if holder.get("pid") else "another process"]
    if holder.get("flow_run"):
        parts.append(f"flow run {holder['flow_run']}")
    if holder.get("stage"):
        parts.append(f"at stage {holder['stage']}")
    return ", ".join(parts)
