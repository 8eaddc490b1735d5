"""Run dvc.yaml's stages for one variant outside DVC, sharing upstream work between variants.

dvc.yaml is the one place the stage commands are written. This module reads it, renders each
`${…}` with a variant's resolved parameters (the same templating DVC does), and runs the stages
in dependency order, each in a content-addressed directory: the key of a stage is the hash of its
rendered command, the keys of the stages it depends on and the code version. Variants whose
upstream parameters agree (synthesis, teacher, SFT …) therefore resolve to the same keys and
compute those stages once; a variant's workspace holds symlinks to the shared outputs.

Used by the Prefect flow (flows/star_flow.py) and usable on its own (`run_variant`).
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import yaml

from star.tracking.mlflow_logging import PARENT_ENV, PROJECT_DIR

_VAR = re.compile(r"\$\{\s*([A-Za-z0-9_.\[\]-]+)\s*\}")
DONE = ".star_stage_done.json"


class StageError(RuntimeError):
    """A stage failed or dvc.yaml cannot be rendered; the message names the stage."""


@dataclass
class Stage:
    name: str
    cmd: str
    deps: list[str] = field(default_factory=list)
    outs: list[str] = field(default_factory=list)
    params: list[str] = field(default_factory=list)
    param_values: dict[str, Any] = field(default_factory=dict)  # what the stage reads from params.yaml


@dataclass
class StageResult:
    stage: str
    key: str
    path: Path
    cached: bool
    seconds: float = 0.0


def _lookup(context: dict, expr: str, where: str) -> Any:
    node: Any = context
    for part in expr.replace("[", ".").replace("]", "").split("."):
        if isinstance(node, dict) and part in node:
            node = node[part]
        else:
            raise StageError(f"{where}: ${{{expr}}} is not defined in the parameters")
    return node


def render(text: str, context: dict, where: str = "dvc.yaml") -> str:
    """DVC-style interpolation of scalars: booleans as true/false, None as None."""

    def sub(m: re.Match) -> str:
        value = _lookup(context, m.group(1), where)
        if isinstance(value, bool):
            return "true" if value else "false"
        if isinstance(value, (dict, list)):
            raise StageError(f"{where}: ${{{m.group(1)}}} is not a scalar")
        return str(value)

    return _VAR.sub(sub, text)


def _entries(items: list | None) -> list[str]:
    out = []
    for item in items or []:
        out.append(next(iter(item)) if isinstance(item, dict) else str(item))
    return out


def load_stages(values: dict, dvc_yaml: Path = PROJECT_DIR / "dvc.yaml", python: str = sys.executable,
                params_file: str = "params.yaml") -> list[Stage]:
    """dvc.yaml's stages (foreach expanded as stage@item), rendered with `values`, in dependency order.

    The file's `py` / `track` vars are replaced by this interpreter so the commands run here."""
    doc = yaml.safe_load(Path(dvc_yaml).read_text())
    context: dict[str, Any] = dict(values)
    context["py"] = python
    context["track"] = f"{python} -m star.tracking.stage_run --params {params_file}"
    stages: list[Stage] = []
    for name, spec in (doc.get("stages") or {}).items():
        if "foreach" in spec:
            items = spec["foreach"]
            pairs = items.items() if isinstance(items, dict) else ((i, i) for i in items)
            for key, item in pairs:  # DVC: a dict gives ${key} and ${item}, a list ${item}
                ctx = {**context, "key": key, "item": item}
                stages.append(_stage(f"{name}@{key}", spec["do"], ctx))
        else:
            stages.append(_stage(name, spec, context))
    return _toposort(stages)


def _stage(name: str, spec: dict, ctx: dict) -> Stage:
    where = f"dvc.yaml stage {name}"
    cmd = " ".join(str(spec["cmd"]).split())
    outs = _entries(spec.get("outs")) + _entries(spec.get("metrics")) + _entries(spec.get("plots"))
    params = _entries(spec.get("params"))
    # Like DVC, a stage depends on the values of its declared params, not only on what its command
    # line shows (training CLIs read their whole section from params.yaml).
    values = {key: _lookup(ctx, key, where) for key in params}
    return Stage(name, render(cmd, ctx, where), [render(d, ctx, where) for d in _entries(spec.get("deps"))],
                 [render(o, ctx, where) for o in outs], params, values)


def _covers(out: str, path: str) -> bool:
    return path == out or path.startswith(out.rstrip("/") + "/")


def producer(stages: list[Stage], path: str) -> tuple[Stage, str] | None:
    for s in stages:
        for out in s.outs:
            if _covers(out, path):
                return s, out
    return None


def _toposort(stages: list[Stage]) -> list[Stage]:
    by_name = {s.name: s for s in stages}
    deps = {s.name: {p[0].name for d in s.deps if (p := producer(stages, d)) and p[0].name != s.name}
            for s in stages}
    order: list[Stage] = []
    done: set[str] = set()
    while len(order) < len(stages):
        ready = [n for n in by_name if n not in done and deps[n] <= done]
        if not ready:
            raise StageError(f"dvc.yaml: dependency cycle among {sorted(set(by_name) - done)}")
        for n in ready:  # dvc.yaml order among the ready ones
            order.append(by_name[n])
            done.add(n)
    return order


def code_version(project_dir: Path = PROJECT_DIR) -> str:
    """Git commit plus a hash of uncommitted changes to star/: a code change invalidates shared outputs."""
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=project_dir, capture_output=True, text=True,
                              timeout=10).stdout.strip()
        diff = subprocess.run(["git", "diff", "HEAD", "--", "star"], cwd=project_dir, capture_output=True,
                              text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return f"{head[:12]}-{hashlib.sha256(diff.encode()).hexdigest()[:8]}"


def stage_key(stage: Stage, upstream: dict[str, str], version: str) -> str:
    blob = json.dumps({"cmd": stage.cmd, "params": stage.param_values, "upstream": dict(sorted(upstream.items())),
                       "code": version}, sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def _link(link: Path, target: Path) -> None:
    link.parent.mkdir(parents=True, exist_ok=True)
    if link.is_symlink() or link.is_file():
        link.unlink()
    elif link.is_dir():
        shutil.rmtree(link)
    link.symlink_to(target.resolve(), target_is_directory=target.is_dir())


class VariantRunner:
    """Runs one variant's stages: shared content-addressed outputs under `cache_dir`, links in `workspace`."""

    def __init__(self, values: dict, workspace: Path, cache_dir: Path, dvc_yaml: Path = PROJECT_DIR / "dvc.yaml",
                 version: str | None = None, env: dict[str, str] | None = None):
        from star.config import write_yaml

        self.values = values
        self.workspace = Path(workspace).resolve()
        self.cache_dir = Path(cache_dir).resolve()
        self.workspace.mkdir(parents=True, exist_ok=True)
        self.params_path = write_yaml(self.workspace / "params.yaml", values)
        # Commands name `params.yaml` relative to their working directory (a copy is placed there), so
        # the rendered command - the stage's content key - does not depend on the variant's path.
        self.stages = load_stages(values, dvc_yaml)
        self.version = version or code_version()
        self.env = env or {}
        self.keys: dict[str, str] = {}
        self.results: dict[str, StageResult] = {}

    def stage(self, name: str) -> Stage:
        for s in self.stages:
            if s.name == name:
                return s
        raise StageError(f"no stage {name!r} in dvc.yaml ({', '.join(s.name for s in self.stages)})")

    def upstream(self, stage: Stage) -> dict[str, tuple[Stage, str]]:
        out = {}
        for dep in stage.deps:
            p = producer(self.stages, dep)
            if p is None:  # a source file of the repository: its content is part of the key
                continue
            out[p[1]] = p
        return out

    def run(self, name: str, parent_run_id: str | None = None, log: Callable[[str], None] = print) -> StageResult:
        import time

        stage = self.stage(name)
        ups = self.upstream(stage)
        missing = [s.name for s, _ in ups.values() if s.name not in self.keys]
        if missing:
            raise StageError(f"stage {name}: run {missing} first")
        up_keys = {s.name: self.keys[s.name] for s, _ in ups.values()}
        for dep in stage.deps:
            if producer(self.stages, dep) is None:
                src = PROJECT_DIR / dep
                if src.is_file():
                    up_keys[dep] = hashlib.sha256(src.read_bytes()).hexdigest()[:16]
        key = stage_key(stage, up_keys, self.version)
        base = stage.name.replace("@", "-")
        final = self.cache_dir / base / key
        final.parent.mkdir(parents=True, exist_ok=True)
        start = time.time()
        with open(final.parent / f"{key}.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # a concurrent variant with the same key waits, then reuses
            cached = (final / DONE).is_file()
            if not cached:
                self._execute(stage, ups, final, parent_run_id, log)
        for out in stage.outs:
            target = final / out
            if target.exists():
                _link(self.workspace / out, target)
        self.keys[name] = key
        result = StageResult(name, key, final, cached, time.time() - start)
        self.results[name] = result
        return result

    def _execute(self, stage: Stage, ups: dict[str, tuple[Stage, str]], final: Path, parent_run_id: str | None,
                 log: Callable[[str], None]) -> None:
        work = Path(tempfile.mkdtemp(prefix=f".{final.name}.", dir=final.parent))
        try:
            for out, (producer_stage, _) in ups.items():
                _link(work / out, self.results[producer_stage.name].path / out)
            shutil.copyfile(self.params_path, work / "params.yaml")
            from star.training.deepspeed_setup import child_env

            env = {**child_env(dict(os.environ)), **self.env}
            if parent_run_id:
                env[PARENT_ENV] = parent_run_id
            env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(PROJECT_DIR), env.get("PYTHONPATH", "")]))
            log(f"[{stage.name}] {stage.cmd}")
            proc = subprocess.run(shlex.split(stage.cmd), cwd=work, env=env, capture_output=True, text=True)
            tail = (proc.stdout[-3000:] + proc.stderr[-3000:]).strip()
            if tail:
                log(tail)
            if proc.returncode != 0:
                raise StageError(f"stage {stage.name} failed with exit status {proc.returncode}:\n{tail[-2000:]}")
            missing = [o for o in stage.outs if not (work / o).exists()]
            if missing:
                raise StageError(f"stage {stage.name} finished but did not write {missing}")
            (work / DONE).write_text(json.dumps({"stage": stage.name, "cmd": stage.cmd}) + "\n")
            os.replace(work, final) if not final.exists() else shutil.rmtree(work)
        finally:
            if work.exists():
                shutil.rmtree(work, ignore_errors=True)


def needed_stages(runner: "VariantRunner", wanted: list[str] | None) -> list[str]:
    """The named stages (a foreach name like `evaluate` means all its items) and everything upstream."""
    if wanted is None:
        return [s.name for s in runner.stages]
    unknown = [w for w in wanted if not any(s.name == w or s.name.split("@")[0] == w for s in runner.stages)]
    if unknown:
        raise StageError(f"unknown stages {unknown}; dvc.yaml has {', '.join(s.name for s in runner.stages)}")
    need: set[str] = set()
    todo = [s.name for s in runner.stages if s.name in wanted or s.name.split("@")[0] in wanted]
    while todo:
        name = todo.pop()
        if name in need:
            continue
        need.add(name)
        todo += [st.name for st, _ in runner.upstream(runner.stage(name)).values()]
    return [s.name for s in runner.stages if s.name in need]


def run_variant(values: dict, workspace: Path, cache_dir: Path, stages: list[str] | None = None,
                parent_run_id: str | None = None, log: Callable[[str], None] = print) -> dict[str, StageResult]:
    """Every stage (or the named ones and what they need, in order) for one variant, without Prefect."""
    runner = VariantRunner(values, workspace, cache_dir)
    for name in needed_stages(runner, stages):
        runner.run(name, parent_run_id, log)
    return runner.results
