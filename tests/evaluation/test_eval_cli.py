"""`star evaluate`: bad lines are reported by number and skipped; the report is written atomically."""

from __future__ import annotations

import json

import pytest

from star.cli import main


def _write_inputs(tmp_path, generated_db, trip):
    q, p = trip(generated_db)
    q = {k: v for k, v in q.items() if k != "_parts"}
    queries = tmp_path / "q.jsonl"
    queries.write_text("".join(json.dumps(dict(q, query=f"q{i}")) + "\n" for i in range(5)))
    broken = [dict(d) for d in p]
    broken[1]["lunch"] = f"Imaginary Diner 123, {q['dest']}"
    plans = tmp_path / "p.jsonl"
    plans.write_text("\n".join([
        json.dumps({"idx": 1, "plan": p}),
        '{"idx": 2, "plan": [ {"days": 1,',          # truncated JSON
        json.dumps({"idx": 3, "plan": None}),
        json.dumps({"idx": 4, "plan": broken}),
        json.dumps({"idx": 5, "oops": []}),           # no plan field
    ]) + "\n")
    return queries, plans


def test_cli_scores_good_lines_and_reports_bad_ones(tmp_path, generated_db, trip, capsys):
    queries, plans = _write_inputs(tmp_path, generated_db, trip)
    out = tmp_path / "r.json"
    code = main(["evaluate", "--queries", str(queries), "--plans", str(plans), "--db", "generated:0",
                 "--mode", "official", "--out", str(out)])
    assert code == 0
    err = capsys.readouterr().err
    assert "p.jsonl:2: malformed JSON" in err and "p.jsonl:5: expected an object with a 'plan' field" in err
    report = json.loads(out.read_text())
    assert report["mode"] == "official" and len(report["errors"]) == 2
    agg = report["aggregates"]
    assert set(agg) >= {"delivery_rate", "commonsense_micro", "commonsense_macro", "hard_micro", "hard_macro", "success_rate"}
    assert agg["n"] == 5 and agg["delivery_rate"] == pytest.approx(2 / 5)  # lines 1 and 4 carry plans
    assert agg["success_rate"] == pytest.approx(1 / 5)
    per = {r["line"]: r for r in report["per_plan"]}
    assert per[1]["success"] and per[4]["commonsense"]["is_valid_information_in_sandbox"]["pass"] is False
    assert per[2]["error"] and not per[2]["delivered"]


def test_cli_default_mode_is_strict_and_plans_match_by_order(tmp_path, generated_db, trip):
    queries, plans = _write_inputs(tmp_path, generated_db, trip)
    lines = [json.loads(x) if x.startswith('{"idx": 1') else None for x in plans.read_text().splitlines()]
    plans.write_text(json.dumps({"plan": lines[0]["plan"]}) + "\n")  # no idx: first query
    out = tmp_path / "r.json"
    assert main(["evaluate", "--queries", str(queries), "--plans", str(plans), "--db", "generated:0", "--out", str(out)]) == 0
    report = json.loads(out.read_text())
    assert report["mode"] == "strict" and report["matched_by"] == "order"
    assert report["aggregates"]["n"] == 1 and report["aggregates"]["success_rate"] == 1.0


def test_cli_missing_file_is_a_clear_error_and_keeps_old_report(tmp_path, capsys):
    out = tmp_path / "r.json"
    out.write_text('{"old": true}')
    code = main(["evaluate", "--queries", str(tmp_path / "nope.jsonl"), "--plans", str(tmp_path / "p.jsonl"),
                 "--db", "generated:0", "--out", str(out)])
    assert code == 2 and "query file not found" in capsys.readouterr().err
    assert json.loads(out.read_text()) == {"old": True}


def test_cli_text_plans_are_parsed(tmp_path, generated_db, trip):
    from star.evaluation.plan import format_plan_text

    queries, _ = _write_inputs(tmp_path, generated_db, trip)
    _, p = trip(generated_db)
    plans = tmp_path / "text.jsonl"
    plans.write_text(json.dumps({"idx": 1, "plan": format_plan_text(p)}) + "\n")
    out = tmp_path / "r.json"
    assert main(["evaluate", "--queries", str(queries), "--plans", str(plans), "--db", "generated:0", "--out", str(out)]) == 0
    assert json.loads(out.read_text())["per_plan"][0]["success"] is True


def test_cli_official_split_denominators(tmp_path, generated_db, trip):
    queries, plans = _write_inputs(tmp_path, generated_db, trip)
    out = tmp_path / "r.json"
    assert main(["evaluate", "--queries", str(queries), "--plans", str(plans), "--db", "generated:0", "--mode", "official",
                 "--split", "train", "--out", str(out)]) == 0
    agg = json.loads(out.read_text())["aggregates"]
    assert agg["split"] == "train" and agg["delivery_rate"] == pytest.approx(2 / 45)


def test_cli_reward_scores_every_plan_and_the_report_carries_the_hacking_audit(tmp_path, generated_db, trip):
    queries, plans = _write_inputs(tmp_path, generated_db, trip)
    out = tmp_path / "r.json"
    assert main(["evaluate", "--queries", str(queries), "--plans", str(plans), "--db", "generated:0",
                 "--reward", "quality", "--out", str(out)]) == 0
    report = json.loads(out.read_text())
    per = {r["line"]: r for r in report["per_plan"]}
    assert per[1]["reward"] == 4.0 and per[1]["slot_credit"] == 1.0  # the known-good trip
    assert 0 < per[4]["reward"] < 1  # one invented lunch: partial credit, no verdict
    assert per[3]["reward"] == 0.0  # no plan
    assert report["reward"] == {"name": "quality", "mean": pytest.approx(sum(r["reward"] for r in per.values()) / 5)}
    assert report["audit"]["hack_delivered"] == 2 and report["audit"]["hacked_rate"] == 0.0


def test_cli_reward_must_be_a_registered_one(tmp_path, generated_db, trip, capsys):
    queries, plans = _write_inputs(tmp_path, generated_db, trip)
    with pytest.raises(SystemExit):
        main(["evaluate", "--queries", str(queries), "--plans", str(plans), "--reward", "dense", "--out", "x"])
    assert "invalid choice: 'dense'" in capsys.readouterr().err


def test_cli_reward_on_the_official_validation_example_plans(tmp_path, real_db, queries_dir):
    out = tmp_path / "r.json"
    assert main(["evaluate", "--queries", str(queries_dir / "validation.jsonl"),
                 "--plans", str(queries_dir / "validation_example_plans.jsonl"), "--db", str(real_db.source),
                 "--reward", "quality", "--out", str(out)]) == 0
    report = json.loads(out.read_text())
    assert len(report["per_plan"]) == 180 and all("reward" in r for r in report["per_plan"])
    assert 0 < report["reward"]["mean"] < 4
    # the example plans include incomplete ones, and the audit counts them
    assert 0 < report["audit"]["hacked_rate"] < 1
