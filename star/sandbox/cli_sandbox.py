"""`star sandbox`: write the chosen database (real or generated) in the official CSV layout, plus a summary.

    star sandbox --db generated:0 --out data/sandbox

The directory is written next to its final place and renamed into it, so an interrupted run
never leaves a half-written database behind, and `load_database(OUT)` reads it back. The
summary JSON (default OUT/summary.json) holds the source spec, the table sizes and a SHA-256
per file, for DVC metrics and for checking that two runs wrote the same world.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import sys
import tempfile
from pathlib import Path

from star.sandbox.database import load_database, resolve_db_spec
from star.sandbox.rows import FILES, DatabaseError


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--db", default=None, help="database: a directory in the official layout, 'generated' or "
                                                   "'generated:SEED' (default: $STAR_DB, else generated)")
    parser.add_argument("--out", required=True, help="directory to write (replaced if it exists)")
    parser.add_argument("--summary", default=None, help="summary JSON path (default: OUT/summary.json)")


def export_database(spec: str | None, out: str | Path, summary_path: str | Path | None = None) -> dict:
    """Write database `spec` to `out` in the official layout and return (and write) its summary."""
    spec = resolve_db_spec(spec)
    db = load_database(spec)
    out = Path(out)
    if out.exists() and not _replaceable(out):
        raise FileExistsError(f"{out} exists and does not look like a database written by `star sandbox`; "
                              "refusing to replace it")
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    try:
        db.save(tmp)
        files = {rel: _sha256(tmp / rel) for rel in FILES.values()}
        summary = {"spec": spec, "source": db.source, "tables": db.summary(), "files": files}
        if summary_path is None:
            (tmp / "summary.json").write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
        old = None
        if out.exists():
            old = out.with_name(f".{out.name}.old")
            shutil.rmtree(old, ignore_errors=True)
            out.rename(old)
        tmp.rename(out)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    if summary_path is not None:
        _write_atomic(Path(summary_path), json.dumps(summary, indent=2) + "\n")
    return summary


def _replaceable(out: Path) -> bool:
    """An empty directory, or one holding only the official layout (+ summary), may be replaced."""
    if not out.is_dir():
        return False
    names = {p.name for p in out.iterdir()}
    return not names or names <= {"accommodations", "attractions", "restaurants", "googleDistanceMatrix", "flights",
                                  "background", "summary.json"}


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _write_atomic(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)


def run(args: argparse.Namespace) -> int:
    try:
        summary = export_database(args.db, args.out, args.summary)
    except DatabaseError as exc:
        print(f"star sandbox: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"star sandbox: cannot write {args.out}: {exc}", file=sys.stderr)
        return 2
    tables = ", ".join(f"{k} {v}" for k, v in summary["tables"].items())
    print(f"wrote {summary['spec']} to {args.out}: {tables}")
    return 0
