"""JSONL files: line-numbered reading and atomic writing, shared by every stage.

A bad line is an error naming the file and line; a write goes to a temp file in the same folder
and is renamed over the target, so a crash never leaves a half-written file or loses the old one.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any, Iterable, Iterator


def parse_lines(lines: Iterable[str]) -> Iterator[tuple[int, Any, json.JSONDecodeError | None]]:
    """(line number, value, None) for each non-blank line, or (line number, None, the decode error): the one
    JSONL loop, for readers that report a bad line their own way (stop with their error type, or record it
    and go on) and keep their own checks of what a record holds."""
    for lineno, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            yield lineno, json.loads(line), None
        except json.JSONDecodeError as exc:
            yield lineno, None, exc


def open_text(path: str | Path):
    """A text file for reading, through gzip when its name ends in `.gz` (committed result files are kept
    small that way)."""
    import gzip

    path = Path(path)
    return gzip.open(path, "rt", encoding="utf-8") if path.suffix == ".gz" else open(path, encoding="utf-8")


def iter_jsonl(path: str | Path, error: type[Exception] = ValueError) -> Iterator[tuple[int, dict]]:
    """(line number, object) for each non-blank line (a `.gz` file through gzip); `error` is raised for a
    missing file or bad line."""
    path = Path(path)
    if not path.is_file():
        raise error(f"{path}: file not found")
    with open_text(path) as fh:
        for lineno, record, bad in parse_lines(fh):
            if bad is not None:
                raise error(f"{path}:{lineno}: not valid JSON ({bad.msg} at column {bad.colno})")
            if not isinstance(record, dict):
                raise error(f"{path}:{lineno}: expected a JSON object, got {type(record).__name__}")
            yield lineno, record


def read_jsonl(path: str | Path, error: type[Exception] = ValueError) -> list[dict]:
    return [record for _, record in iter_jsonl(path, error)]


def _atomic_write(path: str | Path, write) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp, 0o666 & ~umask)  # mkstemp makes 0600; data files are shared
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            write(fh)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def write_jsonl(path: str | Path, records: Iterable[dict]) -> Path:
    """Write records atomically; returns the path written."""

    def write(fh):
        for record in records:
            fh.write(json.dumps(record, ensure_ascii=False) + "\n")

    return _atomic_write(path, write)


def atomic_write_text(path: str | Path, text: str) -> Path:
    return _atomic_write(path, lambda fh: fh.write(text))
