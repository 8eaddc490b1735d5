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


def test_trailing_mean_averages_each_point_with_the_steps_before_it_only():
    from star.tracking.report import trailing_mean

    assert trailing_mean([0.0, 1.0, 2.0, 3.0, 10.0], 3) == [0.0, 0.5, 1.0, 2.0, 5.0]
    assert trailing_mean([0.3, 0.1], 1) == [0.3, 0.1]


def test_curves_smooth_adds_the_trailing_mean_of_the_first_metric(tmp_path, capsys):
    metrics = _write(tmp_path / "metrics.jsonl", [
        {"step": 1, "reward_mean": 0.2, "delivered": 0.5},
        {"step": 2, "reward_mean": 0.6, "delivered": 0.5},
        {"step": 3, "reward_mean": 0.1, "delivered": 0.25},
    ])
    out = tmp_path / "rl.png"
    assert main(["curves", str(metrics), "--metrics", "reward_mean", "delivered", "--smooth", "2",
                 "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "| step | reward_mean | delivered | reward_mean (mean of 2) |" in text
    assert "| 1 | 0.2 | 0.5 | 0.2 |" in text and "| 3 | 0.1 | 0.25 | 0.35 |" in text
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert main(["curves", str(metrics), "--smooth", "0"]) == 2
    assert "--smooth must be at least 1" in capsys.readouterr().err
