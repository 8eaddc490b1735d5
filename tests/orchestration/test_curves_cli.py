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
    from star.report.plot import trailing_mean

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


def test_pool_curves_gives_the_mean_and_standard_error_over_the_runs_that_reached_each_step():
    from star.report.plot import pool_curves

    pooled = pool_curves([{"r": [(1, 0.2), (2, 0.6)]}, {"r": [(1, 0.4), (2, 0.2)]}, {"r": [(1, 0.3)]}])
    (s1, m1, se1, n1), (s2, m2, se2, n2) = pooled["r"]
    assert (s1, n1, s2, n2) == (1, 3, 2, 2)
    assert abs(m1 - 0.3) < 1e-12 and abs(se1 - 0.1 / 3 ** 0.5) < 1e-12  # std 0.1 over 3 runs
    assert abs(m2 - 0.4) < 1e-12 and abs(se2 - 0.2) < 1e-12              # std 0.2828 over 2 runs
    assert pool_curves([{"r": [(1, 0.5)]}])["r"][0][2] != pool_curves([{"r": [(1, 0.5)]}])["r"][0][2]  # NaN


def test_curves_pool_prints_the_seed_mean_per_step_and_plots_it(tmp_path, capsys):
    a = _write(tmp_path / "a.jsonl", [{"step": 1, "reward_mean": 0.2}, {"step": 2, "reward_mean": 0.6}])
    b = _write(tmp_path / "b.jsonl", [{"step": 1, "reward_mean": 0.4}, {"step": 2, "reward_mean": 0.2}])
    c = _write(tmp_path / "c.jsonl", [{"step": 1, "reward_mean": 0.9}])
    out = tmp_path / "seeds.png"
    assert main(["curves", str(a), str(b), str(c), "--names", "s0", "s1", "other", "--metrics", "reward_mean",
                 "--pool", "s0", "s1", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "pool of s0+s1: mean over runs" in text
    assert "| step | runs | reward_mean | +- s.e. |" in text
    assert "| 1 | 2 | 0.3 | 0.1 |" in text and "| 2 | 2 | 0.4 | 0.2 |" in text  # 'other' left out
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_curves_pool_names_an_unknown_run_and_needs_two(tmp_path, capsys):
    a = _write(tmp_path / "a.jsonl", [{"step": 1, "reward_mean": 0.2}])
    b = _write(tmp_path / "b.jsonl", [{"step": 1, "reward_mean": 0.4}])
    assert main(["curves", str(a), str(b), "--names", "s0", "s1", "--pool", "s0", "s9"]) == 2
    assert "unknown run names s9 (runs: s0, s1)" in capsys.readouterr().err
    assert main(["curves", str(a), str(b), "--names", "s0", "s1", "--pool", "s0"]) == 2
    assert "at least two" in capsys.readouterr().err


def test_a_run_keeps_its_colour_in_a_panel_where_an_earlier_run_has_no_curve(tmp_path, monkeypatch):
    from star.report import plot
    from star.report.load import VariantResult

    figures = []
    monkeypatch.setattr(plot, "save_figure", lambda fig, path: figures.append(fig) or path)
    no_kl = VariantResult("no KL", {}, {}, curves={"reward_mean": [(1, 0.1), (2, 0.2)]})
    kl = VariantResult("KL", {}, {}, curves={"reward_mean": [(1, 0.3), (2, 0.4)], "kl_ref": [(1, 0.0), (2, 0.01)]})
    plot.plot_curves([no_kl, kl], tmp_path / "c.png", panels=("reward_mean", "kl_ref"), exact=True)
    reward, kl_panel = figures[0].axes
    colour_of = {line.get_label(): line.get_color() for line in reward.get_lines()}
    assert colour_of["no KL"] != colour_of["KL"]
    assert [line.get_color() for line in kl_panel.get_lines()] == [colour_of["KL"]]
