"""`star experiments`: DVC's experiments side by side in at most 120 columns."""

from __future__ import annotations

from star.orchestration.cli_experiments import experiment_rows, table


def _exp(name, reward, success, updates, lr=1e-4):
    params = {"params.yaml": {"data": {"run": {"variant": f"reward={reward}"},
                                       "rl": {"reward": reward, "learning_rate": lr},
                                       "sft": {"epochs": 1}}}}
    metrics = {"metrics/eval/rl/metrics.json": {"data": {"success_rate": success, "delivery_rate": 0.5,
                                                          "commonsense_macro": 0.1, "hard_macro": 0.0,
                                                          "hacked_rate": 0.0, "n": 4}},
               "models/rl/summary.json": {"data": {"optimizer_steps": updates, "steps": 2}}}
    return {"name": name, "data": {"rev": "workspace" if name is None else "abc1234def", "params": params,
                                   "metrics": metrics}}


SHOWN = [{"name": "main", "data": {"rev": "abc1234def"}},
         {**_exp(None, "quality", 0.0, 0), "experiments": [
    {"revs": [_exp("reward-sum", "sum", 0.25, 2)]}, {"revs": [_exp("reward-macro", "macro", 0.0, 0)]}]}]


def test_the_table_keeps_changed_params_and_headline_metrics():
    rows = experiment_rows(SHOWN)
    assert [r["name"] for r in rows] == ["main", "workspace", "reward-sum", "reward-macro"]
    text = table(rows)
    header = text.splitlines()[0].split()
    assert header == ["experiment", "rl.reward", "success", "delivery", "cs_macro", "hard_macro", "hacked"]
    assert "sft.epochs" not in text and "run.variant" not in text  # unchanged / the name already says it
    assert all(len(line) <= 120 for line in text.splitlines())
    assert ["reward-sum", "sum", "0.250", "0.500"] in [line.split()[:4] for line in text.splitlines()]


def test_a_narrow_terminal_drops_columns_and_says_how_many():
    rows = experiment_rows(SHOWN)
    text = table(rows, width=50)
    assert all(len(line) <= 50 for line in text.splitlines()[:-1])
    assert "left out at 50 columns" in text.splitlines()[-1] and "--all" in text
