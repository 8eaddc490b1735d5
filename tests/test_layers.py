"""Imports point down: each package of star/ imports only the layers below it, and no files import in a circle.

The layer order is held here, once. A function-local import counts like any other: hiding an import
in a function does not change which way it points.
"""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("stage_deps", ROOT / "scripts" / "stage_deps.py")
stage_deps = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(stage_deps)  # its module <-> file helpers; its closure also follows strings, this test does not

# Bottom to top. A module may import its own package and any module of a lower layer; modules of one
# layer do not import each other across packages.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("star.jsonl", "star.stats", "star.plots", "star.params_io", "star.cli_args"),
    ("star.sandbox",),
    ("star.evaluation",),                 # the evaluator, its slots and the rewards computed from its scores
    ("star.agent",),                      # the ReAct protocol: prompt, turns, episode env, trajectory
    ("star.quality",),                    # Great Expectations suites over queries, trajectories, evaluations
    ("star.synthesis",),
    ("star.rollout",),
    ("star.teachers",),                   # built-in and LLM teachers, rejection sampling into SFT data
    ("star.training",),
    ("star.policy_eval",),                # a policy on a query set, and two evaluations paired
    ("star.qa",),
    ("star.ablations",),                  # ablation files, variant names and run labels
    ("star.config",),                     # params/ composed and validated (section models named by string)
    ("star.tracking",),                   # MLflow runs, params, metrics, artifacts
    ("star.report",),                     # the ablation report: load, build, render, plot, write
    ("star.orchestration",),              # DVC stages in per-variant workspaces, stage runs, local services
    ("star.cli",),
)


def _unit(module: str) -> str | None:
    """The entry of LAYERS a module belongs to (a package or a top-level module)."""
    for layer in LAYERS:
        for unit in layer:
            if module == unit or module.startswith(unit + "."):
                return unit
    return None


def _layer(unit: str) -> int:
    return next(i for i, layer in enumerate(LAYERS) if unit in layer)


def _module_name(path: Path, root: Path = ROOT) -> str:
    return stage_deps.module_name(path, root)


def _imports(path: Path, root: Path = ROOT) -> list[tuple[int, str]]:
    """(line, module) for every import statement of a star module in a file, function-local ones included."""
    return [(line, m) for line, m in stage_deps.import_statements(path, root) if m == "star" or m.startswith("star.")]


def _files(root: Path = ROOT) -> list[Path]:
    star = root / "star"
    return sorted(p for p in star.rglob("*.py") if "__pycache__" not in p.parts and p != star / "__init__.py")


def upward_imports(root: Path = ROOT) -> list[str]:
    bad = []
    for path in _files(root):
        me = _unit(_module_name(path, root))
        assert me is not None, f"{path.relative_to(root)} belongs to no layer: add its package to LAYERS"
        for line, target in _imports(path, root):
            them = _unit(target)
            if them is None or them == me or target == "star":
                continue
            if _layer(them) >= _layer(me):
                bad.append(f"{path.relative_to(root)}:{line} imports {target} ({them} is not below {me})")
    return bad


def _file_of(module: str, root: Path = ROOT) -> Path | None:
    return stage_deps.module_file(module, root)


def circles(root: Path = ROOT) -> list[list[str]]:
    """Strongly connected groups of more than one file in the file import graph (package faces left out)."""
    graph: dict[Path, set[Path]] = {}
    for path in _files(root):
        targets = {_file_of(m, root) for _, m in _imports(path, root)}
        graph[path] = {t for t in targets if t is not None and t != path and t.name != "__init__.py"}
    index: dict[Path, int] = {}
    low: dict[Path, int] = {}
    stack: list[Path] = []
    on: set[Path] = set()
    out: list[list[str]] = []

    def visit(v: Path) -> None:  # Tarjan's algorithm
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on.discard(w)
                group.append(w.relative_to(root).as_posix())
                if w == v:
                    break
            if len(group) > 1:
                out.append(sorted(group))

    for v in graph:
        if v not in index:
            visit(v)
    return out


def test_every_import_points_down_the_layers():
    assert upward_imports() == []


def test_no_files_import_each_other_in_a_circle():
    assert circles() == []


def _tree(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def test_a_planted_upward_import_is_caught_even_inside_a_function(tmp_path):
    root = _tree(tmp_path, {"star/sandbox/tools.py": "def f():\n    from star.training.grpo import GRPOTrainer\n",
                            "star/training/grpo.py": "from star.sandbox import tools\n"})
    bad = upward_imports(root)
    assert bad == ["star/sandbox/tools.py:2 imports star.training.grpo (star.training is not below star.sandbox)"]


def test_a_planted_circle_is_caught(tmp_path):
    root = _tree(tmp_path, {"star/sandbox/database.py": "from star.sandbox.rows import Database\n",
                            "star/sandbox/rows.py": "def f():\n    from star.sandbox import database\n"})
    assert circles(root) == [["star/sandbox/database.py", "star/sandbox/rows.py"]]


def test_a_file_outside_every_layer_is_named(tmp_path):
    root = _tree(tmp_path, {"star/newpkg/thing.py": "x = 1\n"})
    with pytest.raises(AssertionError, match="star/newpkg/thing.py belongs to no layer"):
        upward_imports(root)


def unexplained_local_imports(root: Path = ROOT) -> list[str]:
    """Function-local imports of star modules without a `# lazy: why` comment. A star module is imported at the
    top unless importing it there would pull a heavy dependency (torch, pandas, ...) into a light command, or
    it is optional with a fallback; the comment says which."""
    bad = []
    for path in _files(root):
        text = path.read_text()
        lines = text.split("\n")
        for fn in ast.walk(ast.parse(text)):
            if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for node in ast.walk(fn):
                if isinstance(node, (ast.Import, ast.ImportFrom)) and any(
                        m == "star" or m.startswith("star.") for m in
                        ([a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""])):
                    if "# lazy:" not in lines[node.end_lineno - 1] and "lazy:" not in lines[node.lineno - 1]:
                        bad.append(f"{path.relative_to(root)}:{node.lineno}")
    return bad


def test_a_star_module_is_imported_inside_a_function_only_for_a_stated_reason():
    assert unexplained_local_imports() == []


def test_an_unexplained_local_import_is_caught(tmp_path):
    root = _tree(tmp_path, {"star/sandbox/tools.py": "def f():\n    from star.sandbox import rows\n",
                            "star/sandbox/cli.py": "def f():\n    from star.sandbox import tools  # lazy: pulls torch\n"})
    assert unexplained_local_imports(root) == ["star/sandbox/tools.py:2"]
