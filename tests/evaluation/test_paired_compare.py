"""`star compare` pairs two evaluations of the same queries and seeds and says where the difference comes from."""

from __future__ import annotations

import json

import pytest

from star.cli import main


@pytest.fixture(scope="module")
def two_evaluations(generated_db, tmp_path_factory):
    """The built-in teacher on 8 certified queries, 2 seeded episodes each: once with every tool call it
    needs ('after') and once held to 6 calls with tools failing ('before'), written as eval-agent writes them."""
    from star.agent.config import AgentConfig
    from star.policy_eval.config import EvalConfig
    from star.policy_eval.eval_agent import metrics, write_outputs
    from star.teachers.builtin import BuiltinTeacher
    from star.synthesis.pipeline import synthesize

    root = tmp_path_factory.mktemp("paired")
    queries = [{**q, "id": f"q{i}"} for i, q in enumerate(synthesize(generated_db, 8, seed=7))]
    (root / "val.jsonl").write_text("".join(json.dumps(q) + "\n" for q in queries))
    settings = {"after": AgentConfig(eval_mode="official"),
                "before": AgentConfig(eval_mode="official", tool_budget=6, failure_rate=0.3)}
    tables = {}
    for name, agent in settings.items():
        teacher = BuiltinTeacher(generated_db, agent)
        trajs = [teacher.run(q, q["id"], s, seed=100 * i + s) for i, q in enumerate(queries) for s in range(2)]
        tables[name] = metrics(trajs, queries, generated_db, "official")
        write_outputs(root / name, trajs, tables[name], EvalConfig(samples=2))
    return root, tables


def _compare(root, out, before="before", after="after"):
    return main(["compare", "--before", str(root / before), "--after", str(root / after), "--names", "B", "A",
                 "--queries", str(root / "val.jsonl"), "--db", "generated:0", "--out", str(out), "--quiet"])


def test_the_paired_difference_is_the_difference_of_the_two_tables(two_evaluations, tmp_path):
    root, tables = two_evaluations
    assert _compare(root, tmp_path) == 0
    result = json.loads((tmp_path / "compare.json").read_text())
    assert result["queries"] == 8 and result["episodes"] == 16 and result["names"] == ["B", "A"]
    rows = {r["key"]: r for r in result["modes"]["official"]["headline"] + result["modes"]["official"]["rewards"]}
    for key, table_key in (("success", "success_rate"), ("delivered", "delivery_rate"),
                           ("cs_macro", "commonsense_macro")):
        row = rows[f"official/{key}"]
        assert row["before"] == pytest.approx(tables["before"][table_key])
        assert row["after"] == pytest.approx(tables["after"][table_key])
        assert row["diff"] == pytest.approx(row["after"] - row["before"])
    reward = rows["official/reward_sum"]
    assert reward["after"] == pytest.approx(tables["after"]["mean_reward"]["sum"])
    # Six calls cannot find a valid plan: the full teacher is better on the reward it would be trained on.
    assert reward["diff"] > 0 and reward["z"] > 2 and reward["queries_better"] > reward["queries_worse"]


def test_checks_behaviour_and_levels_each_get_a_row(two_evaluations, tmp_path):
    root, _ = two_evaluations
    assert _compare(root, tmp_path) == 0
    result = json.loads((tmp_path / "compare.json").read_text())
    checks = {r["key"] for r in result["modes"]["strict"]["checks"]}
    assert "strict/commonsense:is_valid_restaurants" in checks and any(k.startswith("strict/hard:") for k in checks)
    behaviour = {r["key"]: r for r in result["behaviour"]}
    # The held teacher stops searching at 6 calls and answers anyway; the full one searches as it needs.
    assert behaviour["tool_calls"]["before"] <= 6 < behaviour["tool_calls"]["after"]
    assert behaviour["answer"]["before"] == behaviour["answer"]["after"] == 1.0
    assert set(result["by_level"]) <= {"easy", "medium", "hard"}
    assert sum(rows[0]["queries"] for rows in result["by_level"].values()) == 8
    metrics = json.loads((tmp_path / "metrics.json").read_text())
    assert metrics["official.reward_sum.diff"] == pytest.approx(
        next(r["diff"] for r in result["modes"]["official"]["headline"] if r["key"] == "official/reward_sum"))
    md = (tmp_path / "compare.md").read_text()
    assert "## strict evaluator" in md and "| format error |" in md and "| reward (coverage) |" in md
    # By level, each row names its evaluator: the two modes' rows are not look-alike duplicates.
    assert "| reward (sum) (official) |" in md and "| reward (sum) (strict) |" in md
    assert (tmp_path / "compare.png").stat().st_size > 10_000


def test_the_comparison_carries_the_reward_hacking_audit(two_evaluations, tmp_path):
    root, tables = two_evaluations
    assert _compare(root, tmp_path) == 0
    result = json.loads((tmp_path / "compare.json").read_text())
    audit = {r["key"]: r for r in result["audit"]}
    assert {"hack_hacked", "hack_short", "hack_empty_slots", "hack_vacuous", "slot_credit",
            "hacked_reward_quality"} <= set(audit)
    # the held teacher writes plans with empty slots more often than the full one
    assert audit["slot_credit"]["after"] > audit["slot_credit"]["before"]
    assert audit["hack_hacked"]["before"] >= audit["hack_hacked"]["after"]
    assert "## reward-hacking audit (strict reading)" in (tmp_path / "compare.md").read_text()
    assert "hack_hacked.diff" in json.loads((tmp_path / "metrics.json").read_text())


def test_a_newly_registered_reward_is_compared_without_being_listed(two_evaluations, tmp_path, monkeypatch):
    from star.evaluation import rewards

    root, _ = two_evaluations
    monkeypatch.setitem(rewards.REWARDS, "success_x2", lambda scores: 2 * rewards.success_reward(scores))
    assert _compare(root, tmp_path) == 0
    result = json.loads((tmp_path / "compare.json").read_text())
    official = result["modes"]["official"]
    rows = {r["key"]: r for r in official["rewards"] + official["headline"][:1]}
    assert set(rows) == {f"official/reward_{name}" for name in rewards.REWARDS}
    assert rows["official/reward_success_x2"]["after"] == pytest.approx(2 * rows["official/reward_success"]["after"])
    assert "| reward (success_x2) |" in (tmp_path / "compare.md").read_text()


def test_the_headline_is_the_reward_the_model_was_trained_on(two_evaluations, tmp_path, capsys):
    root, _ = two_evaluations
    assert _compare(root, tmp_path / "sum") == 0
    capsys.readouterr()
    assert main(["compare", "--before", str(root / "before"), "--after", str(root / "after"), "--names", "B", "A",
                 "--queries", str(root / "val.jsonl"), "--db", "generated:0", "--reward", "quality",
                 "--out", str(tmp_path / "quality"), "--quiet"]) == 0
    assert "reward (quality)" in capsys.readouterr().out
    by_sum, by_quality = (json.loads((tmp_path / n / "compare.json").read_text()) for n in ("sum", "quality"))
    assert by_quality["reward"] == "quality" and by_sum["reward"] == "sum"
    for mode in ("official", "strict"):
        head = by_quality["modes"][mode]["headline"][0]
        assert head["key"] == f"{mode}/reward_quality"
        # the same row the default comparison lists among the other rewards, and reward_sum moves there
        others = {r["key"]: r for r in by_sum["modes"][mode]["rewards"]}
        assert head == others[f"{mode}/reward_quality"]
        assert f"{mode}/reward_sum" in {r["key"] for r in by_quality["modes"][mode]["rewards"]}
    assert (tmp_path / "quality" / "compare.md").read_text().splitlines()[2].startswith("**reward (quality): A − B")
    with pytest.raises(SystemExit):  # argparse names the choices
        main(["compare", "--before", str(root / "before"), "--after", str(root / "after"), "--queries",
              str(root / "val.jsonl"), "--db", "generated:0", "--reward", "nonsense", "--out", str(tmp_path / "x")])


def test_a_scheduled_reward_heads_with_the_reward_its_schedule_ends_on(tmp_path):
    from star.policy_eval.cli_compare import _trained_reward

    assert _trained_reward("quality", None) == "quality"
    assert _trained_reward("curriculum", None) == "success"  # the default schedule ends on success
    (tmp_path / "params.yaml").write_text("rl:\n  curriculum: [[1, sum], [2, quality]]\n")
    assert _trained_reward("curriculum", str(tmp_path / "params.yaml")) == "quality"


def test_episodes_run_with_other_seeds_are_refused(two_evaluations, tmp_path):
    root, _ = two_evaluations
    other = tmp_path / "reseeded"
    other.mkdir()
    lines = (root / "after" / "trajectories.jsonl").read_text().splitlines()
    (other / "trajectories.jsonl").write_text("".join(json.dumps({**json.loads(x), "seed": 1}) + "\n" for x in lines))
    with pytest.raises(SystemExit, match="different seeds"):
        main(["compare", "--before", str(root / "before"), "--after", str(other), "--queries", str(root / "val.jsonl"),
              "--db", "generated:0", "--out", str(tmp_path / "o"), "--quiet"])


def test_a_missing_evaluation_or_a_broken_line_is_named(two_evaluations, tmp_path):
    root, _ = two_evaluations
    with pytest.raises(SystemExit, match="no evaluation at .*nowhere"):
        _compare(root, tmp_path / "o", before="nowhere")
    broken = root / "broken"
    broken.mkdir(exist_ok=True)
    (broken / "trajectories.jsonl").write_text('{"query_id": "q0"\n')
    with pytest.raises(SystemExit, match=r"trajectories.jsonl:1: not valid JSON"):
        _compare(root, tmp_path / "o", after="broken")


def test_the_committed_result_files_rebuild_the_same_comparison(two_evaluations, tmp_path):
    """scripts/result_files.py keeps per episode what re-scoring needs (ids, seeds, finish reason, calls,
    plan), gzipped; `star compare` and `star evaluate` on those files alone give what the full outputs give."""
    import gzip
    import subprocess
    import sys
    from pathlib import Path

    root, tables = two_evaluations
    script = Path(__file__).resolve().parents[2] / "scripts" / "result_files.py"
    data = tmp_path / "data"
    for side in ("before", "after"):
        subprocess.run([sys.executable, str(script), "--eval", str(root / side), "--out",
                        str(data / f"{side}.jsonl.gz")], check=True, capture_output=True)
    subprocess.run([sys.executable, str(script), "--queries", str(root / "val.jsonl"), "--out",
                    str(data / "queries.jsonl.gz")], check=True, capture_output=True)
    record = json.loads(gzip.open(data / "after.jsonl.gz", "rt").readline())
    assert "messages" not in record and "token_ids" not in record
    assert {"idx", "query_id", "seed", "finish_reason", "tool_calls", "plan"} <= set(record)

    assert _compare(root, tmp_path / "full") == 0
    assert main(["compare", "--before", str(data / "before.jsonl.gz"), "--after", str(data / "after.jsonl.gz"),
                 "--names", "B", "A", "--queries", str(data / "queries.jsonl.gz"), "--db", "generated:0",
                 "--out", str(tmp_path / "slim"), "--quiet"]) == 0
    full = json.loads((tmp_path / "full" / "compare.json").read_text())
    assert json.loads((tmp_path / "slim" / "compare.json").read_text()) == full

    # one plan per query for `star evaluate`: the first sample's, scored as the episodes were
    from star.evaluation.rewards import compute_reward
    from star.jsonl import read_jsonl

    first = [r for r in read_jsonl(data / "after.jsonl.gz") if r["sample"] == 0]
    (tmp_path / "first.jsonl").write_text("".join(json.dumps(r) + "\n" for r in first))
    assert main(["evaluate", "--queries", str(data / "queries.jsonl.gz"), "--plans", str(tmp_path / "first.jsonl"),
                 "--db", "generated:0", "--mode", "official", "--reward", "sum", "--out",
                 str(tmp_path / "scores.json")]) == 0
    episodes = [t for t in read_jsonl(root / "after" / "trajectories.jsonl") if t["sample"] == 0]
    expected = sum(compute_reward("sum", t["scores"], t["finish_reason"]) for t in episodes) / len(episodes)
    assert json.loads((tmp_path / "scores.json").read_text())["reward"]["mean"] == pytest.approx(expected)
