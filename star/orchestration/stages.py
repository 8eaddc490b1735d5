"""Run dvc.yaml's stages for one variant through DVC itself, in the variant's own workspace.

A variant's workspace is a git worktree of the project at the ablation's commit, holding the
variant's resolved params.yaml. Every workspace uses the project's DVC cache, so DVC's run-cache
restores a stage that any workspace already ran with the same command, dependencies and params
("Stage 'x' is cached - skipping run, checking out outputs") instead of computing it again. A
finished variant is saved as a DVC experiment (`dvc exp save`): `dvc exp show` in the project lists
it and `dvc exp apply NAME` brings its outputs back.

dvc.yaml is the one list of stages: `stage_order` reads it through DVC's own index (foreach
stages expanded as `eval_agent@rl`), in dependency order. Used by the Prefect flow; usable alone.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Callable, Iterator

from star.orchestration.stage_guard import group_members, stop_group
from star.orchestration.workspace_hold import note
from star.params_io import write_yaml
from star.tracking.mlflow_logging import PROJECT_DIR
from star.training.deepspeed_setup import child_env

# What `dvc repro` prints for a stage it did not run (stable across DVC 3.x).
_RESTORED = "is cached - skipping run"
_UNCHANGED = "didn't change, skipping"


# Stage process groups this process runs ({pgid: workspace}), so a cancelled run stops all of them.
ACTIVE_GROUPS: dict[int, str] = {}
_ACTIVE_LOCK = threading.Lock()
STOPPING = threading.Event()  # set when this process's run is being stopped: no new stage starts


def stop_active_stages() -> list[str]:
    """Stop every stage process group this process started (cancellation, a dead worker); their
    `repro` calls then fail with the guard's line. Returns the workspaces that had one running."""
    STOPPING.set()
    with _ACTIVE_LOCK:
        groups = dict(ACTIVE_GROUPS)
    for pgid in groups:
        stop_group(pgid)
    return list(groups.values())


def stop_leftover_stage(pgid: int, workspace: Path) -> bool:
    """Stop a stage process group a dead run left behind, if its processes still work in `workspace`
    (the check keeps a reused group id of an unrelated process safe)."""
    here = str(Path(workspace).resolve())
    for pid in group_members(int(pgid)):
        try:
            if os.readlink(f"/proc/{pid}/cwd").startswith(here):
                return stop_group(int(pgid))
        except OSError:
            continue
    return False


@contextmanager
def _flocked(path: Path) -> Iterator[None]:
    """An exclusive flock on `path` for the block (the kernel drops it if this process dies)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


class StageError(RuntimeError):
    """A stage failed, or a workspace cannot be set up; the message's first line names the stage and the cause."""


def failure_reason(output: str) -> str:
    """The line of a failed `dvc repro` that says why: the last line the stage printed (an exception's
    last line, a CLI's `error: …`), not DVC's closing `ERROR: failed to reproduce …`."""
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    own = [line for line in lines if not line.startswith(("ERROR: failed to reproduce", "Running stage", "> "))]
    return (own or lines or ["no output"])[-1]


@dataclass
class StageResult:
    stage: str
    status: str          # "ran" | "restored" (DVC run-cache) | "unchanged" (already up to date here)
    seconds: float
    log: str

    @property
    def cached(self) -> bool:
        return self.status != "ran"


def dvc_bin() -> str:
    """The `dvc` of this interpreter's environment (the project venv), else the one on PATH."""
    local = Path(sys.executable).parent / "dvc"
    return str(local) if local.exists() else (shutil.which("dvc") or "dvc")


def _index(repo_dir: Path):
    """DVC's own view of dvc.yaml (stages and dependency graph), re-read when dvc.yaml or params change."""
    stamp = tuple((repo_dir / f).stat().st_mtime_ns if (repo_dir / f).exists() else 0
                  for f in ("dvc.yaml", "params.yaml"))
    return _read_index(str(repo_dir), stamp)


@lru_cache(maxsize=8)
def _read_index(repo_dir: str, stamp: tuple):
    from dvc.repo import Repo

    with Repo(repo_dir) as repo:
        graph = repo.index.graph
        # The pipeline is the root dvc.yaml (a dvc.yaml in a subdirectory is another pipeline).
        root = os.path.join(repo.root_dir, "dvc.yaml")
        stages = [s for s in repo.index.stages if s.path == root]
        return stages, graph.subgraph(stages).copy()


def stage_order(repo_dir: Path = PROJECT_DIR) -> list[str]:
    """dvc.yaml's stage names (foreach items as NAME@KEY), upstream first, dvc.yaml order among equals."""
    import networkx as nx

    stages, graph = _index(Path(repo_dir))
    position = {s: i for i, s in enumerate(stages)}
    # DVC's graph points from a stage to the stages it depends on: reverse it to run upstream first.
    order = nx.lexicographical_topological_sort(graph.reverse(copy=True), key=lambda s: position.get(s, 0))
    return [s.name for s in order if s in position]


def stage_command(repo_dir: Path, stage: str) -> str:
    """A stage's command as DVC renders it (vars and foreach items filled in)."""
    stages, _ = _index(Path(repo_dir))
    found = next((s for s in stages if s.name == stage), None)
    if found is None:
        raise StageError(f"dvc.yaml has no stage {stage!r}")
    return found.cmd if isinstance(found.cmd, str) else " ".join(found.cmd)


def stage_meta(repo_dir: Path = PROJECT_DIR) -> dict[str, dict]:
    """Each stage's `meta:` block from dvc.yaml (e.g. `meta: {retries: 0}` for training stages)."""
    stages, _ = _index(Path(repo_dir))
    return {s.name: dict(s.meta or {}) for s in stages}


def needed_stages(repo_dir: Path, wanted: list[str] | None) -> list[str]:
    """The named stages (a foreach name like `eval_agent` means all its items) and everything upstream."""
    import networkx as nx

    stages, graph = _index(Path(repo_dir))
    order = stage_order(repo_dir)
    if wanted is None:
        return order
    by_name = {s.name: s for s in stages}
    unknown = [w for w in wanted if not any(n == w or n.split("@")[0] == w for n in by_name)]
    if unknown:
        raise StageError(f"unknown stages {unknown}; dvc.yaml has {', '.join(order)}")
    need: set[str] = set()
    for name, stage in by_name.items():
        if name in wanted or name.split("@")[0] in wanted:
            need.add(name)
            need |= {s.name for s in nx.descendants(graph, stage)}
    return [n for n in order if n in need]


def git(cwd: Path, *args: str, check: bool = True) -> str:
    proc = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True)
    if check and proc.returncode != 0:
        raise StageError(f"git {' '.join(args)} (in {cwd}) failed: {proc.stderr.strip() or proc.stdout.strip()}")
    return proc.stdout.strip()


def head_commit(project: Path = PROJECT_DIR) -> str:
    return git(project, "rev-parse", "HEAD")


def uncommitted(project: Path = PROJECT_DIR) -> list[str]:
    """Files that differ from HEAD where the pipeline reads code or stages (variants run HEAD, not these)."""
    out = git(project, "status", "--porcelain", "--", "star", "dvc.yaml", "params", check=False)
    return [line[3:] for line in out.splitlines() if line.strip()]


def project_cache_dir(project: Path = PROJECT_DIR) -> Path:
    proc = subprocess.run([dvc_bin(), "cache", "dir"], cwd=project, capture_output=True, text=True)
    if proc.returncode != 0:
        raise StageError(f"`dvc cache dir` failed in {project}: {proc.stderr.strip()}")
    return Path(proc.stdout.strip()).resolve()


class Workspace:
    """One variant's git worktree, sharing the project's DVC cache (and so its run-cache)."""

    def __init__(self, path: Path, project: Path = PROJECT_DIR, cache_dir: Path | None = None,
                 lock_dir: Path | None = None, env: dict[str, str] | None = None, remote: str | None = None,
                 stage_lock_dir: Path | None = None):
        self.path = Path(path).resolve()
        self.project = Path(project).resolve()
        self.cache_dir = Path(cache_dir).resolve() if cache_dir else project_cache_dir(self.project)
        self.lock_dir = Path(lock_dir or self.path.parent / ".locks").resolve()
        # Stage locks may be shared by workers on other machines (a folder beside a shared remote).
        self.stage_lock_dir = Path(stage_lock_dir).resolve() if stage_lock_dir else self.lock_dir
        self.remote = remote
        self.env = dict(env or {})
        self.hold_record: Path | None = None  # the workspace hold's record, told each stage's process group

    # ------------------------------------------------------------------------------ setup
    def prepare(self, params: dict, commit: str) -> "Workspace":
        """Check out `commit` here (a new worktree, or the existing one moved to it) and write params.yaml."""
        if self.path.exists() and not (self.path / ".git").exists():
            shutil.rmtree(self.path)  # not a worktree (an older layout): start clean
        with self._project_lock():  # runs side by side share the project's git directory
            git(self.project, "worktree", "prune")
            if self.path.exists():
                git(self.path, "checkout", "--quiet", "--detach", "--force", commit)
            else:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                git(self.project, "worktree", "add", "--quiet", "--detach", "--force", str(self.path), commit)
        venv = self.project / ".venv"
        link = self.path / ".venv"
        if venv.is_dir() and not link.exists():
            link.symlink_to(venv, target_is_directory=True)  # dvc.yaml calls .venv/bin/python
        self._dvc("cache", "dir", "--local", str(self.cache_dir))
        if self.remote:  # what workers share: run-cache and outputs travel through it
            self._dvc("remote", "add", "--local", "--force", "--default", "star-shared", self.remote)
        write_yaml(self.path / "params.yaml", params)
        return self

    def _env(self) -> dict[str, str]:
        env = {**child_env(dict(os.environ)), **self.env}
        # The stages import this workspace's code, not the project's (which may have moved on).
        env["PYTHONPATH"] = os.pathsep.join([str(self.path), *[p for p in [env.get("PYTHONPATH", "")] if p]])
        for var, key in (("GIT_AUTHOR_NAME", "user.name"), ("GIT_AUTHOR_EMAIL", "user.email")):
            if not env.get(var) and not git(self.project, "config", key, check=False):
                env[var] = env[var.replace("AUTHOR", "COMMITTER")] = "star" if "NAME" in var else "star@localhost"
        return env

    def _dvc(self, *args: str) -> subprocess.CompletedProcess:
        proc = subprocess.run([dvc_bin(), *args], cwd=self.path, env=self._env(), capture_output=True, text=True)
        if proc.returncode != 0:
            raise StageError(f"`dvc {' '.join(args)}` failed in {self.path}:\n{(proc.stdout + proc.stderr)[-3000:]}")
        return proc

    def _stage_lock(self, stage: str):
        # One workspace at a time per stage: a second variant with the same inputs then finds the
        # first one's result in DVC's run-cache instead of computing it alongside.
        return _flocked(self.stage_lock_dir / f"{stage.replace('@', '-')}.lock")

    # ------------------------------------------------------------------------------ stages
    def repro(self, stage: str, log: Callable[[str], None] = print,
              on_start: Callable[[int], None] | None = None) -> StageResult:
        """`dvc repro --single-item STAGE` here; the result says whether DVC ran it or restored it.

        The command runs under star.orchestration.stage_guard, as its own process group that stops when this
        process dies; `on_start(pgid)` hears the group's id (the workspace hold records it)."""
        start = time.time()
        def started(pgid: int) -> None:
            note(self.hold_record, stage=stage, pgid=pgid)
            if on_start:
                on_start(pgid)

        # With a shared remote, DVC first pulls the run-cache (`--pull`), so a stage another worker ran is
        # restored from there; afterwards this worker pushes the stage's outputs and the run-cache.
        pull = ["--pull"] if self.remote else []
        with self._stage_lock(stage):
            out, code = self._guarded([dvc_bin(), "repro", "--single-item", stage, *pull], started)
            if code == 0 and self.remote:
                self._dvc("push", "--run-cache", stage)
        if code != 0:
            raise StageError(f"stage {stage} failed: {failure_reason(out)}\n"
                             f"(dvc repro exit status {code}):\n{out[-3000:]}")
        status = "restored" if _RESTORED in out else "unchanged" if _UNCHANGED in out else "ran"
        log(f"[{stage}] {status} in {time.time() - start:.1f}s" + (f"\n{out[-2000:]}" if status == "ran" else ""))
        return StageResult(stage, status, time.time() - start, out)

    def _guarded(self, cmd: list[str], on_start: Callable[[int], None] | None = None) -> tuple[str, int]:
        # The guard runs as a file, not `-m`: the workspace's PYTHONPATH may hold an older commit.
        guard = [sys.executable, str(Path(__file__).with_name("stage_guard.py")), "--parent", str(os.getpid()), "--"]
        with _ACTIVE_LOCK:
            if STOPPING.is_set():
                raise StageError(f"not started: {' '.join(cmd[1:])} (this run is being stopped)")
            proc = subprocess.Popen(guard + cmd, cwd=self.path, env=self._env(), stdout=subprocess.PIPE,
                                    stderr=subprocess.STDOUT, text=True, start_new_session=True)
            ACTIVE_GROUPS[proc.pid] = str(self.path)
        try:
            if on_start:
                on_start(proc.pid)
            out, _ = proc.communicate()
            return out.strip(), proc.returncode
        except BaseException:  # this thread is being torn down (cancellation): take the stage with it
            stop_group(proc.pid)
            raise
        finally:
            with _ACTIVE_LOCK:
                ACTIVE_GROUPS.pop(proc.pid, None)

    def save_experiment(self, name: str, stages: list[str]) -> str:
        """`dvc exp save -n NAME --force STAGES`: the variant (the stages it ran) as a DVC experiment."""
        with self._project_lock():  # experiment refs live in the project's one git directory
            self._dvc("exp", "save", "--name", name, "--force", *stages)
        return name

    def _project_lock(self):
        return _flocked(self.project / ".dvc" / "tmp" / "star-git.lock")
