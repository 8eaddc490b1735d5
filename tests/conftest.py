"""Shared fixtures: the generated world everywhere, the real database when STAR_DB points at it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
for _k, _v in {"DO_NOT_TRACK": "1", "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
               "MLFLOW_DISABLE_TELEMETRY": "true", "GX_ANALYTICS_ENABLED": "false"}.items():
    os.environ.setdefault(_k, _v)

SHARED = Path(__file__).resolve().parents[1].parent / "shared"
QUERIES_DIR = SHARED / "travelplanner" / "queries"


def real_db_path() -> Path | None:
    """The real database directory when STAR_DB names one (CI sets it), else None."""
    value = os.environ.get("STAR_DB", "")
    if value and not value.startswith("generated") and Path(value).is_dir():
        return Path(value)
    return None


@pytest.fixture(scope="session")
def generated_db():
    from star.sandbox.database import load_database

    return load_database("generated:0")


@pytest.fixture(scope="session")
def real_db():
    path = real_db_path()
    if path is None:
        pytest.skip("STAR_DB is not set to the real TravelPlanner database")
    from star.sandbox.database import load_database

    return load_database(str(path))


@pytest.fixture(scope="session", params=["generated", "real"])
def any_db(request):
    """Runs a test on the generated world, and again on the real database when STAR_DB is set."""
    return request.getfixturevalue("generated_db" if request.param == "generated" else "real_db")


def official_queries_dir() -> Path:
    """The official query files: beside the real database (STAR_DB's folder), else in the shared checkout
    next to this clone."""
    db = real_db_path()
    if db is not None and (db.parent / "queries").is_dir():
        return db.parent / "queries"
    return QUERIES_DIR


@pytest.fixture(scope="session")
def queries_dir() -> Path:
    found = official_queries_dir()
    if not found.is_dir():
        pytest.skip(f"official query files not found at {found} (set STAR_DB=.../travelplanner/database)")
    return found
