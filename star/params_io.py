"""Params files and their dotted keys: YAML read and written atomically, nested dicts <-> `rl.lr` keys.

The IO under star.config (which composes params/ from profiles and ablations), light enough for any
stage CLI that reads its section of params.yaml.
"""

from __future__ import annotations

import copy
import os
import re
import tempfile
from pathlib import Path
from typing import Any

import yaml

PROJECT_DIR = Path(__file__).resolve().parents[1]
PARAMS_DIR = PROJECT_DIR / "params"


class ConfigError(ValueError):
    """A params file or override is malformed or names an unknown key; the message says which."""


# ----------------------------------------------------------------------------------------- files

def load_yaml(path: str | Path) -> dict:
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"{path}: params file not found")
    try:
        data = yaml.safe_load(path.read_text())
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: not valid YAML ({exc})") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a mapping at top level, got {type(data).__name__}")
    return data


def write_yaml(path: str | Path, data: dict) -> Path:
    """Write atomically (temp file + rename): a failure never leaves a half-written params file."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as fh:
            yaml.safe_dump(data, fh, sort_keys=False, default_flow_style=False)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def flatten(values: dict, prefix: str = "") -> dict[str, Any]:
    """{'rl': {'lr': 1}} -> {'rl.lr': 1} (what MLflow logs and DVC templating reads)."""
    out: dict[str, Any] = {}
    for key, value in values.items():
        dotted = f"{prefix}{key}"
        if isinstance(value, dict) and value:
            out.update(flatten(value, dotted + "."))
        else:
            out[dotted] = value
    return out


def set_dotted(values: dict, key: str, value: Any, *, source: str = "override") -> None:
    parts = key.split(".")
    if not all(parts):
        raise ConfigError(f"{source}: malformed key {key!r}")
    node = values
    for part in parts[:-1]:
        child = node.setdefault(part, {})
        if not isinstance(child, dict):
            raise ConfigError(f"{source}: {key!r} descends into {part!r}, which is a value, not a section")
        node = child
    node[parts[-1]] = copy.deepcopy(value)


def get_dotted(values: dict, key: str) -> Any:
    node: Any = values
    for part in key.split("."):
        if not isinstance(node, dict) or part not in node:
            raise KeyError(key)
        node = node[part]
    return node


def layer_to_dotted(layer: dict) -> dict[str, Any]:
    """A layer may be nested sections ({rl: {lr: …}}) or dotted keys ({rl.lr: …}) or a mix."""
    out: dict[str, Any] = {}
    for key, value in layer.items():
        key = str(key)
        if "." not in key and isinstance(value, dict):
            for sub, v in flatten(value).items():
                out[f"{key}.{sub}"] = v
        else:
            out[key] = value
    return out


def parse_set(items: list[str] | None) -> dict[str, Any]:
    """['rl.lr=1e-6', 'rl.reward=macro'] -> dotted overrides; values are YAML scalars (never eval'd)."""
    out: dict[str, Any] = {}
    for item in items or []:
        key, sep, raw = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"--set {item!r}: expected KEY=VALUE, e.g. rl.lr=1e-6")
        try:
            value = yaml.safe_load(raw) if raw.strip() else ""
        except yaml.YAMLError as exc:
            raise ConfigError(f"--set {item!r}: value is not a YAML scalar ({exc})") from None
        out[key.strip()] = _number(value)
    return out


def _number(value: Any) -> Any:
    """YAML 1.1 reads `1e-6` as a string; a CLI user means the number."""
    if isinstance(value, str):
        try:
            return float(value) if re.fullmatch(r"[-+]?(\d+\.?\d*|\.\d+)[eE][-+]?\d+", value.strip()) else value
        except ValueError:
            return value
    return value
