"""Query loading: JSONL or the official CSV; Python-literal fields read without eval."""

from __future__ import annotations

import csv
import json

import pytest

from star.evaluation.queries import QueryError, load_queries, normalize_query

RAW = {"org": "Rockford", "dest": "Texas", "days": "5", "visiting_city_number": "2",
       "date": "['2022-03-16', '2022-03-17', '2022-03-18', '2022-03-19', '2022-03-20']", "people_number": "2.0",
       "local_constraint": "{'house rule': 'pets', 'cuisine': ['Chinese', 'Indian'], 'room type': None, 'transportation': None}",
       "budget": "3100", "query": "q", "level": "medium"}


def test_literal_strings_become_lists_dicts_and_ints():
    q = normalize_query(RAW)
    assert q["date"][0] == "2022-03-16" and len(q["date"]) == 5
    assert q["local_constraint"] == {"house rule": "pets", "cuisine": ["Chinese", "Indian"], "room type": None,
                                     "transportation": None}
    assert (q["days"], q["people_number"], q["budget"], q["visiting_city_number"]) == (5, 2, 3100, 2)
    assert q["query"] == "q" and q["level"] == "medium"


def test_json_strings_work_too():
    q = normalize_query(dict(RAW, local_constraint=json.dumps({"house rule": None, "cuisine": None,
                                                               "room type": "private room", "transportation": None})))
    assert q["local_constraint"]["room type"] == "private room"


def test_code_in_a_field_is_rejected_not_run(tmp_path):
    with pytest.raises(QueryError, match="local_constraint"):
        normalize_query(dict(RAW, local_constraint="{'house rule': __import__('os').getcwd()}"))


def test_csv_and_jsonl_load_the_same(tmp_path):
    path = tmp_path / "q.csv"
    with open(path, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(RAW))
        w.writeheader()
        w.writerow(RAW)
    jl = tmp_path / "q.jsonl"
    jl.write_text(json.dumps(RAW) + "\n\n")
    assert load_queries(path) == load_queries(jl)


def test_official_files_load(queries_dir):
    val = load_queries(queries_dir / "validation.jsonl")
    assert len(val) == 180 and {q["level"] for q in val} == {"easy", "medium", "hard"}
    csv_val = load_queries(queries_dir / "validation.csv")
    assert [q["budget"] for q in csv_val] == [q["budget"] for q in val]
    assert [q["local_constraint"] for q in csv_val] == [q["local_constraint"] for q in val]
    train = load_queries(queries_dir / "train.jsonl")
    assert len(train) == 45 and isinstance(train[0]["date"], list)


def test_official_query_files_are_found_beside_star_db(tmp_path, monkeypatch):
    """A clone anywhere finds the query files in the folder that holds STAR_DB's database."""
    from tests.conftest import QUERIES_DIR, official_queries_dir

    (tmp_path / "database").mkdir()
    (tmp_path / "queries").mkdir()
    monkeypatch.setenv("STAR_DB", str(tmp_path / "database"))
    assert official_queries_dir() == tmp_path / "queries"
    monkeypatch.setenv("STAR_DB", "generated:0")
    assert official_queries_dir() == QUERIES_DIR


def test_errors_name_file_and_line(tmp_path):
    path = tmp_path / "q.jsonl"
    path.write_text(json.dumps(RAW) + "\n{not json\n")
    with pytest.raises(QueryError, match=r"q\.jsonl:2: malformed JSON"):
        load_queries(path)
    path.write_text(json.dumps({"dest": "X", "days": 3}) + "\n")
    with pytest.raises(QueryError, match=r"q\.jsonl:1: .*'org'"):
        load_queries(path)
    with pytest.raises(QueryError, match="not found"):
        load_queries(tmp_path / "missing.jsonl")
