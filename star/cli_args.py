"""Argument types the CLIs share: a config's Literal field as argparse choices, and an optional int.

The config model is the one list of the values a field takes; a CLI that typed its own copy refused a
value the config had gained (`--think route`, f1a811a), so every CLI reads its choices from here.
"""

from __future__ import annotations

import argparse
import typing


def literal_choices(model, field: str) -> tuple:
    """The values a pydantic model's Literal field takes (a model class or instance)."""
    cls = model if isinstance(model, type) else type(model)
    choices = typing.get_args(cls.model_fields[field].annotation)
    if not choices:
        raise TypeError(f"{cls.__name__}.{field} is not a Literal field")
    return choices


def optional_int(text: str) -> int | None:
    """An int, or None for 'none' / 'null' / '' (DVC renders a YAML null as 'None')."""
    if text.strip().lower() in ("", "none", "null"):
        return None
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer or 'none', got {text!r}") from None
