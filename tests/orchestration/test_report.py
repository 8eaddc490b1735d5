"""The comparison report on fixed inputs: every headline metric's intervals and paired tests, failed
variants, paper numbers beside ours, files and plots."""

from __future__ import annotations

import json

import numpy as np
import pytest

from star.report import paper_results as paper
from star.report.config import ReportConfig
from star.report.build import build_report
from star.report.load import VariantResult, load_variant_dir
from star.report.metrics import HEADLINE, ReportError, outcomes_from_trajectories, per_query_metrics, samples_from_trajectories
from star.report.render import render_markdown
from star.report.write import log_report, write_report

FAST = ReportConfig(bootstrap=200, permutations=200)


def _setting(reward: str, scale: str = "3B") -> dict:
    return {"scale": scale, "stage": "rl", "reward": reward, "algorithm": "grpo", "data_size": 1000,
            "difficulty": "mixed"}


def _scores(success: bool = False, delivered: bool = True, cs_micro: float = 0.0, hard_micro: float = 0.0,
            tool_calls: int = 6, slots_empty: int = 0) -> dict:
    """A sample's scores as the report reads them: the plan's (star.agent.env.score_plan) and the episode's
    tool calls (samples_from_trajectories puts them beside the scores)."""
    return {"delivered": delivered, "cs_micro": cs_micro, "cs_macro": float(success), "hard_micro": hard_micro,
            "hard_macro": float(success), "success": success, "mode": "official", "checks": {},
            "tool_calls": tool_calls, "slots_empty": slots_empty, "coverage": 1.0}


def _variants(scale: str = "3B") -> list[VariantResult]:
    ids = [f"q{i}" for i in range(20)]
    solved = {"sum": 5, "macro": 10, "curriculum": 15}
    out = []
    for reward, k in solved.items():
        outcomes = {q: float(i < k) for i, q in enumerate(ids)}  # nested: each solves a superset
        out.append(VariantResult(f"reward={reward}", {"reward": reward}, outcomes,
                                 {"success_rate": k / 20, "commonsense_micro": 0.9},
                                 {"reward_mean": [(0, 0.1), (1, 0.2)], "entropy": [(0, 1.0), (1, 0.9)]},
                                 _setting(reward, scale), {"sft": {"success_rate": 0.1}}))
    return out


def test_paper_numbers_are_matched_by_setting():
    assert paper.paper_success(_setting("curriculum")) == 49.9
    assert paper.paper_success(_setting("sum", "7B")) == 62.8
    assert paper.paper_success({"scale": "1.5B", "stage": "sft"}) == 6.9
    assert paper.paper_success(_setting("sum", "smoke")) is None
    # A setting the paper never ran (tool failures) matches nothing even where the rest agrees.
    assert paper.paper_success({**_setting("macro"), "env_failure_rate": 0.05}) is None
    table9 = paper.matches({**_setting("macro", "1.5B"), "algorithm": "arpo"}, "9")
    assert table9[0].metrics["success"] == 37.5 and table9[0].extra["gpu_hours"] == 195


def test_report_rows_tests_and_paper_column():
    rep = build_report(_variants(), "reward", "Reward design", "1", FAST)
    rows = {r["variant"]: r for r in rep.rows}
    assert rows["reward=macro"]["success"] == pytest.approx(0.5)
    assert rows["reward=macro"]["success_low"] < 0.5 < rows["reward=macro"]["success_high"]
    assert rows["reward=curriculum"]["paper_success"] == 49.9
    tests = {t["variant"]: t for t in rep.tests}
    assert set(tests) == {"reward=macro", "reward=curriculum"}  # against the first variant
    assert tests["reward=curriculum"]["variant_only"] == 10 and tests["reward=curriculum"]["baseline_only"] == 0
    assert tests["reward=curriculum"]["p_value"] == pytest.approx(2 / 1024)
    assert tests["reward=curriculum"]["p_holm"] >= tests["reward=curriculum"]["p_value"]
    assert rep.n_queries == 20 and rep.effects == []


def test_markdown_has_the_papers_table_shape_with_ours_beside_it():
    vs = _variants()
    md = render_markdown(build_report(vs, "reward", "", "1", FAST), vs)
    assert "| scale | Base | SFT | Sum | Macro | Success | Curriculum |" in md
    assert "| paper 3B | 0.000 | 0.122 | 0.470 | 0.482 | 0.466 | 0.499 |" in md
    assert "| ours (3B) | — | 0.100 | 0.250 [" in md
    assert "exact McNemar" in md


def test_unmatched_settings_say_so():
    rep = build_report(_variants("smoke"), "reward", "", "1", FAST)
    assert all(r["paper_success"] is None for r in rep.rows)
    assert any("reference only" in n for n in rep.notes)


def test_factorial_report_has_main_effects_and_interaction():
    rng = np.random.default_rng(0)
    ids = [f"q{i}" for i in range(30)]
    vs = []
    for r, dr in (("sum", 0.0), ("success", 0.5)):
        for a in ("grpo", "dapo"):
            vs.append(VariantResult(f"reward={r},algorithm={a}", {"reward": r, "algorithm": a},
                                    {q: float(rng.random() < 0.2 + dr) for q in ids}))
    rep = build_report(vs, "smoke", "", None, FAST)
    terms = [e["term"] for e in rep.effects]
    assert terms == ["reward", "algorithm", "reward x algorithm"]
    assert "## Factorial effects" in render_markdown(rep, vs)


def test_inputs_that_cannot_be_compared_are_refused():
    with pytest.raises(ReportError, match="no variants"):
        build_report([])
    a = VariantResult("a", {}, {"q1": 1.0})
    b = VariantResult("b", {}, {"q2": 1.0})
    with pytest.raises(ReportError, match="share no evaluated query"):
        build_report([a, b])
    with pytest.raises(ReportError, match="baseline"):
        build_report([a, VariantResult("c", {}, {"q1": 0.0})], config=ReportConfig(baseline="zzz"))


def test_write_report_writes_markdown_json_and_plots(tmp_path):
    vs = _variants()
    files = write_report(build_report(vs, "reward", "", "1", FAST), vs, tmp_path / "rep")
    assert set(files) == {"markdown", "json", "success_plot", "metrics_plot", "curves_plot"}
    assert files["success_plot"].read_bytes()[:4] == b"\x89PNG"
    assert files["metrics_plot"].read_bytes()[:4] == b"\x89PNG"
    assert json.loads(files["json"].read_text())["ablation"] == "reward"
    assert not [p for p in (tmp_path / "rep").iterdir() if p.name.startswith(".")]  # no temp files left


def test_variant_directory_loads_trajectories_metrics_and_curves(tmp_path):
    root = tmp_path / "reward-macro"
    (root / "metrics/eval/rl").mkdir(parents=True)
    (root / "models/rl").mkdir(parents=True)
    trajs = [{"query_id": "q1", "scores": {"success": True}}, {"query_id": "q1", "scores": {"success": False}},
             {"query_id": "q2", "scores": {"success": False}}]
    (root / "metrics/eval/rl/trajectories.jsonl").write_text("\n".join(json.dumps(t) for t in trajs) + "\n")
    (root / "metrics/eval/rl/metrics.json").write_text(json.dumps({"success_rate": 0.25}))
    (root / "models/rl/steps.jsonl").write_text('{"step": 0, "reward_mean": 0.1}\n{"step": 1, "reward_mean": 0.3}\n')
    (root / "params.yaml").write_text("run: {profile: paper-3b, ablation: reward, variant: reward=macro}\n"
                                      "model: {profile: paper-3b}\nrl: {reward: macro, algorithm: grpo}\n"
                                      "split: {rl_size: 1000, ratio: '4:3:3'}\n")
    v = load_variant_dir(root)
    assert v.name == "reward=macro" and v.levels == {"reward": "macro"}
    assert v.outcomes == {"q1": 0.5, "q2": 0.0}
    assert v.curves["reward_mean"] == [(0, 0.1), (1, 0.3)]
    assert paper.paper_success(v.setting) == 48.2
    (root / "metrics/eval/rl/trajectories.jsonl").write_text('{"query_id": "q1"}\n{broken\n')
    with pytest.raises(ReportError, match="trajectories.jsonl:2"):
        load_variant_dir(root)


def test_outcomes_average_samples_per_query():
    assert outcomes_from_trajectories([{"query_id": 1, "scores": {"success": 1}},
                                       {"query_id": 1, "scores": {"success": 0}}]) == {"1": 0.5}


def test_star_report_cli_compares_variant_directories(tmp_path, capsys):
    from star.cli import main

    dirs = []
    for name, solved in (("reward-sum", 2), ("reward-macro", 6)):
        root = tmp_path / name
        (root / "metrics/eval/rl").mkdir(parents=True)
        lines = [json.dumps({"query_id": f"q{i}", "finish_reason": "answer", "scores": _scores(i < solved)})
                 for i in range(8)]
        (root / "metrics/eval/rl/trajectories.jsonl").write_text("\n".join(lines) + "\n")
        (root / "params.yaml").write_text(f"run: {{variant: 'reward={name.split('-')[1]}'}}\n")
        dirs.append(str(root))
    assert main(["report", "--variants", *dirs, "--out", str(tmp_path / "rep"), "--bootstrap", "200"]) == 0
    out = capsys.readouterr().out
    # columns: delivery, cs micro, cs macro, hard micro, hard macro, success [CI], mean reward [CI]
    assert "| reward=macro | macro | 1.000 [1.000, 1.000] | " in out and "exact McNemar" in out
    assert "| success | reward=macro | reward=sum | +0.500 [" in out
    assert (tmp_path / "rep/metrics_by_variant.png").is_file()
    assert (tmp_path / "rep/success_by_variant.png").is_file()
    assert main(["report", "--variants", str(tmp_path / "missing")]) == 2


# ---------------------------------------------------------------------------- headline metrics

def test_per_query_metrics_average_each_querys_samples():
    trajs = [{"query_id": "q1", "finish_reason": "answer", "tool_calls": 4,
              "scores": {**_scores(cs_micro=0.5, hard_micro=1.0), "hard_macro": 1.0}},
             {"query_id": "q1", "finish_reason": "context_overflow", "tool_calls": 12, "scores": _scores(delivered=False)},
             {"query_id": "q2", "finish_reason": "answer", "tool_calls": 7,
              "scores": _scores(True, cs_micro=1.0, hard_micro=1.0)},
             {"query_id": "q2", "finish_reason": "format_error", "tool_calls": 2,
              "scores": _scores(True, cs_micro=1.0, hard_micro=1.0)}]
    for t in trajs:  # the environment's scores carry no tool calls: the trajectory does
        del t["scores"]["tool_calls"]
    samples = samples_from_trajectories(trajs)
    assert all("checks" not in sc for runs in samples.values() for sc, _ in runs)
    m = per_query_metrics(samples, "sum")
    assert list(m) == list(HEADLINE)
    assert m["delivery"] == {"q1": 0.5, "q2": 1.0}
    assert m["cs_micro"] == {"q1": 0.25, "q2": 1.0} and m["cs_macro"] == {"q1": 0.0, "q2": 1.0}
    assert m["hard_micro"] == {"q1": 0.5, "q2": 1.0} and m["hard_macro"] == {"q1": 0.5, "q2": 1.0}
    assert m["success"] == {"q1": 0.0, "q2": 1.0}
    # sum reward: q1 (0.5 + 0 + 1 + 1 + 0, then 0) / 2; q2 5 for the answer, 0 for the format error
    assert m["mean_reward"] == {"q1": 1.25, "q2": 2.5}
    assert per_query_metrics(samples, "macro")["mean_reward"] == {"q1": 0.5, "q2": 1.5}
    # behaviour: the episode's tool calls, and how it ended
    assert m["tool_calls"] == {"q1": 8.0, "q2": 4.5}
    assert m["answered"] == {"q1": 0.5, "q2": 0.5} and m["format_error"] == {"q1": 0.0, "q2": 0.5}
    assert m["context_full"] == {"q1": 0.5, "q2": 0.0}
    # the reward-hacking audit: no plan here leaves a required slot empty
    assert m["incomplete"] == {"q1": 0.0, "q2": 0.0} and m["incomplete_reward"] == {"q1": 0.0, "q2": 0.0}
    stub = samples_from_trajectories([{"query_id": "q", "finish_reason": "answer",
                                       "scores": _scores(cs_micro=0.5, slots_empty=7)}])
    assert per_query_metrics(stub, "sum")["incomplete"] == {"q": 1.0}
    assert per_query_metrics(stub, "sum")["incomplete_reward"] == {"q": 0.5}  # what the stub earned
    # a metric whose score keys a trajectory lacks is left out, not read as 0
    partial = per_query_metrics(samples_from_trajectories([{"query_id": "q", "scores": {"success": True}}]))
    assert list(partial) == ["success", "answered", "format_error", "context_full"]


def _zero_success_pair(n: int = 10) -> list[VariantResult]:
    """Two variants that never succeed; b delivers every plan and passes some checks, a delivers none."""
    a = {f"q{i}": [(_scores(delivered=False), "max_turns")] for i in range(n)}
    b = {f"q{i}": [(_scores(cs_micro=0.5 if i < n // 2 else 0.25, hard_micro=0.25), "answer")] for i in range(n)}
    return [VariantResult(name, {"reward": name}, {}, samples=s, reward="sum") for name, s in (("a", a), ("b", b))]


def test_dense_metrics_separate_variants_whose_success_is_all_zero():
    rep = build_report(_zero_success_pair(), "reward", "", None, FAST)
    assert rep.metrics == list(HEADLINE) and rep.reward == "sum" and rep.n_queries == 10
    rows = {r["variant"]: r for r in rep.rows}
    assert (rows["a"]["success"], rows["a"]["success_low"], rows["a"]["success_high"]) == (0.0, 0.0, 0.0)
    assert (rows["b"]["success"], rows["b"]["success_low"], rows["b"]["success_high"]) == (0.0, 0.0, 0.0)
    assert (rows["b"]["delivery"], rows["b"]["delivery_low"], rows["b"]["delivery_high"]) == (1.0, 1.0, 1.0)
    assert rows["b"]["cs_micro"] == pytest.approx(0.375)
    assert 0.25 <= rows["b"]["cs_micro_low"] < 0.375 < rows["b"]["cs_micro_high"] <= 0.5
    assert rows["b"]["mean_reward"] == pytest.approx(0.625)  # sum reward: cs_micro + hard_micro 0.25
    tests = {t["metric"]: t for t in rep.tests}
    assert set(tests) == set(HEADLINE) and all(t["baseline"] == "a" and t["variant"] == "b" for t in rep.tests)
    # success never differs: McNemar with no discordant pair
    assert tests["success"]["p_value"] == 1.0 and tests["success"]["difference"] == 0.0
    # delivery is 0/1: exact McNemar, b delivers on all 10 queries a missed -> 2 / 2^10
    assert tests["delivery"]["method"] == "exact McNemar" and tests["delivery"]["variant_only"] == 10
    assert tests["delivery"]["p_value"] == pytest.approx(2 / 1024)
    # behaviour is compared the same way: b answers on every query, a never does
    assert (rows["a"]["answered"], rows["b"]["answered"]) == (0.0, 1.0) and tests["answered"]["variant_only"] == 10
    assert rows["a"]["tool_calls"] == rows["b"]["tool_calls"] == 6.0 and tests["tool_calls"]["p_value"] == 1.0
    # the dense ones: 10 positive differences, exact sign flip -> only all + / all - reach the sum
    for m in ("cs_micro", "hard_micro", "mean_reward"):
        assert tests[m]["method"] == "paired sign-flip permutation"
        assert tests[m]["p_value"] == pytest.approx(2 / 1024)
    assert tests["cs_micro"]["difference"] == pytest.approx(0.375)
    assert tests["hard_micro"]["difference_low"] == tests["hard_micro"]["difference_high"] == pytest.approx(0.25)
    # Holm over all 13 tests: the five smallest share rank 1's factor 13; the rest stay at 1
    assert len(rep.tests) == len(HEADLINE) == 13
    for m in ("delivery", "cs_micro", "hard_micro", "mean_reward", "answered"):
        assert tests[m]["p_holm"] == pytest.approx(13 * 2 / 1024)
    assert tests["cs_macro"]["p_holm"] == tests["hard_macro"]["p_holm"] == 1.0
    md = render_markdown(rep)
    assert "| b | b | 1.000 [1.000, 1.000] | 0.375 [" in md
    assert "| cs micro | b | a | +0.375 [" in md and "| mean reward | b | a | +0.625 [" in md
    assert "mean reward scored with the `sum` reward" in md


def test_mean_reward_uses_one_reward_for_every_variant():
    vs = _zero_success_pair()
    vs[1].reward = "success"  # trained differently: still scored with the baseline's reward
    assert build_report(vs, config=FAST).reward == "sum"
    rep = build_report(vs, config=FAST.model_copy(update={"reward": "macro"}))
    assert rep.reward == "macro" and {r["variant"]: r["mean_reward"] for r in rep.rows} == {"a": 0.0, "b": 0.0}
    vs[0].reward = "curriculum"  # its final stage
    assert build_report(vs, config=FAST).reward == "success"
    with pytest.raises(ReportError, match="not a registered reward"):
        build_report(vs, config=FAST.model_copy(update={"reward": "nope"}))


def test_failed_variants_are_named_and_the_rest_compared(tmp_path):
    vs = _zero_success_pair()
    err = "stage grpo: RuntimeError: CUDA out of memory | tried 2 GiB\n  (traceback)"
    rep = build_report(vs, "reward", "", None, FAST, failed={"c": err})
    assert rep.failed == {"c": err} and [r["variant"] for r in rep.rows] == ["a", "b"]
    assert any("1 variant(s) failed" in n for n in rep.notes)
    files = write_report(rep, vs, tmp_path / "rep")
    md = files["markdown"].read_text()
    assert "## Failed variants" in md and "| c | stage grpo: RuntimeError: CUDA out of memory \\| tried 2 GiB (traceback) |" in md
    assert "## Headline metrics by variant" in md
    assert json.loads(files["json"].read_text())["failed"] == {"c": err}
    with pytest.raises(ReportError, match="it failed"):
        build_report(vs, failed={"c": err}, config=FAST.model_copy(update={"baseline": "c"}))


def test_a_report_of_failures_only_can_be_written(tmp_path):
    rep = build_report([], "reward", "Reward design", "1", FAST, failed={"a": "stage sft: ValueError: x",
                                                                          "b": "stage evaluate: OSError: y"})
    assert rep.rows == [] and rep.tests == [] and rep.n_queries == 0 and rep.metrics == []
    files = write_report(rep, [], tmp_path / "rep")
    assert set(files) == {"markdown", "json"}
    md = files["markdown"].read_text()
    assert "| a | stage sft: ValueError: x |" in md and "| b | stage evaluate: OSError: y |" in md
    assert "no variant finished (2 failed)" in md and "## Headline metrics" not in md
    assert "| paper 3B |" in md  # the paper's table still shows
    assert json.loads(files["json"].read_text())["failed"]["b"] == "stage evaluate: OSError: y"


def test_log_report_puts_every_headline_metric_on_the_parent_run(tmp_path):
    from star.tracking.config import TrackingConfig
    from star.tracking.mlflow_logging import Tracker

    tracker = Tracker(TrackingConfig(experiment="report-test"), project_dir=tmp_path,
                      uri=f"sqlite:///{tmp_path}/mlflow.db")
    parent = tracker.start_run("reward (test)", "ablation")
    vs = _zero_success_pair()
    rep = build_report(vs, "reward", "", None, FAST, failed={"c": "stage grpo: boom"})
    log_report(tracker, parent, rep, write_report(rep, vs, tmp_path / "rep"))
    tracker.end_run(parent, "FAILED")
    logged = tracker.client.get_run(parent).data.metrics
    for m in HEADLINE:
        assert f"{m}.b" in logged and f"{m}_low.b" in logged
    assert logged["cs_micro.b"] == pytest.approx(0.375) and logged["success.a"] == 0.0
    assert logged["variants_failed"] == 1.0
    # the parent's description in the MLflow UI opens with the verdict
    assert "optimizer steps" in tracker.client.get_run(parent).data.tags["mlflow.note.content"]
    arts = {f.path for f in tracker.client.list_artifacts(parent, "report")}
    assert {"report/report.md", "report/report.json", "report/metrics_by_variant.png"} <= arts


def test_report_reproduces_eval_agents_table_on_real_episodes(generated_db, tmp_path):
    """Episodes of the built-in teacher on certified queries, written as eval-agent writes them: the
    report's per-query means give eval-agent's pooled rates and mean reward (hard micro aside: the
    evaluator pools it over constraints, the report averages each query's fraction)."""
    from star.agent.config import AgentConfig
    from star.policy_eval.config import EvalConfig
    from star.policy_eval.eval_agent import metrics, write_outputs
    from star.teachers.builtin import BuiltinTeacher
    from star.synthesis.pipeline import synthesize

    queries = synthesize(generated_db, 8, seed=7)
    ids = [str(q.get("id", i)) for i, q in enumerate(queries)]
    settings = {"full": AgentConfig(eval_mode="official"),
                "hobbled": AgentConfig(eval_mode="official", tool_budget=6, failure_rate=0.3)}
    dirs, tables = [], {}
    for name, agent in settings.items():
        teacher = BuiltinTeacher(generated_db, agent)
        trajs = [teacher.run(q, qid, s, seed=100 * i + s) for i, (q, qid) in enumerate(zip(queries, ids))
                 for s in range(2)]
        tables[name] = metrics(trajs, [{**q, "id": qid} for q, qid in zip(queries, ids)], generated_db, "official")
        root = tmp_path / name
        write_outputs(root / "metrics/eval/rl", trajs, tables[name], EvalConfig(samples=2))
        (root / "params.yaml").write_text(f"run: {{variant: '{name}'}}\nrl: {{reward: macro}}\n")
        dirs.append(root)
    vs = [load_variant_dir(d, levels={}) for d in dirs]
    rep = build_report(vs, "teacher", "", None, FAST)
    assert rep.n_queries == 8 and rep.metrics == list(HEADLINE) and rep.reward == "macro"
    pooled = {"delivery": "delivery_rate", "cs_micro": "commonsense_micro", "cs_macro": "commonsense_macro",
              "hard_macro": "hard_macro", "success": "success_rate"}
    for row in rep.rows:
        table = tables[row["variant"]]
        for m, key in pooled.items():
            assert row[m] == pytest.approx(table[key]), m
        assert row["mean_reward"] == pytest.approx(table["mean_reward"]["macro"])
        assert 0.0 <= row["hard_micro"] <= 1.0
    rows = {r["variant"]: r for r in rep.rows}
    # six calls are too few to find a valid plan: the teacher answers anyway, and fails
    assert rows["hobbled"]["success"] == 0.0 < rows["full"]["success"]
    assert {t["metric"] for t in rep.tests} == set(HEADLINE)


def _two_finished_variants(base):
    """reward=sum solves 1 of 6 queries, reward=macro 3: their final evaluations under `base`."""
    for slug, solved in (("reward-sum", 1), ("reward-macro", 3)):
        (base / slug / "metrics/eval/rl").mkdir(parents=True)
        lines = [json.dumps({"query_id": f"q{i}", "finish_reason": "answer", "scores": _scores(i < solved)})
                 for i in range(6)]
        (base / slug / "metrics/eval/rl/trajectories.jsonl").write_text("\n".join(lines) + "\n")


def test_star_report_cli_names_the_variants_of_an_ablation_that_did_not_finish(tmp_path, capsys):
    from star.cli import main

    base = tmp_path / "runs/smoke/reward"
    _two_finished_variants(base)
    (base / "reward-success/metrics/eval/rl").mkdir(parents=True)
    (base / "reward-success/metrics/eval/rl/trajectories.jsonl").write_text("{broken\n")
    # reward=curriculum never got as far as a directory
    assert main(["report", "--ablation", "reward", "--runs-dir", str(tmp_path / "runs"), "--bootstrap", "200"]) == 0
    captured = capsys.readouterr()
    assert "not compared (no readable final evaluation): reward=success, reward=curriculum" in captured.err
    data = json.loads((base / "report/report.json").read_text())
    assert [r["variant"] for r in data["rows"]] == ["reward=sum", "reward=macro"]
    assert set(data["failed"]) == {"reward=success", "reward=curriculum"}
    assert "trajectories.jsonl:1" in data["failed"]["reward=success"]
    assert "| reward=curriculum | " in captured.out and "## Failed variants" in captured.out


def test_a_report_of_a_run_with_overrides_has_its_own_folder_and_says_so(tmp_path, capsys):
    from star.cli import main

    base = tmp_path / "runs/smoke/reward_rl.seed-1"
    _two_finished_variants(base)
    assert main(["report", "--ablation", "reward", "--set", "rl.seed=1", "--runs-dir", str(tmp_path / "runs"),
                 "--bootstrap", "200"]) == 0
    text = (base / "report/report.md").read_text()
    assert "Profile `smoke`; overrides: `rl.seed=1`." in text
    assert not (tmp_path / "runs/smoke/reward").exists()  # the run without overrides keeps its own report


def test_a_report_of_some_levels_reads_the_whole_ablations_variants_and_has_its_own_folder(tmp_path, capsys):
    from star.cli import main

    base = tmp_path / "runs/smoke/reward"  # a levels=[...] run's variants live in the whole ablation's folder
    _two_finished_variants(base)
    assert main(["report", "--ablation", "reward", "--levels", "sum", "macro", "--runs-dir", str(tmp_path / "runs"),
                 "--bootstrap", "200"]) == 0
    data = json.loads((tmp_path / "runs/smoke/reward-sum-macro/report/report.json").read_text())
    assert [r["variant"] for r in data["rows"]] == ["reward=sum", "reward=macro"] and not data["failed"]
    assert not (base / "report").exists()  # the whole ablation's report is not overwritten
    assert main(["report", "--ablation", "reward", "--levels", "nope", "--runs-dir", str(tmp_path / "runs")]) == 2
    assert "has no level(s) ['nope']" in capsys.readouterr().err


def test_variants_are_compared_on_their_shared_queries_and_metrics():
    a, b = _zero_success_pair()
    b.samples.pop("q0")                                               # b never evaluated q0
    old = VariantResult("old", {"reward": "old"}, {f"q{i}": float(i % 2) for i in range(10)})  # success only
    rep = build_report([a, b, old], config=FAST)
    assert rep.n_queries == 9 and rep.metrics == ["success"]
    assert any("dropped per variant: {'a': 1, 'old': 1}" in n for n in rep.notes)
    assert any(n.startswith("cs micro: no per-query values for ['old']") for n in rep.notes)
    assert {t["metric"] for t in rep.tests} == {"success"} and len(rep.tests) == 2


# ---------------------------------------------------------------------------- the verdict first

def _with_training(variants, steps: list[int], format_errors: list[int]):
    for v, n, fe in zip(variants, steps, format_errors):
        v.curves = {"optimizer_steps": [(1, float(n)), (2, 0.0)]}
        v.metrics = {"finish_reasons": {"format_error": fe, "answer": 10 - fe}}
    return variants


def test_a_report_whose_variants_made_no_update_says_so_in_one_line_first():
    vs = _with_training(_zero_success_pair(), [0, 0], [10, 10])
    md = render_markdown(build_report(vs, "reward", "", None, FAST))
    verdict = md.split("## Verdict", 1)[1].split("##", 1)[0]
    assert "No variant made a GRPO update" in verdict and "2 variants cannot differ" in verdict
    assert md.index("## Verdict") < md.index("## Headline metrics by variant")


def test_the_verdict_gives_updates_format_errors_and_what_separates_the_variants():
    vs = _with_training(_zero_success_pair(), [0, 3], [10, 4])
    rep = build_report(vs, "reward", "", None, FAST)
    assert [(v["optimizer_steps"], v["rl_differs_from_sft"]) for v in rep.verdict] == [(0, False), (3, True)]
    assert rep.verdict[1]["format_error"] == pytest.approx(0.4)
    # b delivers on every query a missed, and passes more checks: those tests separate them (Holm p < 0.05)
    assert "delivery" in rep.separating and "success" not in rep.separating
    md = render_markdown(rep)
    assert "| b | 3 | yes | 0.400 | — |" in md and "| a | 0 | no (no update) | 1.000 | — |" in md
    assert "Separated at this size (Holm-adjusted p < 0.05): delivery" in md


def test_a_variant_without_step_metrics_is_unknown_not_unchanged():
    vs = _zero_success_pair()
    rep = build_report(vs, "reward", "", None, FAST)
    assert all(v["optimizer_steps"] is None and v["rl_differs_from_sft"] is None for v in rep.verdict)
    assert "No variant made a GRPO update" not in render_markdown(rep)


def test_variants_that_trained_exactly_alike_are_named_as_copies():
    """A curriculum still on its first reward trains as that reward; two rewards that paid nothing both leave
    the SFT model: the verdict says which variants are copies of which, whatever their timings."""
    a, b = _zero_success_pair()
    c = VariantResult("c", {"reward": "c"}, dict(b.outcomes), samples=dict(b.samples))
    vs = _with_training([a, b, c], [0, 3, 3], [10, 4, 4])
    for v, t in zip(vs, (1.0, 2.0, 9.0)):
        v.curves["step_time_s"] = [(1, t), (2, t)]
    c.curves["reward_mean"] = b.curves["reward_mean"] = [(1, 0.5), (2, 0.0)]
    rep = build_report(vs, "reward", "", None, FAST)
    assert [v["trained_as"] for v in rep.verdict] == [None, None, "b"]
    md = render_markdown(rep)
    assert "| c | 3 | yes | 0.400 | b |" in md and "copies of its model: c = b." in md
    c.curves["reward_mean"] = [(1, 0.5), (2, 0.25)]
    assert [v["trained_as"] for v in build_report(vs, "reward", "", None, FAST).verdict] == [None, None, None]


def test_variants_grpo_never_updated_are_copies_of_one_model_whatever_their_rewards_read():
    """macro paid some rollouts, but every group alike (no advantage, no update); success paid none: both RL
    models are the SFT model, so the verdict names one a copy of the other (CI checks their weights agree)."""
    a, b = _zero_success_pair()
    c = VariantResult("c", {"reward": "c"}, dict(b.outcomes), samples=dict(b.samples))
    vs = _with_training([a, b, c], [3, 0, 0], [4, 10, 10])
    b.curves["reward_mean"] = [(1, 0.25), (2, 0.25)]
    c.curves["reward_mean"] = [(1, 0.0), (2, 0.0)]
    rep = build_report(vs, "reward", "", None, FAST)
    assert [v["trained_as"] for v in rep.verdict] == [None, None, "b"]
    assert "copies of its model: c = b." in render_markdown(rep)
