"""Synthetic-query fidelity: are synthetic queries as hard as the real ones, and their budgets as tight?

Two comparisons, both on plain numbers so they can be computed from any teacher run:
- success of one agent (the built-in teacher) on real vs synthetic queries, by level and by
  (days, cities); a group agrees when the rates are within `tolerance` (absolute, 5 points);
- budget / cheapest-plan ratio quantiles by level, real vs synthetic; a quantile agrees when it is
  within `tolerance` (relative, 10%).
The paper's own check: 200 synthetic queries gave its teacher 21.9% vs 21.1% on the validation set.
"""

from __future__ import annotations

from collections.abc import Sequence

LEVEL_ORDER = ("easy", "medium", "hard")
QUANTILES = (0.25, 0.5, 0.75)


def group_keys(query: dict) -> list[str]:
    """The groups a query counts in: its level, its (days, cities) shape, and `all`."""
    days, cities = int(query["days"]), int(query.get("visiting_city_number") or 1)
    return [str(query.get("level") or "unknown"), f"{days}d/{cities}c", "all"]


def _order(key: str) -> tuple:
    if key in LEVEL_ORDER:
        return (0, LEVEL_ORDER.index(key), key)
    return (2, 0, key) if key == "all" else (1, 0, key)


def success_by_group(queries: Sequence[dict], successes: Sequence[float]) -> dict[str, tuple[int, float]]:
    """group -> (episodes, success rate); `successes[i]` is query i's outcome (0/1, or a mean over samples)."""
    if len(queries) != len(successes):
        raise ValueError(f"{len(queries)} queries but {len(successes)} outcomes: they pair one to one")
    groups: dict[str, list[float]] = {}
    for q, s in zip(queries, successes):
        for key in group_keys(q):
            groups.setdefault(key, []).append(float(s))
    return {k: (len(v), sum(v) / len(v)) for k, v in sorted(groups.items(), key=lambda kv: _order(kv[0]))}


def success_rows(real: dict[str, tuple[int, float]], synthetic: dict[str, tuple[int, float]],
                 tolerance: float = 0.05) -> list[dict]:
    """One row per group present in both: n and rate of each, the difference (synthetic - real) and whether
    it is within `tolerance`."""
    rows = []
    for key in sorted(set(real) & set(synthetic), key=_order):
        (nr, r), (ns, s) = real[key], synthetic[key]
        rows.append({"group": key, "real_n": nr, "real": r, "synthetic_n": ns, "synthetic": s, "diff": s - r,
                     "within": abs(s - r) <= tolerance + 1e-12})
    return rows


def budget_ratios(queries: Sequence[dict], cheapest: Sequence[float | None]) -> dict[str, list[float]]:
    """level -> budget / cheapest-plan cost of its queries (queries without a plan are left out)."""
    if len(queries) != len(cheapest):
        raise ValueError(f"{len(queries)} queries but {len(cheapest)} costs: they pair one to one")
    out: dict[str, list[float]] = {}
    for q, cost in zip(queries, cheapest):
        if cost:
            out.setdefault(str(q.get("level") or "unknown"), []).append(float(q["budget"]) / float(cost))
    return {k: out[k] for k in sorted(out, key=_order)}


def quantiles(values: Sequence[float], probs: Sequence[float] = QUANTILES) -> list[float]:
    """Linear-interpolation quantiles (numpy's default), at least one value needed."""
    if not values:
        raise ValueError("no values to take quantiles of")
    v = sorted(values)
    out = []
    for p in probs:
        x = p * (len(v) - 1)
        i = int(x)
        out.append(v[i] if i + 1 >= len(v) else v[i] + (x - i) * (v[i + 1] - v[i]))
    return out


def budget_rows(real: dict[str, list[float]], synthetic: dict[str, list[float]], tolerance: float = 0.10,
                probs: Sequence[float] = QUANTILES) -> list[dict]:
    """Per level in both: the ratio quantiles of each and whether every synthetic one is within `tolerance`
    (relative) of the real one."""
    rows = []
    for level in sorted(set(real) & set(synthetic), key=_order):
        qr, qs = quantiles(real[level], probs), quantiles(synthetic[level], probs)
        rel = [s / r - 1 for r, s in zip(qr, qs)]
        rows.append({"level": level, "real_n": len(real[level]), "synthetic_n": len(synthetic[level]),
                     "real": qr, "synthetic": qs, "relative": rel,
                     "within": all(abs(x) <= tolerance + 1e-12 for x in rel)})
    return rows


def _comparison_table(head: list[str], keys, first_cell, rows_by_set: dict[str, dict], cell) -> str:
    """Markdown: a row per key, its real cell, then each synthetic set's cell ("—" where the set lacks it)."""
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for key in keys:
        cells = [key, first_cell(key)] + ["—" if (r := rows.get(key)) is None else cell(r)
                                          for rows in rows_by_set.values()]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def success_table(real: dict[str, tuple[int, float]], synthetic: dict[str, dict[str, tuple[int, float]]],
                  tolerance: float = 0.05) -> str:
    """Markdown: a row per group, the real rate (n), then per synthetic set its rate (n), the difference in
    points and ok / OUT for within / outside `tolerance`."""
    per = {name: {r["group"]: r for r in success_rows(real, syn, tolerance)} for name, syn in synthetic.items()}
    return _comparison_table(
        ["group", "real"] + [f"{name} (diff)" for name in synthetic], sorted(real, key=_order),
        lambda key: f"{100 * real[key][1]:.1f}% ({real[key][0]})", per,
        lambda r: f"{100 * r['synthetic']:.1f}% ({r['synthetic_n']}) {100 * r['diff']:+.1f} "
                  f"{'ok' if r['within'] else 'OUT'}")


def budget_table(real: dict[str, list[float]], synthetic: dict[str, dict[str, list[float]]],
                 tolerance: float = 0.10, probs: Sequence[float] = QUANTILES) -> str:
    """Markdown: per level, the real ratio quantiles (n), then per synthetic set its quantiles, ok / OUT and
    each quantile's relative difference."""
    fmt = lambda qs: " / ".join(f"{x:.2f}" for x in qs)  # noqa: E731
    per = {name: {r["level"]: r for r in budget_rows(real, syn, tolerance, probs)} for name, syn in synthetic.items()}
    return _comparison_table(
        ["level", "real " + "/".join(f"q{int(100 * p)}" for p in probs)] + list(synthetic), list(real),
        lambda level: f"{fmt(quantiles(real[level], probs))} ({len(real[level])})", per,
        lambda r: f"{fmt(r['synthetic'])} ({'ok' if r['within'] else 'OUT'}: "
                  f"{', '.join(f'{100 * x:+.0f}%' for x in r['relative'])})")
