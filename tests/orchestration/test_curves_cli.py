"""`star curves`: a run's step metrics as a markdown table and a plot."""

import json

from star.cli import main


def _write(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_curves_prints_a_table_per_step_and_writes_the_plot(tmp_path, capsys):
    (tmp_path / "rl").mkdir()
    metrics = _write(tmp_path / "rl" / "metrics.jsonl", [
        {"step": 1, "reward_mean": 0.5, "delivered": 0.25},
        {"step": 2, "reward_mean": 0.75, "delivered": 0.5},
        {"step": 2, "val_success_rate": 0.1},  # a validation row: a curve of its own
    ])
    out = tmp_path / "fig" / "rl.png"
    assert main(["curves", str(metrics), "--metrics", "reward_mean", "delivered", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "| step | reward_mean | delivered |" in text
    assert "| 1 | 0.5 | 0.25 |" in text and "| 2 | 0.75 | 0.5 |" in text
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_curves_names_an_unknown_metric_or_a_missing_file(tmp_path, capsys):
    metrics = _write(tmp_path / "metrics.jsonl", [{"step": 1, "reward_mean": 0.5}])
    assert main(["curves", str(metrics), "--metrics", "rewards"]) == 2
    assert "no step has rewards" in capsys.readouterr().err
    assert main(["curves", str(tmp_path / "nope.jsonl")]) == 2
    assert "no such file" in capsys.readouterr().err
