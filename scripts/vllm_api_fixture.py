"""Write tests/fixtures/vllm_api.json: the vLLM API our backend relies on, read from a wheel (not installed).

    pip download --no-deps vllm==0.33.0 -d /tmp/vllm_wheel
    .venv/bin/python scripts/vllm_api_fixture.py /tmp/vllm_wheel/vllm-0.33.0-*.whl

Signatures come from the wheel's source by `ast` (nothing is imported), so the fixture is exactly
what that release accepts; tests/rollout/vllm_standin.py builds a module with these signatures.
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import json
import re
import zipfile
from pathlib import Path

OUT = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "vllm_api.json"
# (file in the wheel, class, methods) whose signatures the backend calls.
METHODS = [
    ("vllm/entrypoints/llm.py", "LLM", ["__init__", "generate", "apply_model", "collective_rpc", "reset_prefix_cache",
                                       "sleep", "wake_up", "get_tokenizer"]),
    ("vllm/v1/worker/worker_base.py", "WorkerBase", ["apply_model"]),
    # collective_rpc("reload_weights", kwargs=...) lands here (the Worker passes *args/**kwargs through).
    ("vllm/v1/worker/gpu_model_runner.py", "GPUModelRunner", ["reload_weights"]),
    ("vllm/outputs.py", "RequestOutput", ["__init__"]),
]
# (file, class): fields of dataclass-like classes (annotated class attributes).
FIELDS = [
    ("vllm/sampling_params.py", "SamplingParams"),
    ("vllm/outputs.py", "CompletionOutput"),
    ("vllm/logprobs.py", "Logprob"),
    ("vllm/inputs/llm.py", "TokensPrompt"),
    ("vllm/engine/arg_utils.py", "EngineArgs"),
]
# Literal aliases whose values the backend passes as strings.
LITERALS = [("vllm/config/model.py", "LogprobsMode"), ("vllm/config/parallel.py", "DistributedExecutorBackend")]


def _class(tree: ast.Module, name: str) -> ast.ClassDef:
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and node.name == name:
            return node
    raise KeyError(name)


def _params(fn: ast.FunctionDef) -> list[dict]:
    a = fn.args
    out = []
    positional = a.posonlyargs + a.args
    defaults = [None] * (len(positional) - len(a.defaults)) + list(a.defaults)
    for i, (arg, default) in enumerate(zip(positional, defaults)):
        kind = "POSITIONAL_ONLY" if i < len(a.posonlyargs) else "POSITIONAL_OR_KEYWORD"
        out.append({"name": arg.arg, "kind": kind, "default": None if default is None else ast.unparse(default)})
    if a.vararg:
        out.append({"name": a.vararg.arg, "kind": "VAR_POSITIONAL", "default": None})
    for arg, default in zip(a.kwonlyargs, a.kw_defaults):
        out.append({"name": arg.arg, "kind": "KEYWORD_ONLY", "default": None if default is None else ast.unparse(default)})
    if a.kwarg:
        out.append({"name": a.kwarg.arg, "kind": "VAR_KEYWORD", "default": None})
    return out


def _fields(cls: ast.ClassDef) -> dict[str, str | None]:
    return {n.target.id: (ast.unparse(n.value) if n.value is not None else None)
            for n in cls.body if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name)}


def extract(wheel: Path) -> dict:
    with zipfile.ZipFile(wheel) as zf:
        def tree(path: str) -> ast.Module:
            return ast.parse(zf.read(path).decode())

        version = re.search(r"^Version: (.+)$", zf.read(next(n for n in zf.namelist() if n.endswith(
            ".dist-info/METADATA"))).decode(), re.M).group(1).strip()
        api = {"vllm_version": version, "wheel": wheel.name,
               "wheel_sha256": hashlib.sha256(wheel.read_bytes()).hexdigest(), "methods": {}, "fields": {},
               "literals": {}}
        for path, cls_name, names in METHODS:
            cls = _class(tree(path), cls_name)
            defs = {n.name: n for n in cls.body if isinstance(n, ast.FunctionDef)}
            for name in names:
                api["methods"][f"{cls_name}.{name}"] = _params(defs[name])
        for path, cls_name in FIELDS:
            api["fields"][cls_name] = _fields(_class(tree(path), cls_name))
        for path, alias in LITERALS:
            for node in tree(path).body:
                if isinstance(node, (ast.Assign, ast.AnnAssign)):
                    target = node.targets[0] if isinstance(node, ast.Assign) else node.target
                    if isinstance(target, ast.Name) and target.id == alias:
                        api["literals"][alias] = [ast.literal_eval(e) for e in node.value.slice.elts]
    return api


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("wheel", type=Path)
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    api = extract(args.wheel)
    args.out.write_text(json.dumps(api, indent=1) + "\n")
    print(f"{args.out}: vllm {api['vllm_version']}, {len(api['methods'])} methods, {len(api['fields'])} classes")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
