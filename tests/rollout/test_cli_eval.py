"""`star eval-agent` runs a local checkpoint or an endpoint over a query set and writes the metric table."""

from __future__ import annotations

import json

import pytest

from star.cli import main


@pytest.fixture()
def query_file(tmp_path, synthetic_queries):
    path = tmp_path / "val.jsonl"
    path.write_text("".join(json.dumps(q) + "\n" for q in synthetic_queries[:3]))
    return path


def _check_outputs(out, n):
    m = json.loads((out / "metrics.json").read_text())
    for key in ("commonsense_micro", "commonsense_macro", "hard_micro", "hard_macro", "success_rate", "per_level"):
        assert key in m
    assert m["config"]["temperature"] == 0.6 and m["config"]["top_p"] == 0.95
    assert m["n"] == n and sum(m["finish_reasons"].values()) == n
    assert "| all |" in (out / "metrics.md").read_text()
    assert len((out / "trajectories.jsonl").read_text().splitlines()) == n


def test_eval_agent_on_a_local_checkpoint(tiny_model_dir, query_file, tmp_path, capsys):
    out = tmp_path / "eval"
    assert main(["eval-agent", "--model", str(tiny_model_dir), "--queries", str(query_file), "--out", str(out),
                 "--db", "generated:0", "--max-new-tokens", "16", "--quiet"]) == 0
    _check_outputs(out, 3)
    assert "evaluator mode: official" in capsys.readouterr().out


def test_eval_agent_on_an_endpoint(tiny_backend, tiny_model_dir, query_file, tmp_path):
    from star.rollout.openai_server import OpenAICompatibleServer

    out = tmp_path / "eval-http"
    with OpenAICompatibleServer(tiny_backend, model_name="tiny") as url:
        assert main(["eval-agent", "--model", url, "--model-name", "tiny", "--tokenizer", str(tiny_model_dir),
                     "--queries", str(query_file), "--out", str(out), "--db", "generated:0",
                     "--max-new-tokens", "16", "--mode", "strict", "--quiet"]) == 0
    _check_outputs(out, 3)


def test_eval_agent_days_keeps_only_the_trips_of_that_length(tiny_model_dir, synthetic_queries, tmp_path):
    path = tmp_path / "mixed.jsonl"
    path.write_text("".join(json.dumps(q) + "\n" for q in synthetic_queries))
    days = synthetic_queries[0]["days"]
    same = [q["id"] for q in synthetic_queries if q["days"] == days]
    assert 0 < len(same) < len(synthetic_queries)  # the file mixes trip lengths
    out = tmp_path / "eval"
    assert main(["eval-agent", "--model", str(tiny_model_dir), "--queries", str(path), "--out", str(out),
                 "--db", "generated:0", "--max-new-tokens", "8", "--days", str(days), "--quiet"]) == 0
    _check_outputs(out, len(same))
    assert [json.loads(x)["query_id"] for x in (out / "trajectories.jsonl").read_text().splitlines()] == same
    assert json.loads((out / "metrics.json").read_text())["config"]["days"] == days

    with pytest.raises(SystemExit, match="no 99-day query in .*mixed.jsonl .trip lengths there: "):
        main(["eval-agent", "--model", str(tiny_model_dir), "--queries", str(path), "--out", str(tmp_path / "o"),
              "--db", "generated:0", "--days", "99", "--quiet"])


def test_eval_agent_rejects_a_model_that_is_neither_path_nor_url(query_file, tmp_path):
    with pytest.raises(SystemExit, match="neither a directory nor an http"):
        main(["eval-agent", "--model", str(tmp_path / "nope"), "--queries", str(query_file), "--out",
              str(tmp_path / "o"), "--db", "generated:0"])


def test_llm_teacher_through_a_chat_endpoint(tiny_backend, query_file, tmp_path, capsys):
    from star.agent.trajectory import read_trajectories
    from star.rollout.openai_server import OpenAICompatibleServer

    out = tmp_path / "rollouts.jsonl"
    with OpenAICompatibleServer(tiny_backend, model_name="tiny") as url:
        assert main(["teacher", "--teacher", "openai", "--endpoint", url, "--model", "tiny", "--queries",
                     str(query_file), "--out", str(out), "--db", "generated:0", "--workers", "2", "--max-new-tokens", "24", "--quiet"]) == 0
    trajs = read_trajectories(out)
    assert len(trajs) == 3 and all(t.agent == "openai:tiny" for t in trajs)
    # A random model cannot follow the protocol: each episode ends on its first, malformed turn.
    assert all(t.finish_reason in ("format_error", "context_overflow") for t in trajs)
    assert all(t.messages[2]["role"] == "assistant" for t in trajs)


def test_eval_agent_runs_several_episodes_per_query(tiny_model_dir, query_file, tmp_path):
    out = tmp_path / "eval-k"
    assert main(["eval-agent", "--model", str(tiny_model_dir), "--queries", str(query_file), "--out", str(out),
                 "--db", "generated:0", "--max-new-tokens", "16", "--limit", "2", "--samples", "3", "--quiet"]) == 0
    _check_outputs(out, 6)
    episodes = [json.loads(line) for line in (out / "trajectories.jsonl").read_text().splitlines()]
    assert sorted(e["sample"] for e in episodes) == [0, 0, 1, 1, 2, 2]
    assert json.loads((out / "metrics.json").read_text())["config"]["samples"] == 3


def test_eval_agent_reads_the_eval_section_of_a_params_file_and_flags_override_it(tiny_model_dir, query_file,
                                                                                   tmp_path):
    params = tmp_path / "params.yaml"
    params.write_text("eval: {temperature: 0.3, max_new_tokens: 16, limit: 2, batch: 3, backend: transformers}\n"
                      "rl: {learning_rate: 1.0}\n")
    out = tmp_path / "eval-config"
    assert main(["eval-agent", "--model", str(tiny_model_dir), "--queries", str(query_file), "--out", str(out),
                 "--db", "generated:0", "--config", str(params), "--seed", "7", "--quiet"]) == 0
    cfg = json.loads((out / "metrics.json").read_text())["config"]
    assert (cfg["temperature"], cfg["max_new_tokens"], cfg["limit"], cfg["batch"], cfg["seed"]) == (0.3, 16, 2, 3, 7)
    assert len((out / "trajectories.jsonl").read_text().splitlines()) == 2
    # `--limit none` (a null as DVC renders it) means every query, over the file's limit.
    assert main(["eval-agent", "--model", str(tiny_model_dir), "--queries", str(query_file), "--out", str(out),
                 "--db", "generated:0", "--config", str(params), "--limit", "None", "--quiet"]) == 0
    assert len((out / "trajectories.jsonl").read_text().splitlines()) == 3


def test_eval_metrics_carry_the_mean_training_reward_of_the_episodes(generated_db, synthetic_queries):
    from star.policy_eval.eval_agent import metrics
    from star.agent.trajectory import Trajectory

    q = synthetic_queries[0]
    qid = str(q.get("id", q.get("idx", 0)))
    scores = {"delivered": True, "cs_micro": 0.75, "cs_macro": 0.0, "hard_micro": 0.5, "hard_macro": 0.0,
              "success": False}
    answered = Trajectory(qid, [], "answer", scores=scores)
    broken = Trajectory(qid, [], "format_error", scores=scores)  # a format error earns 0, whatever the scores
    m = metrics([answered, broken], [q], generated_db, "strict")
    assert m["mean_reward"]["sum"] == pytest.approx((0.75 + 0.5) / 2)
    assert m["mean_reward"]["success"] == 0.0
    assert "coverage" not in m["mean_reward"]  # these scores carry no coverage: left out, never read as 0
    covered = Trajectory(qid, [], "answer", scores={**scores, "coverage": 0.5})
    assert metrics([covered], [q], generated_db, "strict")["mean_reward"]["coverage"] == pytest.approx(0.625)


def _journal_of(out):
    return out.parent / "journal" / "episodes.jsonl"


def test_eval_agent_journals_each_episode_and_removes_the_journal_once_the_outputs_are_written(
        tiny_model_dir, query_file, tmp_path):
    out = tmp_path / "eval"
    assert main(["eval-agent", "--model", str(tiny_model_dir), "--queries", str(query_file), "--out", str(out),
                 "--db", "generated:0", "--max-new-tokens", "16", "--checkpoints", str(tmp_path / "journal"),
                 "--resume", "--quiet"]) == 0
    _check_outputs(out, 3)
    assert not _journal_of(out).exists()


def test_a_cut_off_evaluation_resumes_from_its_journal_and_runs_only_the_missing_episodes(
        tiny_model_dir, query_file, tmp_path):
    import argparse

    from star.policy_eval.cli_eval_agent import add_arguments, eval_config
    from star.policy_eval.eval_agent import journal_key
    from star.agent.trajectory import read_trajectories
    from star.evaluation.queries import load_queries
    from star.rollout.journal import EpisodeJournal

    args = ["--model", str(tiny_model_dir), "--queries", str(query_file), "--db", "generated:0",
            "--max-new-tokens", "16", "--quiet"]
    full = tmp_path / "full"
    assert main(["eval-agent", *args, "--out", str(full)]) == 0
    episodes = read_trajectories(full / "trajectories.jsonl")

    # What a run killed after its first two episodes leaves: two records and half of a third.
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    cfg = eval_config(parser.parse_args([*args, "--out", str(tmp_path / "unused")]))
    journal = EpisodeJournal(tmp_path / "journal", journal_key(str(tiny_model_dir), load_queries(query_file),
                                                               "generated:0", cfg))
    for i in (0, 1):
        episodes[i].agent = "from the journal"
        journal.append(i, episodes[i])
    journal.close()
    with open(journal.path, "a") as fh:
        fh.write('{"index": 2, "trajectory": {"query_')

    out = tmp_path / "resumed"
    assert main(["eval-agent", *args, "--out", str(out), "--checkpoints", str(tmp_path / "journal"),
                 "--resume"]) == 0
    resumed = read_trajectories(out / "trajectories.jsonl")
    assert [t.agent for t in resumed[:2]] == ["from the journal"] * 2  # kept, not run again
    assert resumed[2].agent == str(tiny_model_dir) and resumed[2].token_ids == episodes[2].token_ids
    assert not journal.path.exists()


def test_a_journal_of_other_settings_is_set_aside_not_resumed(tiny_model_dir, query_file, tmp_path):
    from star.agent.trajectory import Trajectory
    from star.rollout.journal import EpisodeJournal

    other = EpisodeJournal(tmp_path / "journal", "a-different-run")
    other.append(0, Trajectory(query_id="x", messages=[], finish_reason="answer", agent="other run"))
    other.close()
    out = tmp_path / "eval"
    assert main(["eval-agent", "--model", str(tiny_model_dir), "--queries", str(query_file), "--out", str(out),
                 "--db", "generated:0", "--max-new-tokens", "16", "--checkpoints", str(tmp_path / "journal"),
                 "--resume", "--quiet"]) == 0
    _check_outputs(out, 3)
    assert (tmp_path / "journal" / "episodes.stale.jsonl").is_file()


def test_a_params_file_evaluates_with_the_prompt_its_policy_trained_with(tmp_path):
    """`star eval-agent --config params.yaml` by hand runs the eval stage's prompt (`sandbox.prompt`), not
    EvalConfig's default; `eval.prompt` or --prompt still say otherwise."""
    import argparse

    from star.policy_eval.cli_eval_agent import add_arguments, eval_config

    parser = argparse.ArgumentParser()
    add_arguments(parser)

    def prompt(params: str, *flags: str) -> str:
        path = tmp_path / "params.yaml"
        path.write_text(params)
        args = ["--model", "m", "--queries", "q.jsonl", "--out", "o", "--config", str(path), *flags]
        return eval_config(parser.parse_args(args)).prompt

    assert prompt("sandbox: {prompt: short}\neval: {limit: 4}\n") == "short"
    assert prompt("sandbox: {prompt: short}\neval: {prompt: full}\n") == "full"
    assert prompt("sandbox: {prompt: short}\neval: {limit: 4}\n", "--prompt", "full") == "full"
    assert prompt("eval: {limit: 4}\n") == "full"  # no sandbox section: the default
