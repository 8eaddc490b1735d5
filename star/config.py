"""Compose the pipeline configuration from params/: default -> profile -> ablation -> variant -> --set.

params/default.yaml holds the paper's defaults, params/profiles/NAME.yaml what a scale changes,
params/ablations/AXIS.yaml one axis of the paper's ablations (levels = dotted-key overrides) and
params/grids/NAME.yaml full factorials over several axes. Each section is validated by its
package's config model (star/<pkg>/config.py), so a typo in any layer fails with the file named.
This module resolves and validates (and is the CLI); reading ablation files and naming variants is
star.ablations', params files and dotted keys star.params_io's.

    python -m star.config resolve --profile smoke --out params.yaml      # what `dvc repro` runs
    python -m star.config variants reward                                # the variants of an ablation
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from star.ablations import PROFILE_KEY, Ablation, Variant, ablations, load_ablation
from star.params_io import (PARAMS_DIR, ConfigError, flatten, get_dotted, layer_to_dotted, load_yaml, parse_set,
                            set_dotted, write_yaml)

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


def profiles(params_dir: Path = PARAMS_DIR) -> list[str]:
    return sorted(p.stem for p in (Path(params_dir) / "profiles").glob("*.yaml"))


# ------------------------------------------------------------------------------------- ablations


DEFAULT_PROFILE = "smoke"  # params.yaml as committed; the flow's and `star report`'s profile unless told


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
    _apply(values, sources, layer_to_dotted(base), str(default_path), known)

    layers: list[tuple[str, dict[str, Any]]] = []
    if profile:
        ppath = params_dir / "profiles" / f"{profile}.yaml"
        if not ppath.is_file():
            raise ConfigError(f"unknown profile {profile!r}; known: {', '.join(profiles(params_dir))}")
        layers.append((str(ppath), layer_to_dotted(load_yaml(ppath))))
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
                layers.append((f"{ppath} (via {axis}={level})", layer_to_dotted(load_yaml(ppath))))
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
