"""Rejection sampling keeps only successful, cleanly formatted trajectories and says why it drops the rest."""

from __future__ import annotations

import dataclasses
import json

import pytest

from star.teachers.sft_data import rejection_reason, select
from star.teachers.builtin import BuiltinTeacher
from star.agent.trajectory import Trajectory, TrajectoryFileError, read_trajectories, write_trajectories
from star.cli import main


@pytest.fixture(scope="module")
def rollouts(generated_db, synthetic_queries):
    teacher = BuiltinTeacher(generated_db)
    return [teacher.run(q, str(i), 0, seed=i) for i, q in enumerate(synthetic_queries[:10])]


def test_successful_clean_trajectories_are_kept_and_failures_rejected(rollouts):
    kept, report = select(rollouts)
    assert len(kept) == sum(t.success for t in rollouts) > 0
    assert report["rows"][-1]["level"] == "all" and report["rows"][-1]["total"] == len(rollouts)
    for r in kept:
        assert r["messages"][0]["role"] == "system" and r["messages"][-1]["role"] == "assistant"
        assert "<answer>" in r["messages"][-1]["content"]
    failed = [t for t in rollouts if not t.success]
    assert all(rejection_reason(t) in ("not_success", "no_plan") for t in failed)


def test_each_kind_of_bad_trajectory_gets_its_reason(rollouts):
    good = next(t for t in rollouts if t.success)
    fmt = dataclasses.replace(good, finish_reason="format_error", format_error="bad_json")
    budget = dataclasses.replace(good, finish_reason="call_budget")
    overflow = dataclasses.replace(good, finish_reason="context_overflow")
    swapped = dataclasses.replace(good, messages=[good.messages[0], good.messages[1], good.messages[3],
                                                  good.messages[2], *good.messages[4:]])
    sloppy = dataclasses.replace(good, messages=[*good.messages[:2],
                                                 {"role": "assistant", "content": "Let me search."},
                                                 *good.messages[3:]])
    too_many = dataclasses.replace(good, tool_calls=61)
    assert rejection_reason(good) is None
    assert rejection_reason(fmt) == "format_error:bad_json"
    assert rejection_reason(budget) == "call_budget"
    assert rejection_reason(overflow) == "context_overflow"
    assert rejection_reason(swapped) == "bad_roles"
    assert rejection_reason(sloppy) == "bad_turn_format"
    assert rejection_reason(too_many) == "over_tool_budget"
    _, report = select([good, fmt, budget])
    assert report["rows"][-1]["rejected"] == {"format_error:bad_json": 1, "call_budget": 1}


def test_cli_writes_a_chat_dataset_and_a_report(rollouts, tmp_path, capsys):
    src, out, rep = tmp_path / "rollouts.jsonl", tmp_path / "sft.jsonl", tmp_path / "report.json"
    write_trajectories(src, rollouts)
    assert main(["sft-data", str(src), "--out", str(out), "--report", str(rep)]) == 0
    printed = capsys.readouterr().out
    assert "mean tool calls" in printed and "| all |" in printed
    import datasets

    ds = datasets.Dataset.from_json(str(out))
    assert len(ds) == json.loads(rep.read_text())["kept"] == sum(t.success for t in rollouts)
    assert set(ds[0]["messages"][0]) == {"role", "content"}


def test_malformed_rollouts_name_the_line_and_keep_the_old_output(rollouts, tmp_path):
    src, out = tmp_path / "rollouts.jsonl", tmp_path / "sft.jsonl"
    write_trajectories(src, rollouts[:2])
    with open(src, "a") as fh:
        fh.write('{"query_id": "x", "messages": [], "finish_reason": "answer", "colour": 1}\n')
    out.write_text("previous\n")
    with pytest.raises(TrajectoryFileError, match=r"rollouts.jsonl:3: unknown trajectory field"):
        main(["sft-data", str(src), "--out", str(out)])
    assert out.read_text() == "previous\n"
    src.write_text("{not json\n")
    with pytest.raises(TrajectoryFileError, match=r":1: not valid JSON"):
        read_trajectories(src)
    with pytest.raises(TrajectoryFileError, match="not found"):
        read_trajectories(tmp_path / "missing.jsonl")


def test_trajectories_round_trip_through_jsonl(rollouts, tmp_path):
    write_trajectories(tmp_path / "t.jsonl", rollouts)
    back = read_trajectories(tmp_path / "t.jsonl")
    assert [b.to_dict() for b in back] == [json.loads(json.dumps(t.to_dict())) for t in rollouts]
    assert isinstance(back[0], Trajectory)


def test_teacher_cli_writes_scored_rollouts(generated_db, synthetic_queries, tmp_path, capsys):
    qpath = tmp_path / "pool.jsonl"
    qpath.write_text("".join(json.dumps(q) + "\n" for q in synthetic_queries[:4]))
    out = tmp_path / "rollouts.jsonl"
    assert main(["teacher", "--queries", str(qpath), "--samples", "2", "--out", str(out), "--db", "generated:0",
                 "--quiet"]) == 0
    trajs = read_trajectories(out)
    assert len(trajs) == 8 and {t.sample for t in trajs} == {0, 1}
    assert all(t.scores["mode"] == "strict" for t in trajs)
    assert "success %" in capsys.readouterr().out


def test_teacher_habits_are_parameters_a_focused_teacher_never_repeats_a_search(generated_db, synthetic_queries,
                                                                                  tmp_path):
    qpath = tmp_path / "pool.jsonl"
    qpath.write_text("".join(json.dumps(q) + "\n" for q in synthetic_queries[:6]))

    def calls(out, *habits):
        assert main(["teacher", "--queries", str(qpath), "--samples", "2", "--out", str(out), "--db", "generated:0",
                     "--quiet", *habits]) == 0
        per_traj = []
        for t in read_trajectories(out):
            texts = [m["content"].split("<tool_call>")[1] for m in t.messages
                     if m["role"] == "assistant" and "<tool_call>" in m["content"]]
            per_traj.append(texts)
        return per_traj

    focused = calls(tmp_path / "focused.jsonl", "--p-redundant", "0", "--p-typo", "0")
    assert all(len(c) == len(set(c)) for c in focused)
    wandering = calls(tmp_path / "wandering.jsonl", "--p-redundant", "1", "--p-typo", "1")
    assert any(len(c) > len(set(c)) for c in wandering)
    assert sum(map(len, wandering)) > sum(map(len, focused))


def test_the_teacher_cli_offers_every_value_its_config_takes(generated_db, synthetic_queries, tmp_path):
    """The stage passes params' teacher.builtin.think to the CLI: a value the config takes and the CLI refused
    (route, once) would fail the teacher stage after the data stages ran."""
    import typing

    from star.teachers.config import BuiltinTeacherConfig

    qpath = tmp_path / "pool.jsonl"
    qpath.write_text("".join(json.dumps(q) + "\n" for q in synthetic_queries[:1]))
    for think in typing.get_args(BuiltinTeacherConfig.model_fields["think"].annotation):
        out = tmp_path / f"{think}.jsonl"
        assert main(["teacher", "--queries", str(qpath), "--out", str(out), "--db", "generated:0", "--quiet",
                     "--think", think]) == 0
        assert len(read_trajectories(out)) == 1
    first = [m["content"] for m in read_trajectories(tmp_path / "route.jsonl")[0].messages if m["role"] == "assistant"][0]
    q = synthetic_queries[0]
    assert f"{q['org']} to {q['dest']}. Next: " in first


@pytest.fixture(scope="module")
def route_records(generated_db, synthetic_queries):
    """Kept SFT records of the route-naming teacher, and the queries they answer by id."""
    from star.teachers.config import BuiltinTeacherConfig

    teacher = BuiltinTeacher(generated_db, config=BuiltinTeacherConfig(think="route", p_typo=0.0, p_redundant=0.0))
    kept, _ = select(teacher.run(q, str(i), 0, seed=i) for i, q in enumerate(synthetic_queries))
    return kept, {str(i): q for i, q in enumerate(synthetic_queries)}


def test_a_first_turn_example_retells_the_opening_for_another_city_pair(route_records):
    from star.agent.turns import parse_turn
    from star.teachers.first_turns import first_turn_examples

    kept, queries = route_records
    examples = first_turn_examples(kept, queries, per_record=3, seed=0)
    one_city = [r for r in kept if queries[r["query_id"]]["visiting_city_number"] == 1]
    routes = {(q["org"], q["dest"]) for q in queries.values() if q["visiting_city_number"] == 1}
    assert len(routes) > 3 and one_city and len(examples) == 3 * len(one_city)
    for ex in examples:
        src_id, pair = ex["query_id"].split("/")
        org, dest = pair.split("-")
        q, src = queries[src_id], next(r for r in kept if r["query_id"] == src_id)
        assert (org, dest) != (q["org"], q["dest"]) and (org, dest) in routes  # a route some query takes
        user, turn = ex["messages"]  # no system prompt: a short example, for the copy stage
        assert [m["role"] for m in ex["messages"]] == ["user", "assistant"] and src["messages"][0]["role"] == "system"
        assert org in user["content"] and dest in user["content"]
        assert user["content"].index(org) < user["content"].index(dest)  # the query's wording kept, names swapped
        parsed = parse_turn(turn["content"])
        assert parsed.ok and parsed.think.startswith(f"{org} to {dest}.")
        assert dest in parsed.arguments.values()


def test_no_first_turn_example_retells_a_held_out_trip(route_records):
    from star.teachers.first_turns import first_turn_examples

    kept, queries = route_records
    rec = next(r for r in kept if queries[r["query_id"]]["visiting_city_number"] == 1)
    q = queries[rec["query_id"]]
    routes = sorted({(x["org"], x["dest"]) for x in queries.values() if x["visiting_city_number"] == 1})
    others = [r for r in routes if r != (q["org"], q["dest"])]
    free = others[0]
    held_out = [dict(q, org=a, dest=b) for a, b in others[1:]]  # every other pair on the same dates is held out
    examples = first_turn_examples([rec], queries, per_record=5, seed=0, held_out=held_out)
    assert [e["query_id"] for e in examples] == [f"{rec['query_id']}/{free[0]}-{free[1]}"]


def test_first_turn_examples_are_seeded_per_record(route_records):
    from star.teachers.first_turns import first_turn_examples

    kept, queries = route_records
    every = first_turn_examples(kept, queries, per_record=2, seed=1)
    rec = [r for r in kept if queries[r["query_id"]]["visiting_city_number"] == 1][-1]
    alone = first_turn_examples([rec], queries, per_record=2, seed=1)
    assert len(alone) == 2 and alone == [e for e in every if e["query_id"].startswith(rec["query_id"] + "/")]
    assert [e["query_id"] for e in first_turn_examples(kept, queries, 2, seed=2)] != [e["query_id"] for e in every]


def test_rename_cities_swaps_whole_names_at_once():
    from star.teachers.first_turns import rename_cities

    names = {"Austin": "Dallas", "Dallas": "Austin"}
    assert rename_cities("from Austin to Dallas, not Austinville", names) == "from Dallas to Austin, not Austinville"


def test_sft_data_cli_writes_first_turn_examples_to_their_own_file_and_refuses_them_without_queries(
        route_records, synthetic_queries, tmp_path, capsys):
    from star.jsonl import write_jsonl

    kept, _ = route_records
    src, qs, out, rep, ft = (tmp_path / n for n in ("rollouts.jsonl", "queries.jsonl", "sft.jsonl", "report.json",
                                                    "first_turns.jsonl"))
    write_jsonl(qs, synthetic_queries)
    assert main(["teacher", "--queries", str(qs), "--out", str(src), "--db", "generated", "--think", "route",
                 "--p-typo", "0"]) == 0
    assert main(["sft-data", str(src), "--out", str(out), "--first-turns", "2", "--first-turns-out", str(ft)]) == 2
    assert "--first-turns needs --queries" in capsys.readouterr().err and not out.exists()
    assert main(["sft-data", str(src), "--out", str(out), "--first-turns", "2", "--queries", str(qs)]) == 2
    assert "--first-turns-out" in capsys.readouterr().err and not out.exists()
    assert main(["sft-data", str(src), "--out", str(out), "--report", str(rep), "--first-turns", "2",
                 "--queries", str(qs), "--first-turns-out", str(ft)]) == 0
    report = json.loads(rep.read_text())
    lines = [json.loads(x) for x in out.read_text().splitlines()]
    extra = [json.loads(x) for x in ft.read_text().splitlines()]
    assert len(lines) == report["kept"] and not any(x.get("first_turn") for x in lines)  # trajectories only
    assert report["first_turns"] == len(extra) > 0 and all(x["first_turn"] for x in extra)
    assert main(["sft-data", str(src), "--out", str(out), "--first-turns-out", str(ft)]) == 0
    assert ft.read_text() == ""  # none asked for: the file is there, empty (a DVC out either way)
