"""`star tools` (one call, or a JSONL batch) and `star sandbox` (write a database in the official layout)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from star.cli import main
from star.sandbox.database import load_database, load_directory
from star.sandbox.tools import Toolbox

DB = "generated:0"


@pytest.fixture(scope="module")
def toolbox(generated_db):
    return Toolbox(generated_db, style="compact")


@pytest.fixture(scope="module")
def a_city(generated_db):
    return next(c for c in generated_db.city_set if c in generated_db.restaurants_by_city)


@pytest.fixture(scope="module")
def a_flight(generated_db):
    origin, dest, date = next(iter(generated_db.flights_by_route_date))
    return {"departure": origin, "destination": dest, "date": date}


# -- single calls -----------------------------------------------------------------------------------------

def test_single_call_prints_the_observation(capsys, toolbox, a_city):
    code = main(["tools", "SearchRestaurant", json.dumps({"city": a_city}), "--db", DB])
    assert code == 0
    assert capsys.readouterr().out == toolbox.call("SearchRestaurant", {"city": a_city}) + "\n"


def test_single_call_official_style_and_alias(capsys, generated_db, a_flight):
    code = main(["tools", "FlightSearch", json.dumps(a_flight), "--db", DB, "--style", "official"])
    assert code == 0
    expected = Toolbox(generated_db, style="official").call("SearchFlight", a_flight)
    assert capsys.readouterr().out == expected + "\n"
    assert expected.startswith("Flight Number  Price DepTime")


def test_db_defaults_to_star_db_then_generated(capsys, monkeypatch, a_city):
    monkeypatch.setenv("STAR_DB", DB)
    assert main(["tools", "SearchAttraction", json.dumps({"city": a_city})]) == 0
    assert capsys.readouterr().out.startswith("name\taddress\n")  # the compact style


def test_a_bad_call_prints_the_error_observation_and_exits_1(capsys):
    assert main(["tools", "HotelSearch", "{}", "--db", DB]) == 1
    assert capsys.readouterr().out.startswith("Error: unknown tool 'HotelSearch'.")
    assert main(["tools", "SearchRestaurant", '{"town": "X"}', "--db", DB]) == 1
    assert "missing argument(s) 'city'" in capsys.readouterr().out


def test_broken_json_arguments_are_reported(capsys):
    assert main(["tools", "SearchRestaurant", '{"city": ', "--db", DB]) == 2
    err = capsys.readouterr().err
    assert "the arguments are not valid JSON" in err and '{"city": ' in err


def test_missing_database_is_a_clear_error(capsys, tmp_path):
    assert main(["tools", "SearchCity", '{"state": "X"}', "--db", str(tmp_path / "none")]) == 2
    assert "database directory not found" in capsys.readouterr().err


def test_failure_injection_from_the_command_line(capsys, a_city):
    assert main(["tools", "SearchRestaurant", json.dumps({"city": a_city}), "--db", DB,
                 "--failure-rate", "1"]) == 1
    assert capsys.readouterr().out == "Error: Current tool SearchRestaurant is not available.\n"


def test_specs_are_printed_as_json(capsys):
    assert main(["tools", "--specs"]) == 0
    assert [s["name"] for s in json.loads(capsys.readouterr().out)][0] == "SearchCity"


# -- batches ---------------------------------------------------------------------------------------------

def test_batch_runs_good_lines_and_reports_bad_ones_by_number(capsys, tmp_path, toolbox, a_city, a_flight):
    lines = [
        json.dumps({"name": "SearchRestaurant", "arguments": {"city": a_city}}),   # 1
        '{"name": "SearchFlight", "arguments": ',                                  # 2: broken JSON
        "",                                                                        # 3: blank, ignored
        json.dumps(["SearchCity", {"state": "X"}]),                                # 4: not an object
        json.dumps({"arguments": {"city": a_city}}),                               # 5: no name
        json.dumps({"name": "FlightSearch", "arguments": a_flight}),               # 6
        json.dumps({"name": "NoSuchTool", "arguments": {}}),                       # 7: runs, error observation
        json.dumps({"name": "SearchCity", "arguments": {"state": "X"}, "extra": 1}),  # 8: unexpected key
    ]
    calls = tmp_path / "calls.jsonl"
    calls.write_text("\n".join(lines) + "\n", encoding="utf-8")
    code = main(["tools", "--batch", str(calls), "--db", DB])
    out, err = capsys.readouterr()
    assert code == 1
    records = [json.loads(line) for line in out.splitlines()]
    assert [r["name"] for r in records] == ["SearchRestaurant", "FlightSearch", "NoSuchTool"]
    assert records[0] == {"name": "SearchRestaurant", "arguments": {"city": a_city},
                          "observation": toolbox.call("SearchRestaurant", {"city": a_city})}
    assert records[1]["observation"] == toolbox.call("SearchFlight", a_flight)
    assert records[2]["observation"].startswith("Error: unknown tool")
    for lineno in (2, 4, 5, 8):
        assert f"calls.jsonl:{lineno}:" in err
    assert "calls.jsonl:1:" not in err and "calls.jsonl:3:" not in err
    assert "4 malformed line(s)" in err


def test_clean_batch_exits_0(capsys, tmp_path, a_city):
    calls = tmp_path / "calls.jsonl"
    calls.write_text(json.dumps({"name": "AttractionSearch", "arguments": {"city": a_city}}) + "\n")
    assert main(["tools", "--batch", str(calls), "--db", DB, "--style", "official"]) == 0
    assert json.loads(capsys.readouterr().out)["observation"].startswith("Name")


def test_missing_batch_file_is_reported(capsys, tmp_path):
    assert main(["tools", "--batch", str(tmp_path / "none.jsonl"), "--db", DB]) == 2
    assert "cannot read the batch file" in capsys.readouterr().err


def test_console_script_runs(tmp_path, a_city):
    env = {**os.environ, "STAR_DB": DB}
    proc = subprocess.run([sys.executable, "-m", "star.cli", "tools", "SearchRestaurant",
                           json.dumps({"city": a_city})], capture_output=True, text=True, env=env, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("name\taverage cost\tcuisines\trating\n")


# -- star sandbox: export -----------------------------------------------------------------------------------

def test_export_writes_a_loadable_database_and_a_summary(capsys, tmp_path, generated_db):
    out = tmp_path / "sandbox"
    assert main(["sandbox", "--db", DB, "--out", str(out)]) == 0
    assert "wrote generated:0" in capsys.readouterr().out
    db = load_directory(out)
    assert db.flights == generated_db.flights and db.accommodations == generated_db.accommodations
    summary = json.loads((out / "summary.json").read_text())
    assert summary["spec"] == DB and summary["tables"] == generated_db.summary()
    assert set(summary["files"]) == {"accommodations/clean_accommodations_2022.csv", "attractions/attractions.csv",
                                     "restaurants/clean_restaurant_2022.csv", "googleDistanceMatrix/distance.csv",
                                     "flights/clean_Flights_2022.csv", "background/citySet.txt",
                                     "background/citySet_with_states.txt", "background/stateSet.txt"}
    # a second export replaces the first one in place, with the same bytes
    assert main(["sandbox", "--db", DB, "--out", str(out), "--summary", str(tmp_path / "s.json")]) == 0
    assert json.loads((tmp_path / "s.json").read_text())["files"] == summary["files"]
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temp leftovers


def test_export_refuses_to_replace_a_directory_it_did_not_write(capsys, tmp_path):
    keep = tmp_path / "precious.txt"
    keep.write_text("do not delete")
    assert main(["sandbox", "--db", DB, "--out", str(tmp_path)]) == 2
    assert "refusing to replace it" in capsys.readouterr().err
    assert keep.read_text() == "do not delete"


def test_export_of_a_missing_database_is_a_clear_error(capsys, tmp_path):
    assert main(["sandbox", "--db", str(tmp_path / "none"), "--out", str(tmp_path / "out")]) == 2
    assert "database directory not found" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


@pytest.mark.realdb
def test_export_of_the_real_database_round_trips(tmp_path, real_db):
    out = tmp_path / "real"
    assert main(["sandbox", "--db", real_db.source, "--out", str(out)]) == 0
    again = load_database(str(out), cache=False)
    assert again.summary() == real_db.summary()
    assert again.restaurants == real_db.restaurants and again.accommodations == real_db.accommodations
    assert Path(out / "summary.json").is_file()
