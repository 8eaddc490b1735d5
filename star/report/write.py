"""The ablation report written to a folder and logged on the MLflow parent run."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

from star.report.build import Report
from star.report.load import VariantResult
from star.report.metrics import HEADLINE, LOOPHOLE_GAP
from star.report.plot import plot_curves, plot_metrics, plot_success
from star.report.render import render_markdown, verdict_lines
from star.tracking.mlflow_logging import atomic_write_text


def write_report(report: Report, variants: list[VariantResult], out_dir: str | Path) -> dict[str, Path]:
    """report.md and report.json always (a report of failures only too); the plots when a variant finished."""
    out = Path(out_dir)
    files = {"markdown": atomic_write_text(out / "report.md", render_markdown(report, variants)),
             "json": atomic_write_text(out / "report.json", json.dumps(asdict(report), indent=1, default=str) + "\n")}
    if any("success_low" in r for r in report.rows):
        files["success_plot"] = plot_success(report, out / "success_by_variant.png")
    metrics_plot = plot_metrics(report, out / "metrics_by_variant.png")
    if metrics_plot:
        files["metrics_plot"] = metrics_plot
    curves = plot_curves(variants, out / "training_curves.png")
    if curves:
        files["curves_plot"] = curves
    return files


def log_report(tracker, run_id: str, report: Report, files: dict[str, Path]) -> None:
    """On the ablation's parent run: each variant's headline metrics (`success.<variant>`,
    `cs_macro.<variant>`, …, and their interval ends), the failure count, and every file as artifacts."""
    for r in report.rows:
        values = {}
        for m in HEADLINE:
            if isinstance(r.get(m), (int, float)):
                values[f"{m}.{r['variant']}"] = r[m]
                if f"{m}_low" in r:
                    values[f"{m}_low.{r['variant']}"] = r[f"{m}_low"]
                    values[f"{m}_high.{r['variant']}"] = r[f"{m}_high"]
        if isinstance(r.get(LOOPHOLE_GAP), (int, float)):
            values[f"loophole_gap.{r['variant']}"] = r[LOOPHOLE_GAP]
        tracker.log_metrics(run_id, values)
    tracker.log_metrics(run_id, {"variants_failed": len(report.failed)})
    verdict = verdict_lines(report)
    if verdict:  # the run's description in the MLflow UI opens with the verdict
        tracker.client.set_tag(run_id, "mlflow.note.content", "\n".join(verdict[2:]).strip())
    for path in files.values():
        tracker.log_artifact(run_id, path, "report")
