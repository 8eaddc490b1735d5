"""The learning demonstration's pieces without a model: splits, the built-in QA teacher, the paired comparison."""

from __future__ import annotations

import math

import pytest

from star.qa.config import LearnConfig

SMALL = LearnConfig(questions=60, sft_questions=20, rl_questions=20, heldout_questions=20)


def test_splits_are_disjoint_and_sized():
    from star.qa.learn import split_questions

    splits = split_questions(SMALL)
    assert {k: len(v) for k, v in splits.items()} == {"sft": 20, "rl": 20, "heldout": 20}
    questions = [q["question"] for rows in splits.values() for q in rows]
    assert len(set(questions)) == len(questions)
    with pytest.raises(ValueError, match="need 61 questions"):
        split_questions(LearnConfig(questions=60, sft_questions=21, rl_questions=20, heldout_questions=20))


def test_teacher_searches_and_answers_in_the_protocol_and_is_rejection_sampled(tmp_path):
    from star.agent.turns import parse_turn
    from star.jsonl import read_jsonl
    from star.qa.learn import write_data

    report = write_data(SMALL, tmp_path)
    episodes = read_jsonl(tmp_path / "teacher.jsonl")
    kept = read_jsonl(tmp_path / "sft.jsonl")
    assert len(episodes) == 20 and report["sft_conversations"] == len(kept) >= 15
    assert len(kept) + sum(report["rejected"].values()) == 20
    by_id = {e["id"]: e for e in episodes}
    for conv in kept:
        e = by_id[conv["id"]]
        assert e["em"] == 1.0 and e["finish_reason"] == "answer" and e["tool_calls"] >= 1
        turns = [parse_turn(m["content"]) for m in conv["messages"] if m["role"] == "assistant"]
        # Search is not a travel tool, so the shared parser calls it unknown; the grammar itself holds.
        assert all(t.kind == "tool_call" or t.error == "unknown_tool" for t in turns[:-1])
        assert turns[-1].kind == "answer"
    two_hop = [by_id[c["id"]] for c in kept if by_id[c["id"]]["tool_calls"] == 2]
    assert two_hop, "bridge questions search twice"


def test_paired_comparison_by_question_and_seed():
    from star.qa.learn import compare

    def rec(q, s, em, seed=None):
        return {"id": q, "sample": s, "seed": seed if seed is not None else hash((q, s)) % 1000, "em": em}

    before = [rec("a", 0, 0), rec("a", 1, 0), rec("b", 0, 1), rec("b", 1, 0), rec("c", 0, 0), rec("c", 1, 1)]
    after = [rec("a", 0, 1), rec("a", 1, 1), rec("b", 0, 1), rec("b", 1, 1), rec("c", 0, 0), rec("c", 1, 1)]
    r = compare(before, after)
    # per-question differences: a +1, b +0.5, c 0 -> mean 0.5, sd 0.5, s.e. 0.5/sqrt(3)
    assert r["diff"] == pytest.approx(0.5)
    assert r["diff_se"] == pytest.approx(0.5 / math.sqrt(3))
    assert r["z"] == pytest.approx(math.sqrt(3))
    assert (r["questions_better"], r["questions_worse"]) == (2, 0)
    with pytest.raises(ValueError, match="different seeds"):
        compare(before, [dict(x, seed=x["seed"] + 1) for x in after])
    with pytest.raises(ValueError, match="different episodes"):
        compare(before, after[:-1])


def test_the_comparison_by_kind_finds_the_kind_that_moved_and_writes_a_plot(tmp_path):
    import json

    from star.cli import main

    questions = [{"id": f"{k}{i}", "metadata": {"type": k}} for k in ("state", "city") for i in range(4)]

    def episodes(em_of):
        return [{"id": q["id"], "sample": s, "seed": 7 * s, "em": em_of(q["id"], s), "finish_reason": "answer",
                 "tool_calls": 1, "n_tokens": 100} for q in questions for s in range(2)]

    before = episodes(lambda qid, s: float(qid.startswith("city")))
    after = episodes(lambda qid, s: float(qid.startswith("city") or qid in ("state0", "state1")))
    for name, eps in (("sft", before), ("rl", after)):
        d = tmp_path / name
        d.mkdir()
        (d / "episodes.jsonl").write_text("".join(json.dumps(e) + "\n" for e in eps))
        (d / "summary.json").write_text(json.dumps({"em": sum(e["em"] for e in eps) / len(eps), "em_se": 0.1,
                                                    "answered": 1.0, "format_error": 0.0, "searches": 1.0,
                                                    "tokens": 100}))
    qfile = tmp_path / "heldout.jsonl"
    qfile.write_text("".join(json.dumps(q) + "\n" for q in questions))
    out = tmp_path / "compare"
    assert main(["learn", "compare", "--before", str(tmp_path / "sft"), "--after", str(tmp_path / "rl"),
                 "--questions", str(qfile), "--out", str(out)]) == 0
    result = json.loads((out / "compare.json").read_text())
    assert result["diff"] == pytest.approx(0.25)
    kinds = {r["kind"]: r for r in result["by_kind"]}
    assert [r["kind"] for r in result["by_kind"]] == ["state", "city"]  # largest gain first
    assert kinds["state"]["diff"] == pytest.approx(0.5) and kinds["city"]["diff"] == 0.0
    assert "| state | 4 | 0.000 | 0.500 | +0.500 |" in (out / "table.md").read_text()
    assert (out / "compare.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # A questions file that lacks an evaluated question is named, not silently dropped.
    qfile.write_text("".join(json.dumps(q) + "\n" for q in questions[1:]))
    assert main(["learn", "compare", "--before", str(tmp_path / "sft"), "--after", str(tmp_path / "rl"),
                 "--questions", str(qfile), "--out", str(tmp_path / "c2")]) == 2


def test_learn_profile_resolves_and_validates():
    from star.config import resolve

    resolved = resolve(profile="learn")
    cfg = resolved.sections["learn"]
    assert isinstance(cfg, LearnConfig)
    assert cfg.sft_questions + cfg.rl_questions + cfg.heldout_questions <= cfg.questions
    assert resolved.sections["rl"].reward == "success" and resolved.sections["model"].profile == "cpu"
    # one seed per held-out question, both models on the same seed: the pairing the comparison relies on
    assert cfg.eval_samples >= 1 and resolved.sections["rl"].algorithm == "dapo"


def test_cli_names_bad_input(tmp_path, capsys):
    from star.cli import main

    assert main(["learn", "evaluate", "--out", str(tmp_path)]) == 2
    assert "--model" in capsys.readouterr().err
    assert main(["learn", "data", "--set", "questions=2", "--out", str(tmp_path)]) == 2
    assert "questions" in capsys.readouterr().err
