"""Ablations and their variants: params/ablations/AXIS.yaml (one axis) and params/grids/NAME.yaml (a factorial),
read into an Ablation; a variant's name (`reward=sum`), slug and run folder; a run's overrides as a label.

star.config composes a variant's parameters from these; the flow and the report name runs with them.
"""

from __future__ import annotations

import itertools
import json
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from star.params_io import PARAMS_DIR, ConfigError, layer_to_dotted, load_yaml


PROFILE_KEY = "_profile"  # a variant level may apply a whole profile (the scale axis does)


_NAME_OK = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._]*$")


def ablations(params_dir: Path = PARAMS_DIR) -> list[str]:
    """Names of single-axis ablations and grids (a grid and an ablation may not share a name)."""
    d = Path(params_dir)
    return sorted({p.stem for p in (d / "ablations").glob("*.yaml")} | {p.stem for p in (d / "grids").glob("*.yaml")})


@dataclass(frozen=True)
class Variant:
    """One point of an ablation: a level per axis and the overrides those levels imply."""

    ablation: str
    levels: dict[str, str]
    overrides: dict[str, Any]

    @property
    def name(self) -> str:
        return variant_name(self.levels)


def variant_name(levels: dict[str, str]) -> str:
    """{'reward': 'sum', 'algorithm': 'dapo'} -> 'reward=sum,algorithm=dapo' (axis order kept).

    Path- and MLflow-safe except for '=' and ',' which both tolerate; `variant_slug` gives a
    directory name."""
    if not levels:
        return "default"
    for axis, level in levels.items():
        for part in (axis, str(level)):
            if not _NAME_OK.match(part):
                raise ConfigError(f"axis/level name {part!r}: use letters, digits, '.' and '_' only")
    return ",".join(f"{axis}={level}" for axis, level in levels.items())


def parse_variant_name(name: str) -> dict[str, str]:
    if name == "default":
        return {}
    levels: dict[str, str] = {}
    for part in name.split(","):
        axis, sep, level = part.partition("=")
        if not sep or not axis or not level:
            raise ConfigError(f"variant name {name!r}: expected AXIS=LEVEL[,AXIS=LEVEL…]")
        if axis in levels:
            raise ConfigError(f"variant name {name!r}: axis {axis!r} given twice")
        levels[axis] = level
    return levels


def variant_slug(name: str) -> str:
    """'reward=sum,algorithm=dapo' -> 'reward-sum__algorithm-dapo' (a directory name)."""
    return name.replace("=", "-").replace(",", "__")


# Overrides of these sections say where and how a run goes (its folder, its tracking store), not what it
# runs, so they are left out of its name.
UNNAMED_SECTIONS = ("flow", "tracking")


def overrides_label(overrides: dict[str, Any] | None) -> str:
    """{'rl.learning_rate': 0.0002} -> 'rl.learning_rate=0.0002' (keys sorted; '' for none): what a run
    changed on top of its profile and variant, as its names, tags and report state it."""
    named = {k: v for k, v in (overrides or {}).items() if k.split(".", 1)[0] not in UNNAMED_SECTIONS}
    return ",".join(f"{k}={json.dumps(v) if isinstance(v, (list, dict)) else v}" for k, v in sorted(named.items()))


def overrides_slug(overrides: dict[str, Any] | None) -> str:
    """The label as part of a folder and DVC experiment (git ref) name: 'rl.learning_rate-0.0002'. A
    character neither may hold becomes '_', and then a short digest keeps different overrides apart."""
    import hashlib

    label = overrides_label(overrides)
    plain = variant_slug(label)
    slug = re.sub(r"\.{2,}", "_", re.sub(r"[^A-Za-z0-9._-]", "_", plain)).rstrip(".")
    if slug != plain or len(slug) > 60:
        slug = f"{slug[:60]}-{hashlib.sha256(label.encode()).hexdigest()[:6]}"
    return slug


def run_dir_name(name: str, overrides: dict[str, Any] | None) -> str:
    """An ablation's folder under runs/PROFILE/: its name, plus the overrides it ran with."""
    slug = overrides_slug(overrides)
    return f"{name}_{slug}" if slug else name


def part_name(name: str, levels: list[str] | None) -> str:
    """The name of a run over some levels of an ablation (its MLflow parent, report and lock folder)."""
    return "-".join([name, *levels]) if levels else name


@dataclass(frozen=True)
class Ablation:
    """An ablation file (one axis) or a grid (the full factorial over several axes)."""

    name: str
    description: str
    axes: dict[str, dict[str, dict[str, Any]]]  # axis -> level -> dotted overrides
    fixed: dict[str, Any] = field(default_factory=dict)
    paper_table: str | None = None
    path: Path | None = None

    @property
    def factorial(self) -> bool:
        return len(self.axes) > 1

    def variants(self) -> list[Variant]:
        axis_names = list(self.axes)
        out = []
        for combo in itertools.product(*(list(self.axes[a]) for a in axis_names)):
            levels = dict(zip(axis_names, combo))
            overrides: dict[str, Any] = {}
            for axis, level in levels.items():
                overrides.update(self.axes[axis][level])
            out.append(Variant(self.name, levels, overrides))
        return out

    def only(self, levels: list[str]) -> Ablation:
        """The same ablation over some of its levels (each name a level of one of its axes; an axis none of
        them names keeps all its levels): its variants are variants of the whole one."""
        known = {level for axis in self.axes.values() for level in axis}
        unknown = [level for level in levels if level not in known]
        if unknown or not levels:
            raise ConfigError(f"ablation {self.name!r} has no level(s) {unknown or levels!r}; known: {sorted(known)}")
        axes = {name: ({k: v for k, v in axis.items() if k in levels} if set(axis) & set(levels) else axis)
                for name, axis in self.axes.items()}
        return replace(self, axes=axes)

    def variant(self, name: str) -> Variant:
        levels = parse_variant_name(name)
        for v in self.variants():
            if v.levels == levels:
                return v
        known = ", ".join(v.name for v in self.variants())
        raise ConfigError(f"ablation {self.name!r} has no variant {name!r}; known: {known}")


def _read_axis_file(path: Path) -> tuple[str, dict[str, dict[str, Any]], dict[str, Any], dict]:
    data = load_yaml(path)
    unknown = set(data) - {"description", "paper_table", "axis", "levels", "fixed"}
    if unknown:
        raise ConfigError(f"{path}: unknown keys {sorted(unknown)} (expected description, paper_table, axis, levels, fixed)")
    axis = data.get("axis") or path.stem
    levels = data.get("levels")
    if not isinstance(levels, dict) or not levels:
        raise ConfigError(f"{path}: `levels` must be a non-empty mapping of level -> overrides")
    out: dict[str, dict[str, Any]] = {}
    for level, overrides in levels.items():
        if not isinstance(overrides, dict):
            raise ConfigError(f"{path}: level {level!r} must map dotted keys to values")
        out[str(level)] = layer_to_dotted(overrides) if PROFILE_KEY not in overrides else dict(overrides)
    fixed = data.get("fixed") or {}
    if not isinstance(fixed, dict):
        raise ConfigError(f"{path}: `fixed` must be a mapping")
    return str(axis), out, layer_to_dotted(fixed), data


def load_ablation(name: str, params_dir: Path = PARAMS_DIR) -> Ablation:
    """By name (params/ablations/NAME.yaml or params/grids/NAME.yaml) or by path."""
    params_dir = Path(params_dir)
    as_path = Path(name)
    if as_path.suffix in (".yaml", ".yml") and as_path.is_file():
        path = as_path
    else:
        candidates = [params_dir / "ablations" / f"{name}.yaml", params_dir / "grids" / f"{name}.yaml"]
        found = [p for p in candidates if p.is_file()]
        if not found:
            raise ConfigError(f"unknown ablation {name!r}; known: {', '.join(ablations(params_dir))}")
        path = found[0]
    if path.parent.name != "grids":
        axis, levels, fixed, data = _read_axis_file(path)
        return Ablation(path.stem, str(data.get("description", "")), {axis: levels}, fixed,
                        None if data.get("paper_table") is None else str(data["paper_table"]), path)
    data = load_yaml(path)
    unknown = set(data) - {"description", "axes", "fixed"}
    if unknown:
        raise ConfigError(f"{path}: unknown keys {sorted(unknown)} (expected description, axes, fixed)")
    spec = data.get("axes")
    if isinstance(spec, list):
        spec = {a: None for a in spec}
    if not isinstance(spec, dict) or len(spec) < 2:
        raise ConfigError(f"{path}: `axes` must name at least two ablation axes (a list, or axis -> [levels])")
    axes: dict[str, dict[str, dict[str, Any]]] = {}
    fixed: dict[str, Any] = {}
    for axis_file, wanted in spec.items():
        sub = load_ablation(str(axis_file), params_dir)
        if sub.factorial:
            raise ConfigError(f"{path}: axis {axis_file!r} is itself a grid")
        (axis, levels), = sub.axes.items()
        if wanted is not None:
            missing = [str(w) for w in wanted if str(w) not in levels]
            if missing:
                raise ConfigError(f"{path}: axis {axis!r} has no levels {missing}; known: {list(levels)}")
            levels = {str(w): levels[str(w)] for w in wanted}
        for key, value in sub.fixed.items():
            if key in fixed and fixed[key] != value:
                raise ConfigError(f"{path}: axes disagree on fixed {key!r} ({fixed[key]!r} vs {value!r})")
            fixed[key] = value
        axes[axis] = levels
    fixed.update(layer_to_dotted(data.get("fixed") or {}))
    return Ablation(path.stem, str(data.get("description", "")), axes, fixed, None, path)
