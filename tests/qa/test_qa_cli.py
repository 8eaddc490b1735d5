"""`star eval-qa`: evaluate, recall only, build an index, merge tables; bad input exits 2 with a message."""

from __future__ import annotations

import json

import pytest

from star.cli import main


@pytest.fixture(scope="module")
def saved_tiny(tmp_path_factory):
    from star.rollout.tiny_model import build_tiny_model

    path = tmp_path_factory.mktemp("tiny")
    build_tiny_model(path, hidden=32, layers=1, vocab_size=512)
    return path


def test_eval_qa_runs_end_to_end_on_a_saved_model(tmp_path, saved_tiny, capsys):
    out = tmp_path / "ood"
    rc = main(["eval-qa", "--model", str(saved_tiny), "--dataset", "world", "--limit", "3", "--max-new-tokens", "8",
               "--out", str(out), "--index-cache", str(tmp_path / "idx"), "--no-progress", "--name", "smoke"])
    assert rc == 0
    printed = capsys.readouterr().out
    assert "| Model | World | Avg. |" in printed and "| smoke |" in printed and "support recall@5" in printed
    results = json.loads((out / "results.json").read_text())
    assert results["datasets"]["world"]["n"] == 3 and results["model"] == "smoke"


def test_recall_mode_prints_recall_at_k(tmp_path, capsys):
    rc = main(["eval-qa", "--recall", "--dataset", "world", "--limit", "30", "--index-cache", str(tmp_path)])
    assert rc == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[1] == "| dataset | n | answer recall@5 | support recall@5 | support hit@5 |"
    row = lines[3].split(" | ")
    assert row[0] == "| World" and row[1] == "30" and float(row[4].rstrip(" |")) >= 0.9


def test_build_index_then_evaluate_recall_from_it(tmp_path, capsys):
    assert main(["qa-index", "--out", str(tmp_path / "index")]) == 0
    assert "built bm25 index of" in capsys.readouterr().out
    assert main(["eval-qa", "--recall", "--corpus", str(tmp_path / "index"), "--dataset", "world", "--limit", "5"]) == 0


def test_merge_puts_runs_side_by_side(tmp_path, capsys):
    for name, em in (("base", 0.1), ("rl", 0.3)):
        d = tmp_path / name
        d.mkdir()
        (d / "results.json").write_text(json.dumps({
            "model": name, "retriever": "bm25", "top_k": 5, "corpus": "builtin", "average_em": em,
            "datasets": {"world": {"em": em}, "nq": {"em": em}}}))
    assert main(["eval-qa", "--merge", str(tmp_path / "base"), str(tmp_path / "rl"), "--out", str(tmp_path / "cmp")]) == 0
    table = (tmp_path / "cmp" / "table.md").read_text()
    assert "| Model | NQ | World | Avg. |" in table and "| rl | 30.0 | 30.0 | 30.0 |" in table
    assert "Search-R1 (paper)" in table
    assert (tmp_path / "cmp" / "table.png").stat().st_size > 1000


@pytest.mark.parametrize("argv, message", [
    (["--model", "/nonexistent", "--out", "x"], "no model at /nonexistent"),
    (["--recall", "--dataset", "squad"], "unknown QA dataset 'squad'"),
    (["--recall", "--corpus", "/nonexistent.jsonl"], "corpus file not found"),
    (["--recall", "--top-k", "0"], "invalid arguments"),
    (["--dataset", "world"], "--model and --out are required"),
    (["--merge", "/nonexistent", "--out", "x"], "results file not found"),
])
def test_bad_input_exits_2_with_a_clear_message(tmp_path, capsys, argv, message):
    assert main(["eval-qa", *argv, "--index-cache", str(tmp_path)]) == 2
    captured = capsys.readouterr()
    assert message in captured.err
    assert "|" not in captured.out  # no half table printed


def test_world_db_sets_both_the_question_set_and_the_builtin_corpus(tmp_path, capsys):
    assert main(["eval-qa", "--recall", "--world-db", "generated:1", "--world-questions", "12",
                 "--index-cache", str(tmp_path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("retriever bm25, corpus builtin (")
    row = lines[3].split(" | ")
    assert row[1] == "12" and float(row[4].rstrip(" |")) == 1.0  # questions and corpus from the same world


def test_write_world_files_feed_the_other_modes(tmp_path, capsys):
    world = tmp_path / "world"
    assert main(["qa-data", "--out", str(world), "--world-questions", "15"]) == 0
    assert main(["eval-qa", "--recall", "--corpus", str(world / "corpus.jsonl"),
                 "--dataset", str(world / "world.jsonl"), "--index-cache", str(tmp_path / "c")]) == 0
    out = capsys.readouterr().out
    assert "| World | 15 |" in out and "support hit@5" in out
