"""The paper's Table 2 shape: one row per model, one EM column per QA set (paper order), then the average.

Rows come from `evaluate_ood` results (results.json); several runs (base / SFT / RL variants)
merge into one table and one grouped bar plot.
"""

from __future__ import annotations

import json
from pathlib import Path

from star.qa.config import PAPER_DATASETS
from star.qa.datasets import DATASETS

# OOD averages the paper reports (EM %, 7 sets; recipe §6), for side-by-side reading.
PAPER_AVERAGES = {"7B SFT (paper)": 41.9, "7B Sum (paper)": 36.7, "7B Macro (paper)": 42.9,
                  "Search-R1 (paper)": 38.5}


def column_order(rows: dict[str, dict]) -> list[str]:
    """Datasets present in any row: the paper's seven in its order, then the rest as first seen."""
    seen: list[str] = []
    for results in rows.values():
        for name in results["datasets"]:
            if name not in seen:
                seen.append(name)
    paper = [d for d in PAPER_DATASETS if d in seen]
    return paper + [d for d in seen if d not in paper]


def _title(name: str) -> str:
    return DATASETS[name].title if name in DATASETS else name


def table2_rows(rows: dict[str, dict]) -> tuple[list[str], list[list[str]]]:
    """(header, body) with EM in percent, one decimal; '–' where a model lacks a dataset."""
    cols = column_order(rows)
    header = ["Model", *(_title(c) for c in cols), "Avg."]
    body = []
    for model, results in rows.items():
        cells = []
        for c in cols:
            r = results["datasets"].get(c)
            cells.append(f"{100 * r['em']:.1f}" if r else "–")
        cells.append(f"{100 * results['average_em']:.1f}")
        body.append([model, *cells])
    return header, body


def table2_markdown(rows: dict[str, dict], with_paper: bool = False) -> str:
    """Markdown table (EM %, exact match after normalisation) with a line saying what produced it."""
    header, body = table2_rows(rows)
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in body]
    if with_paper:
        for name, avg in PAPER_AVERAGES.items():
            lines.append("| " + " | ".join([name, *["–"] * (len(header) - 2), f"{avg:.1f}"]) + " |")
    first = next(iter(rows.values()), {})
    lines.append("")
    lines.append(f"Exact match (%), retriever {first.get('retriever', '?')} top-{first.get('top_k', '?')}, "
                 f"corpus {first.get('corpus', '?')}; average is unweighted over the datasets shown.")
    return "\n".join(lines) + "\n"


def load_results(paths: list[str | Path]) -> dict[str, dict]:
    """results.json files (or directories holding one) -> {model row name: results}."""
    rows: dict[str, dict] = {}
    for p in paths:
        p = Path(p)
        path = p / "results.json" if p.is_dir() else p
        if not path.is_file():
            raise ValueError(f"{path}: results file not found")
        try:
            results = json.loads(path.read_text())
        except json.JSONDecodeError as exc:
            raise ValueError(f"{path}: not valid JSON ({exc.msg})") from None
        if "datasets" not in results or "average_em" not in results:
            raise ValueError(f"{path}: not an eval-qa results file (needs 'datasets' and 'average_em')")
        name = results.get("model") or path.parent.name
        if name in rows:
            name = f"{name} ({path.parent.name})"
        rows[name] = results
    return rows


def plot_table2(rows: dict[str, dict], path: str | Path) -> Path:
    """Grouped bars: EM per dataset (and the average), one colour per model."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cols = column_order(rows)
    labels = [_title(c) for c in cols] + ["Avg."]
    width = 0.8 / max(1, len(rows))
    fig, ax = plt.subplots(figsize=(1.2 * len(labels) + 2, 3.5))
    for i, (model, results) in enumerate(rows.items()):
        values = [100 * results["datasets"][c]["em"] if c in results["datasets"] else 0.0 for c in cols]
        values.append(100 * results["average_em"])
        ax.bar([x + i * width for x in range(len(labels))], values, width, label=model)
    ax.set_xticks([x + width * (len(rows) - 1) / 2 for x in range(len(labels))], labels)
    ax.set_ylabel("exact match (%)")
    ax.legend(fontsize="small")
    return _save(fig, path)


def plot_before_after(result: dict, by_kind: list[dict], path: str | Path, names=("SFT", "GRPO")) -> Path:
    """Paired bars, before and after, for all questions and for each kind; the title gives the paired
    difference, its s.e. and z (`star.qa.learn.compare`)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = [{"kind": "all", **result}, *by_kind]
    labels = [f"{r['kind'].replace('_', ' ')}\n[{r['questions']}]" for r in rows]
    fig, ax = plt.subplots(figsize=(1.1 * len(rows) + 2, 3.8))
    for i, (key, name) in enumerate((("em_before", names[0]), ("em_after", names[1]))):
        ax.bar([x + (i - 0.5) * 0.4 for x in range(len(rows))], [r[key] for r in rows], 0.4, label=name)
    ax.set_xticks(range(len(rows)), labels, fontsize="x-small", rotation=30, ha="right")
    ax.set_ylabel("held-out exact match")
    ax.set_ylim(0, 1.05)
    ax.set_title(f"{names[1]} - {names[0]} = {result['diff']:+.3f} EM, s.e. {result['diff_se']:.3f}, "
                 f"z = {result['z']:.1f} ({result['questions']} questions, paired seeds)", fontsize="small")
    ax.legend(fontsize="small")
    return _save(fig, path)


def _save(fig, path: str | Path) -> Path:
    """Write a figure as PNG (parent folders made) and free it."""
    import matplotlib.pyplot as plt

    fig.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path

