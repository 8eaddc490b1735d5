"""Loading the official layout: what is in the sandbox, and clear errors naming the broken file."""

from __future__ import annotations

import shutil

import pytest

from star.sandbox.database import load_database, load_directory, resolve_db_spec
from star.sandbox.rows import FILES, Database, DatabaseError


@pytest.fixture(scope="module")
def small_world(generated_db):
    """The generated world with its flights cut to a few hundred, so that each load is quick."""
    tables = {t: getattr(generated_db, t) for t in ("city_states", "city_set", "state_set", "restaurants",
                                                      "attractions", "accommodations", "distance_rows")}
    return Database(**tables, flights=generated_db.flights[:300], source="small")


@pytest.fixture(scope="module")
def world_dir(small_world, tmp_path_factory):
    return small_world.save(tmp_path_factory.mktemp("world") / "db")


@pytest.fixture
def saved_world(world_dir, tmp_path):
    """A copy of the generated world in the official layout, free to break."""
    return shutil.copytree(world_dir, tmp_path / "db")


def test_saved_world_loads_back_unchanged(small_world, saved_world):
    db = load_directory(saved_world)
    for table in ("city_states", "city_set", "state_set", "flights", "restaurants", "attractions",
                  "accommodations", "distance_rows"):
        assert getattr(db, table) == getattr(small_world, table), table


def test_missing_directory_is_named(tmp_path):
    with pytest.raises(DatabaseError, match="database directory not found: .*nothing-here"):
        load_database(str(tmp_path / "nothing-here"), cache=False)


@pytest.mark.parametrize("table", ["accommodations", "attractions", "restaurants", "distances", "flights",
                                   "city_set", "city_states", "state_set"])
def test_missing_file_is_named(saved_world, table):
    (saved_world / FILES[table]).unlink()
    with pytest.raises(DatabaseError, match=f"missing database file: .*{FILES[table]}"):
        load_directory(saved_world)


@pytest.mark.parametrize("table, column", [("attractions", "Phone"), ("restaurants", "Average Cost"),
                                           ("accommodations", "house_rules"), ("flights", "FlightDate"),
                                           ("distances", "duration")])
def test_missing_column_is_named_with_its_file(saved_world, table, column):
    path = saved_world / FILES[table]
    header, rest = path.read_text(encoding="utf-8").split("\n", 1)
    path.write_text(header.replace(column, "Renamed") + "\n" + rest, encoding="utf-8")
    with pytest.raises(DatabaseError) as err:
        load_directory(saved_world)
    assert FILES[table] in str(err.value) and repr(column) in str(err.value)


def test_a_malformed_number_is_reported_with_file_and_row(saved_world):
    path = saved_world / FILES["restaurants"]
    lines = path.read_text(encoding="utf-8").split("\n")
    cells = lines[2].split(",")
    cells[-1] = "four point five"  # Aggregate Rating of data row 2
    lines[2] = ",".join(cells)
    path.write_text("\n".join(lines), encoding="utf-8")
    with pytest.raises(DatabaseError, match=r"clean_restaurant_2022\.csv data row 2"):
        load_directory(saved_world)


def test_a_broken_copy_does_not_touch_the_original(small_world, saved_world, tmp_path):
    broken = tmp_path / "broken"
    shutil.copytree(saved_world, broken)
    (broken / FILES["flights"]).unlink()
    with pytest.raises(DatabaseError):
        load_directory(broken)
    assert load_directory(saved_world).flights == small_world.flights


def test_bad_generated_seed_is_refused():
    with pytest.raises(DatabaseError, match="seed after 'generated:' must be an integer"):
        load_database("generated:abc", cache=False)


def test_spec_resolution_prefers_the_argument_then_star_db(monkeypatch):
    monkeypatch.setenv("STAR_DB", "/some/where")
    assert resolve_db_spec("generated:3") == "generated:3"
    assert resolve_db_spec(None) == "/some/where"
    monkeypatch.delenv("STAR_DB")
    assert resolve_db_spec(None) == "generated"


@pytest.mark.realdb
def test_an_env_spec_names_the_directory_in_that_variable(monkeypatch, saved_world):
    from star.sandbox.database import resolve_db_spec
    from star.sandbox.rows import DatabaseError

    monkeypatch.setenv("MY_TP_DB", str(saved_world))
    assert resolve_db_spec("env:MY_TP_DB") == str(saved_world)
    monkeypatch.delenv("MY_TP_DB")
    # Unset, it is refused by name instead of falling back to the generated world.
    with pytest.raises(DatabaseError, match=r"\$MY_TP_DB is not set"):
        resolve_db_spec("env:MY_TP_DB")


def test_real_database_keeps_the_official_loader_quirks(real_db):
    # dropna over every column: the 710 listings without house rules (and a few more) are not in the sandbox
    assert len(real_db.accommodations) == 4285
    assert all(a.house_rules for a in real_db.accommodations)
    assert len(real_db.restaurants) == 9551 and len(real_db.attractions) == 5302
    # duplicated distance pairs: the first row wins
    assert len(real_db.distance_rows) == 17602
    first = {}
    for row in real_db.distance_rows:
        first.setdefault((row.origin, row.dest), row)
    assert real_db.distances == first
    # the agent's city list (citySet.txt) lacks Jackson, which the evaluator's list has
    assert "Jackson" in real_db.city_states and "Jackson" not in real_db.city_set
    assert len(real_db.city_set) == 311
