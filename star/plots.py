"""Figures written whole or not at all: a reader never sees a half-written PNG (the reports' plots)."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def save_figure(fig, path: str | Path, dpi: int = 110) -> Path:
    """Save a matplotlib figure to `path` through a temporary file in the same folder, then rename."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.stem}.", suffix=path.suffix)
    os.close(fd)
    try:
        fig.savefig(tmp, dpi=dpi)
        os.replace(tmp, path)
    finally:
        Path(tmp).unlink(missing_ok=True)
    return path
