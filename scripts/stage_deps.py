"""Every DVC stage's code deps are the import closure of the command it runs: derived, never listed by hand.

    .venv/bin/python scripts/stage_deps.py           # check: exit 1 naming each stage whose deps differ
    .venv/bin/python scripts/stage_deps.py --write   # rewrite the star/ deps of dvc.yaml and learn/dvc.yaml,
                                                     # and docs/stages.md (stage -> command -> module)

A stage's command is `star SUBCOMMAND ...` (after the stage_run wrapper's `--`); star/cli.py's table names
the module that runs it. The closure follows every `import` in each file of star/ (function-local ones
included: they run when the command takes that path) and every string naming a star module (`"star.x.y"`,
`"star.x:Class"`, as config models and registries are loaded), plus the package `__init__`s Python runs on
the way. The stage_run wrapper is not followed: it logs to MLflow and writes none of a stage's outputs.
Where every file of a package is in the closure the package is listed as one dep; otherwise its files are.
Data deps (anything outside star/) stay as written, after the code deps.
"""

from __future__ import annotations

import argparse
import ast
import functools
import re
import shlex
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PIPELINES = ("dvc.yaml", "learn/dvc.yaml")
PACKAGE = "star"
_MODULE_STRING = re.compile(r"^star(\.\w+)+(:\w+)?$")


def module_file(name: str, root: Path = ROOT) -> Path | None:
    """star.a.b -> star/a/b.py or star/a/b/__init__.py (None when no such file)."""
    base = root.joinpath(*name.split("."))
    for path in (base.with_suffix(".py"), base / "__init__.py"):
        if path.is_file():
            return path
    return None


def module_name(path: Path, root: Path = ROOT) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _parents(name: str) -> list[str]:
    parts = name.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts))]


def import_statements(path: Path, root: Path = ROOT, tree: ast.AST | None = None) -> list[tuple[int, str]]:
    """(line, module) for every import statement in a file, anywhere in it (relative imports resolved; a
    `from pkg import name` also yields `pkg.name` when that is a module). The layering test reads these too."""
    tree = tree or ast.parse(path.read_text(), filename=str(path))
    here = module_name(path, root)
    package = here if path.name == "__init__.py" else here.rpartition(".")[0]
    out: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            out.append((node.lineno, target))
            out += [(node.lineno, f"{target}.{a.name}") for a in node.names if module_file(f"{target}.{a.name}", root)]
    return out


@functools.cache
def imported_modules(path: Path, root: Path = ROOT) -> frozenset[str]:
    """The star modules one file imports, anywhere in it, or names in a string."""
    tree = ast.parse(path.read_text(), filename=str(path))
    found = {m for _, m in import_statements(path, root, tree)}
    found |= {node.value.partition(":")[0] for node in ast.walk(tree)
              if isinstance(node, ast.Constant) and isinstance(node.value, str) and _MODULE_STRING.match(node.value)}
    out = set()
    for name in found:
        if name == PACKAGE or name.startswith(PACKAGE + "."):
            for candidate in (*_parents(name), name):
                if module_file(candidate, root):
                    out.add(candidate)
    return frozenset(out)


def closure(entry: str, root: Path = ROOT) -> set[Path]:
    """Every star file the module `entry` runs: its imports, theirs, and the packages' __init__s."""
    seen: set[str] = set()
    todo = [entry, *_parents(entry)]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        path = module_file(name, root)
        if path is None:
            raise SystemExit(f"stage_deps: no module {name} under {root / PACKAGE}")
        seen.add(name)
        if name != f"{PACKAGE}.cli":  # the dispatcher: which module it runs is the stage's subcommand
            todo.extend(m for m in imported_modules(path, root) if m not in seen)
        todo.extend(p for p in _parents(name) if p not in seen)
    # star/cli.py dispatches the subcommand: a dep, but its table names every command's module, not this one's
    return {module_file(n, root) for n in seen} | {module_file(f"{PACKAGE}.cli", root)}


def compress(files: set[Path], root: Path = ROOT) -> list[str]:
    """Paths relative to root, a whole package as its folder when every file of it is in `files`."""
    def whole(folder: Path) -> bool:
        return all(f in files for f in folder.rglob("*.py") if "__pycache__" not in f.parts)

    out: set[str] = set()
    for f in files:
        top = f.parent
        # the highest folder below star/ that the closure holds whole
        chosen = None
        while top != root / PACKAGE and top.is_relative_to(root / PACKAGE):
            if whole(top):
                chosen = top
            top = top.parent
        out.add((chosen or f).relative_to(root).as_posix())
    return sorted(out)


def command_words(cmd: str) -> list[str]:
    """The stage's own command: what follows the stage_run wrapper's `--`."""
    words = shlex.split(cmd.replace("\n", " "))
    return words[words.index("--") + 1:] if "--" in words else words


def command_module(cmd: str) -> str | None:
    """The module that runs a stage's command: `star SUB` after the wrapper's `--`, or `python -m MOD`."""
    if str(ROOT) not in sys.path:  # run as a script from anywhere: this checkout's star
        sys.path.insert(0, str(ROOT))
    from star.cli import COMMANDS

    words = command_words(cmd)
    for i, word in enumerate(words):
        if Path(word).name == "star" and i + 1 < len(words):
            sub = words[i + 1]
            if sub not in COMMANDS:
                raise SystemExit(f"stage_deps: `star {sub}` is not a star subcommand (star/cli.py)")
            return COMMANDS[sub][0]
        if word == "-m" and i + 1 < len(words) and words[i + 1].startswith(PACKAGE + "."):
            return words[i + 1]
    return None


def code_deps(cmd: str, root: Path = ROOT) -> list[str]:
    entry = command_module(cmd)
    return [] if entry is None else compress(closure(entry, root), root)


def _yaml():
    from ruamel.yaml import YAML

    return YAML()


def _stage_bodies(doc) -> dict[str, dict]:
    return {name: (stage["do"] if "do" in stage else stage) for name, stage in doc["stages"].items()}


def is_code(dep: str) -> bool:
    return dep == PACKAGE or dep.startswith(PACKAGE + "/")


def plan(pipeline: Path, root: Path = ROOT) -> tuple[object, dict[str, tuple[list[str], list[str]]]]:
    """The parsed pipeline and, per stage, (deps as written, deps derived)."""
    doc = _yaml().load(pipeline.read_text())
    out = {}
    for name, body in _stage_bodies(doc).items():
        written = [str(d) for d in body.get("deps") or []]
        derived = code_deps(str(body["cmd"]), root) + [d for d in written if not is_code(d)]
        out[name] = (written, derived)
    return doc, out


def rewrite(text: str, doc, stages: dict[str, tuple[list[str], list[str]]]) -> str:
    """`text` with each stage's deps list replaced by its derived one; every other line as it was."""
    lines = text.splitlines(keepends=True)
    bodies = _stage_bodies(doc)
    edits = []
    for name, (written, derived) in stages.items():
        seq = bodies[name].get("deps")
        if written == derived or not seq:
            continue
        first, last = seq.lc.data[0][0], seq.lc.data[len(seq) - 1][0]
        indent = lines[first][: len(lines[first]) - len(lines[first].lstrip())]
        edits.append((first, last, [f"{indent}- {d}\n" for d in derived]))
    for first, last, new in sorted(edits, reverse=True):
        lines[first:last + 1] = new
    return "".join(lines)


TABLE = ROOT / "docs" / "stages.md"


def stage_table(root: Path = ROOT) -> str:
    """docs/stages.md: every stage of both pipelines, the command it runs and the module that runs it."""
    lines = ["# Stages: name → command → module", "",
             "Generated from dvc.yaml and learn/dvc.yaml by `.venv/bin/python scripts/stage_deps.py --write`; "
             "tests/orchestration/test_stage_deps.py fails when it is stale. A stage `NAME` runs `star NAME` "
             "(underscores as dashes; `learn_X` runs `star learn X`), whose code is `star/<package>/cli_NAME.py`; "
             "its code deps are that module's import closure.", "",
             "| pipeline | stage | command | module | code deps (files) |", "|---|---|---|---|---|"]
    for rel in PIPELINES:
        doc = _yaml().load((root / rel).read_text())
        for name, stage in doc["stages"].items():
            body = stage["do"] if "do" in stage else stage
            words = command_words(str(body["cmd"]))
            sub = words[1:3] if words[1:2] == ["learn"] else words[1:2]
            items = list(stage["foreach"]) if isinstance(stage.get("foreach"), dict) else []
            shown = f"{name}@{{{','.join(items)}}}" if items else name
            module = command_module(str(body["cmd"]))
            n = len(closure(module, root)) if module else 0
            path = module_file(module, root).relative_to(root).as_posix() if module else "-"
            lines.append(f"| {rel} | `{shown}` | `star {' '.join(sub)}` | [{path}](../{path}) | {n} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--write", action="store_true", help="rewrite the code deps in place")
    args = ap.parse_args(argv)
    stale = 0
    for rel in PIPELINES:
        path = ROOT / rel
        doc, stages = plan(path)
        for name, (written, derived) in stages.items():
            if written == derived:
                continue
            stale += 1
            missing = [d for d in derived if d not in written]
            extra = [d for d in written if d not in derived]
            print(f"{rel}: stage {name}: deps differ from its command's import closure;"
                  f" missing {missing or '-'}, not imported {extra or '-'}")
        if args.write:
            path.write_text(rewrite(path.read_text(), doc, stages))
    table = stage_table()
    if args.write:
        TABLE.write_text(table)
    elif not TABLE.is_file() or TABLE.read_text() != table:
        stale += 1
        print(f"{TABLE.relative_to(ROOT)} is not the table of today's stages")
    if stale and not args.write:
        print("run `.venv/bin/python scripts/stage_deps.py --write` to derive them", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
