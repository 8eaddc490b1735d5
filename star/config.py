"""Compose the pipeline configuration from params/: default -> profile -> ablation -> variant -> --set.

params/default.yaml holds the paper's defaults, params/profiles/NAME.yaml what a scale changes,
params/ablations/AXIS.yaml one axis of the paper's ablations (levels = dotted-key overrides) and
params/grids/NAME.yaml full factorials over several axes. Each section is validated by its
package's config model (star/<pkg>/config.py), so a typo in any layer fails with the file named.

    python -m star.config resolve --profile smoke --out params.yaml      # what `dvc repro` runs
    python -m star.config variants reward                                # the variants of an ablation
"""

from __future__ import annotations

import argparse
import importlib
import itertools
import json
import re
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import yaml

from star.params_io import ConfigError, flatten, get_dotted, load_yaml, set_dotted, write_yaml

PROJECT_DIR = Path(__file__).resolve().parents[1]
PARAMS_DIR = PROJECT_DIR / "params"

# section -> "module:Class" of the package's config model. A section whose model is not importable
# (package not installed in this checkout) is kept as a plain dict and listed in `unvalidated`.
SECTION_MODELS: dict[str, str] = {
    "sandbox": "star.sandbox.config:SandboxConfig",
    "synthesis": "star.synthesis.config:SynthesisConfig",
    "split": "star.synthesis.config:SplitConfig",
    "teacher": "star.teachers.config:TeacherConfig",
    "model": "star.training.config:ModelConfig",
    "sft": "star.training.config:SFTConfig",
    "rl": "star.training.rl_config:GRPOConfig",
    "launch": "star.training.config:LaunchConfig",
    "sft_data": "star.teachers.config:SFTDataConfig",
    "eval": "star.policy_eval.config:EvalConfig",
    "qa": "star.qa.config:QAConfig",
    "learn": "star.qa.config:LearnConfig",
    "tracking": "star.tracking.config:TrackingConfig",
    "flow": "star.orchestration.config:FlowConfig",
    "report": "star.report.config:ReportConfig",
}

PROFILE_KEY = "_profile"  # a variant level may apply a whole profile (the scale axis does)
_NAME_OK = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._]*$")


def profiles(params_dir: Path = PARAMS_DIR) -> list[str]:
    return sorted(p.stem for p in (Path(params_dir) / "profiles").glob("*.yaml"))


def ablations(params_dir: Path = PARAMS_DIR) -> list[str]:
    """Names of single-axis ablations and grids (a grid and an ablation may not share a name)."""
    d = Path(params_dir)
    return sorted({p.stem for p in (d / "ablations").glob("*.yaml")} | {p.stem for p in (d / "grids").glob("*.yaml")})


def _layer_to_dotted(layer: dict) -> dict[str, Any]:
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


# ------------------------------------------------------------------------------------- ablations

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


DEFAULT_PROFILE = "smoke"  # params.yaml as committed; the flow's and `star report`'s profile unless told
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
        out[str(level)] = _layer_to_dotted(overrides) if PROFILE_KEY not in overrides else dict(overrides)
    fixed = data.get("fixed") or {}
    if not isinstance(fixed, dict):
        raise ConfigError(f"{path}: `fixed` must be a mapping")
    return str(axis), out, _layer_to_dotted(fixed), data


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
    fixed.update(_layer_to_dotted(data.get("fixed") or {}))
    return Ablation(path.stem, str(data.get("description", "")), axes, fixed, None, path)


# ------------------------------------------------------------------------------------ resolution

@dataclass
class ResolvedConfig:
    """The composed parameters: a nested dict, the typed section models, and where each value came from."""

    values: dict[str, Any]
    sections: dict[str, Any]
    sources: dict[str, str]
    profile: str | None = None
    ablation: str | None = None
    variant: str | None = None
    unvalidated: list[str] = field(default_factory=list)

    def __getitem__(self, section: str) -> Any:
        """The typed model of a section (or its dict when the package's model is not available)."""
        if section in self.sections:
            return self.sections[section]
        if section in self.values:
            return self.values[section]
        raise KeyError(section)

    def get(self, key: str) -> Any:
        return get_dotted(self.values, key)

    def flat(self) -> dict[str, Any]:
        return flatten(self.values)

    @property
    def name(self) -> str:
        """'smoke/reward/reward=sum' style: profile, ablation, variant (what a run is called)."""
        parts = [self.profile or "default"]
        if self.ablation:
            parts += [self.ablation, self.variant or "default"]
        return "/".join(parts)

    def to_params(self) -> dict[str, Any]:
        """What `resolve --out params.yaml` writes: the values plus a header DVC ignores unless asked."""
        meta = {"profile": self.profile, "ablation": self.ablation, "variant": self.variant}
        return {"run": meta, **self.values}

    def digest(self, keys: list[str] | None = None) -> str:
        """Content hash of the values (or of the given dotted keys/sections): the address of shared outputs."""
        import hashlib

        if keys is None:
            payload = self.values
        else:
            payload = {}
            for k in keys:
                try:
                    payload[k] = get_dotted(self.values, k)
                except KeyError:
                    payload[k] = None
        blob = json.dumps(payload, sort_keys=True, default=str).encode()
        return hashlib.sha256(blob).hexdigest()[:12]


def _import_model(spec: str):
    module_name, _, cls_name = spec.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name and module_name.startswith(exc.name):
            return None
        raise
    return getattr(module, cls_name, None)


def _apply(values: dict, sources: dict, layer: dict[str, Any], source: str, known: set[str]) -> None:
    for key, value in layer.items():
        if key == PROFILE_KEY:
            continue
        section = key.split(".", 1)[0]
        if section not in known:
            raise ConfigError(f"{source}: unknown section {section!r} in {key!r}; known: {', '.join(sorted(known))}")
        set_dotted(values, key, value, source=source)
        sources[key] = source


def resolve(profile: str | None = None, ablation: str | Ablation | None = None, variant: str | None = None,
            overrides: dict[str, Any] | None = None, params_dir: Path = PARAMS_DIR) -> ResolvedConfig:
    """default.yaml -> profiles/PROFILE.yaml -> ablation `fixed` -> variant levels -> overrides.

    A variant level carrying `_profile: NAME` applies that profile right after the base profile
    (the scale axis). Every section is validated by its config model; errors name the layer."""
    params_dir = Path(params_dir)
    default_path = params_dir / "default.yaml"
    base = load_yaml(default_path)
    known = set(base)
    values: dict[str, Any] = {}
    sources: dict[str, str] = {}
    _apply(values, sources, _layer_to_dotted(base), str(default_path), known)

    layers: list[tuple[str, dict[str, Any]]] = []
    if profile:
        ppath = params_dir / "profiles" / f"{profile}.yaml"
        if not ppath.is_file():
            raise ConfigError(f"unknown profile {profile!r}; known: {', '.join(profiles(params_dir))}")
        layers.append((str(ppath), _layer_to_dotted(load_yaml(ppath))))
    abl: Ablation | None = None
    var: Variant | None = None
    if ablation is not None:
        abl = ablation if isinstance(ablation, Ablation) else load_ablation(ablation, params_dir)
        if variant is None:
            raise ConfigError(f"ablation {abl.name!r}: name a variant ({', '.join(v.name for v in abl.variants())})")
        var = abl.variant(variant)
        for axis, level in var.levels.items():
            level_over = abl.axes[axis][level]
            if PROFILE_KEY in level_over:
                pname = level_over[PROFILE_KEY]
                ppath = params_dir / "profiles" / f"{pname}.yaml"
                if not ppath.is_file():
                    raise ConfigError(f"{abl.path}: level {level!r} names unknown profile {pname!r}")
                layers.append((f"{ppath} (via {axis}={level})", _layer_to_dotted(load_yaml(ppath))))
        layers.append((f"{abl.path} fixed", abl.fixed))
        for axis, level in var.levels.items():
            layers.append((f"{abl.path} {axis}={level}", abl.axes[axis][level]))
    elif variant is not None:
        raise ConfigError("a variant needs its ablation")
    if overrides:
        layers.append(("--set", dict(overrides)))
    for source, layer in layers:
        _apply(values, sources, layer, source, known)

    sections: dict[str, Any] = {}
    unvalidated: list[str] = []
    for section, section_values in values.items():
        spec = SECTION_MODELS.get(section)
        model = _import_model(spec) if spec else None
        if model is None:
            unvalidated.append(section)
            # Without a model, at least refuse keys the defaults do not know (typos in overrides).
            for key in flatten({section: section_values}):
                if key not in flatten({section: base.get(section, {})}):
                    raise ConfigError(f"{sources.get(key, '?')}: unknown key {key!r} (not in {default_path})")
            continue
        if not isinstance(section_values, dict):
            raise ConfigError(f"{sources.get(section, default_path)}: section {section!r} must be a mapping")
        try:
            sections[section] = model.model_validate(section_values)
        except Exception as exc:  # pydantic.ValidationError: name the layer that set each bad key
            errors = getattr(exc, "errors", lambda: [])()
            lines = []
            for err in errors:
                key = ".".join([section, *map(str, err.get("loc", ()))])
                lines.append(f"  {key}: {err.get('msg')} (set in {sources.get(key, 'defaults')})")
            raise ConfigError(f"invalid {section!r} parameters:\n" + ("\n".join(lines) or str(exc))) from None
    return ResolvedConfig(values, sections, sources, profile, abl.name if abl else None,
                          var.name if var else None, unvalidated)


def validate_sections(values: dict, sections: list[str], source: str = "params.yaml") -> None:
    """Check the named sections of a resolved params file against their config models: a wrong type
    (e.g. `dvc exp run -S rl.learning_rate=abc`) is a ConfigError naming the key, before a stage runs."""
    for section in sections:
        spec = SECTION_MODELS.get(section)
        model = _import_model(spec) if spec else None
        if model is None or section not in values:
            continue
        try:
            model.model_validate(values[section])
        except Exception as exc:
            errors = getattr(exc, "errors", lambda: [])()
            lines = [f"  {'.'.join([section, *map(str, e.get('loc', ()))])}: {e.get('msg')} (input {e.get('input')!r})"
                     for e in errors]
            raise ConfigError(f"{source}: invalid {section!r} parameters:\n" + ("\n".join(lines) or str(exc))) from None


# ------------------------------------------------------------------------------------------- CLI

def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m star.config", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("resolve", help="print or write the resolved parameters (params.yaml for DVC)")
    r.add_argument("--profile", default=None, help=f"one of: {', '.join(profiles())}")
    r.add_argument("--ablation", default=None, help=f"one of: {', '.join(ablations())}")
    r.add_argument("--variant", default=None, help="e.g. reward=sum (see `variants`)")
    r.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="extra override, repeatable")
    r.add_argument("--out", default=None, help="write here (atomically) instead of printing")
    r.add_argument("--params-dir", default=str(PARAMS_DIR))
    v = sub.add_parser("variants", help="list the variants of an ablation or grid")
    v.add_argument("ablation")
    v.add_argument("--params-dir", default=str(PARAMS_DIR))
    args = parser.parse_args(argv)
    try:
        if args.cmd == "variants":
            abl = load_ablation(args.ablation, Path(args.params_dir))
            for var in abl.variants():
                print(var.name)
            return 0
        cfg = resolve(args.profile, args.ablation, args.variant, parse_set(args.set), Path(args.params_dir))
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.out:
        write_yaml(args.out, cfg.to_params())
        print(f"wrote {args.out} ({cfg.name})", file=sys.stderr)
    else:
        yaml.safe_dump(cfg.to_params(), sys.stdout, sort_keys=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
