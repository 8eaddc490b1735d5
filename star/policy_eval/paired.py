"""Where a gain comes from: two evaluations of the same queries with the same seeds, compared episode by episode.

`star compare` reads two `eval-agent` outputs (e.g. the SFT and the RL model on the held-out queries),
pairs their episodes by (query, sample), re-scores every plan under both evaluator modes, and reports the
after-minus-before difference per query with its standard error and z (`stats.paired_difference`) for:
the training rewards, the evaluator's metrics, every commonsense and hard check, behaviour (tool calls,
policy tokens, how episodes ended), and the reward by difficulty level. A check's value is 1 when the
episode delivered a plan that passes it, else 0, so its difference counts plans that newly pass.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from star.agent.env import score_plan
from star.evaluation.audit import HACK_FLAGS, HACK_LABELS, hack_flags, is_complete
from star.evaluation.evaluator import MODES
from star.evaluation.rewards import REWARDS as REWARD_REGISTRY
from star.evaluation.rewards import compute_reward
from star.jsonl import atomic_write_text, read_jsonl
from star.plots import save_figure
from star.stats import paired_difference

# The paper's metrics; a comparison's headline row before them is the reward the model was trained on.
HEADLINE = ("delivered", "cs_micro", "cs_macro", "hard_micro", "hard_macro", "success")
BEHAVIOUR = ("tool_calls", "policy_tokens", "answer", "context_overflow", "call_budget", "format_error")
LABELS = {"delivered": "plan delivered", "cs_micro": "commonsense micro", "cs_macro": "commonsense macro",
          "hard_micro": "hard micro", "hard_macro": "hard macro", "success": "success",
          "tool_calls": "tool calls / episode", "policy_tokens": "policy tokens / episode",
          "answer": "ended with an answer", "context_overflow": "context full", "call_budget": "call budget spent",
          "format_error": "format error", "loophole": "loophole (official pass, strict fail)",
          "slot_credit": "slot credit (valid share of required slots)",
          "complete": "complete plan (every day, every required slot filled)",
          **{f"hack_{k}": f"plan: {v}" for k, v in HACK_LABELS.items()}}
# The reward-hacking audit per episode (strict reading): flags of the plan, its slot credit, and the
# reward the flagged plans earn (reward x flagged), so a rise in stub plans shows as a paired difference.
AUDIT = ("complete", *(f"hack_{k}" for k in (*HACK_FLAGS, "hacked")), "slot_credit")


@dataclass
class Episode:
    """One episode's values: metric name -> number (per mode where the evaluator decides it)."""

    query: str
    sample: int
    seed: int
    level: str
    values: dict[str, float]

    def record(self) -> dict:
        return {"id": self.query, "sample": self.sample, "seed": self.seed, **self.values}


def read_episodes(path: str | Path) -> list[dict]:
    """An eval-agent output directory (or its trajectories.jsonl) as records; a clear error when missing."""
    p = Path(path)
    f = p / "trajectories.jsonl" if p.is_dir() else p
    if not f.is_file():
        raise FileNotFoundError(f"no evaluation at {p}: expected an eval-agent output with trajectories.jsonl")
    return read_jsonl(f)


def episode_values(traj: dict, query: dict, db) -> Episode:
    """Every compared value of one episode; plans re-scored under both evaluator modes."""
    reason = traj.get("finish_reason", "")
    values: dict[str, float] = {}
    for mode in MODES:
        s = score_plan(query, traj.get("plan"), db, mode)
        for key in ("delivered", "cs_micro", "cs_macro", "hard_micro", "hard_macro", "success"):
            values[f"{mode}/{key}"] = float(s[key])
        for name in REWARD_REGISTRY:  # every registered reward: a new one is compared without listing it here
            values[f"{mode}/reward_{name}"] = compute_reward(name, s, reason)
        for box in ("commonsense", "hard"):
            for check, (ok, _) in s["checks"].get(box, {}).items():
                values[f"{mode}/{box}:{check}"] = float(ok is True)
        if mode == "strict":
            flags = hack_flags(s)
            values.update({f"hack_{k}": float(v) for k, v in flags.items()})
            values["complete"] = float(is_complete(s, flags))
            values["slot_credit"] = float(s.get("slot_credit", 0.0))
            for name in REWARD_REGISTRY:
                values[f"hacked_reward_{name}"] = values[f"strict/reward_{name}"] * flags["hacked"]
    values["loophole"] = float(values["official/success"] == 1 and values["strict/success"] == 0)
    values["tool_calls"] = float(traj.get("tool_calls", 0))
    values["policy_tokens"] = float(traj.get("n_policy_tokens", 0))
    for r in ("answer", "context_overflow", "call_budget", "format_error"):
        values[r] = float(reason == r)
    return Episode(str(traj["query_id"]), int(traj.get("sample", 0)), int(traj.get("seed", 0)),
                   str(traj.get("level") or query.get("level") or "?"), values)


def _checks_of(episodes: list[Episode], mode: str) -> set[str]:
    """The check keys any delivered plan was judged on (a check an episode lacks counts as not passed)."""
    return {k for e in episodes for k in e.values if k.startswith(f"{mode}/") and ":" in k}


def compare(before: list[dict], after: list[dict], queries: list[dict], db,
            names: tuple[str, str] = ("before", "after"), progress: bool = False, reward: str = "sum") -> dict:
    """The paired comparison as a JSON-ready dict: `rows` (one per value: before, after, diff, s.e., z, queries
    better / worse), grouped into headline (`reward` first: the one trained on) / the other rewards / checks /
    behaviour per mode, and `by_level`."""
    from tqdm.auto import tqdm

    if reward not in REWARD_REGISTRY:
        raise ValueError(f"unknown reward {reward!r}; registered: {', '.join(REWARD_REGISTRY)}")

    by_id = {str(q.get("id", q.get("idx", i))): q for i, q in enumerate(queries)}
    missing = sorted({str(t["query_id"]) for t in before + after} - set(by_id))
    if missing:
        raise ValueError(f"{len(missing)} evaluated queries are not in the query file (e.g. {missing[0]!r})")
    eps = {}
    for side, trajs in (("before", before), ("after", after)):
        eps[side] = [episode_values(t, by_id[str(t["query_id"])], db)
                     for t in tqdm(trajs, desc=f"scoring {side}", disable=not progress)]
    recs = {side: [e.record() for e in v] for side, v in eps.items()}

    def row(key: str, keep: Callable[[dict], bool] | None = None) -> dict:
        b = [r for r in recs["before"] if keep is None or keep(r)]
        a = [r for r in recs["after"] if keep is None or keep(r)]
        d = paired_difference(b, a, lambda r: r.get(key, 0.0))
        return {"key": key, **d}

    out: dict = {"names": list(names), "reward": reward, "queries": len({e.query for e in eps["before"]}),
                 "episodes": len(eps["before"]), "modes": {}}
    for mode in MODES:
        checks = sorted(_checks_of(eps["before"], mode) | _checks_of(eps["after"], mode))
        out["modes"][mode] = {
            "headline": [row(f"{mode}/{k}") for k in (f"reward_{reward}", *HEADLINE)],
            "rewards": [row(f"{mode}/reward_{n}") for n in REWARD_REGISTRY if n != reward],
            "checks": [row(k) for k in checks],
        }
    out["behaviour"] = [row(k) for k in BEHAVIOUR] + [row("loophole")]
    out["audit"] = [row(k) for k in AUDIT] + [row(f"hacked_reward_{n}") for n in REWARD_REGISTRY]
    levels = sorted({e.level for e in eps["before"]}, key=lambda lv: ("easy", "medium", "hard").index(lv)
                    if lv in ("easy", "medium", "hard") else 9)
    level_of = {e.query: e.level for e in eps["before"]}
    by_level = dict.fromkeys((f"reward_{reward}", "reward_sum", "reward_quality", "delivered", "success"))
    out["by_level"] = {lv: [row(f"{mode}/{k}", lambda r, lv=lv: level_of[r["id"]] == lv)
                            for mode in MODES for k in by_level]
                     for lv in levels}
    return out


def headline_row(result: dict, mode: str = "official", key: str | None = None) -> dict:
    """A headline row; by default the trained reward's (comparisons written before it was named: `sum`)."""
    key = key or f"reward_{result.get('reward', 'sum')}"
    return next(r for r in result["modes"][mode]["headline"] if r["key"] == f"{mode}/{key}")


def _label(key: str) -> str:
    base = key.split("/", 1)[-1]
    if ":" in base:
        box, check = base.split(":", 1)
        return f"{'cs' if box == 'commonsense' else 'hard'}: {check}"
    if base.startswith("reward_"):
        return f"reward ({base.removeprefix('reward_')})"
    if base.startswith("hacked_reward_"):
        return f"reward ({base.removeprefix('hacked_reward_')}) earned by incomplete plans"
    return LABELS.get(base, base)


def _fmt(x: float) -> str:
    if isinstance(x, float) and (math.isnan(x) or math.isinf(x)):
        return "—" if math.isnan(x) else ("+inf" if x > 0 else "-inf")
    return f"{x:.3f}"


def _table(rows: list[dict], names: list[str], with_mode: bool = False) -> list[str]:
    lines = [f"| | {names[0]} | {names[1]} | {names[1]} − {names[0]} | s.e. | z | queries better / worse |",
             "|---|---|---|---|---|---|---|"]
    for r in rows:
        # A table mixing both evaluators' rows (by level) names the mode, or its rows read as duplicates.
        label = f"{_label(r['key'])} ({r['key'].split('/', 1)[0]})" if with_mode else _label(r["key"])
        lines.append(f"| {label} | {_fmt(r['before'])} | {_fmt(r['after'])} | {r['diff']:+.3f} | "
                     f"{_fmt(r['diff_se'])} | {_fmt(r['z'])} | {r['queries_better']} / {r['queries_worse']} |")
    return lines


def render_markdown(result: dict) -> str:
    names = result["names"]
    h = headline_row(result)
    lines = [f"# {names[1]} vs {names[0]}: paired over {result['queries']} queries ({result['episodes']} episodes "
             "each, same seeds)", "",
             f"**{_label(h['key'])}: {names[1]} − {names[0]} = {h['diff']:+.3f} ± {_fmt(h['diff_se'])} (s.e.), "
             f"z = {_fmt(h['z'])}** (official evaluator). A difference is per query (mean over its samples); "
             "s.e. over queries; a check counts 1 when a delivered plan passes it.", ""]
    for mode in MODES:
        m = result["modes"][mode]
        lines += [f"## {mode} evaluator", "", *_table(m["headline"] + m["rewards"], names), "",
                  f"### constraints ({mode})", "", *_table(m["checks"], names), ""]
    lines += ["## behaviour", "", *_table(result["behaviour"], names), ""]
    if result.get("audit"):  # comparisons written before the audit existed have none
        lines += ["## reward-hacking audit (strict reading)", "",
                  "Per episode: 1 when the plan is delivered and is flagged (a plan that covers fewer days, leaves "
                  "required slots empty or passes a check only vacuously); the reward rows are the reward such "
                  "plans earn. A gain that rises here came from plans that are not plans.", "",
                  *_table(result["audit"], names), ""]
    lines += ["## by level", ""]
    for lv, rows in result["by_level"].items():
        lines += [f"### {lv} ({rows[0]['queries']} queries)", "", *_table(rows, names, with_mode=True), ""]
    return "\n".join(lines)


def plot(result: dict, path: str | Path, mode: str = "official") -> Path:
    """Paired differences with 95% intervals (±1.96 s.e.): headline metrics, checks, behaviour rates."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    m = result["modes"][mode]
    behaviour = [r for r in result["behaviour"] if r["key"] not in ("tool_calls", "policy_tokens")]
    panels = [("metrics", m["headline"] + m["rewards"]), ("constraints", m["checks"]),
              ("how episodes end", behaviour)]
    fig, axes = plt.subplots(1, 3, figsize=(16, 0.32 * max(len(p[1]) for p in panels) + 1.8))
    for ax, (title, rows) in zip(axes, panels):
        labels = [_label(r["key"]) for r in rows]
        diffs = [r["diff"] for r in rows]
        errs = [1.96 * (r["diff_se"] if r["diff_se"] == r["diff_se"] else 0.0) for r in rows]
        # Coloured by whether the interval excludes 0, not by sign: more format errors is no gain.
        colours = ["tab:gray" if d - e <= 0 <= d + e else "tab:blue" for d, e in zip(diffs, errs)]
        y = range(len(rows))
        ax.barh(list(y), diffs, xerr=errs, color=colours, alpha=0.8, capsize=2)
        ax.set_yticks(list(y), labels, fontsize=8)
        ax.invert_yaxis()
        ax.axvline(0, color="black", lw=0.8)
        ax.set_title(f"{title} ({mode})", fontsize=10)
        ax.set_xlabel(f"{result['names'][1]} − {result['names'][0]} (95% interval)", fontsize=8)
    h = headline_row(result, mode)
    fig.suptitle(f"{result['names'][1]} − {result['names'][0]} on {result['queries']} held-out queries: "
                 f"{_label(h['key'])} {h['diff']:+.3f} ± {h['diff_se']:.3f}, z {h['z']:.1f}", fontsize=11)
    fig.tight_layout()
    out = Path(path)
    save_figure(fig, out)  # written whole or not at all
    plt.close(fig)
    return out


def flat_metrics(result: dict) -> dict[str, float]:
    """The numbers a tracker logs: headline and behaviour diffs, s.e. and z (official and strict)."""
    out: dict[str, float] = {"queries": float(result["queries"])}
    rows = [*result["behaviour"], *result.get("audit", [])] + [r for mode in MODES for r in result["modes"][mode]["headline"]
                                     + result["modes"][mode]["rewards"]]
    for r in rows:
        key = r["key"].replace("/", ".")
        for field in ("before", "after", "diff", "diff_se", "z"):
            value = r[field]
            if isinstance(value, float) and math.isfinite(value):
                out[f"{key}.{field}"] = value
    return out


def write(result: dict, out_dir: str | Path) -> dict[str, Path]:
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    files = {"json": out / "compare.json", "md": out / "compare.md", "metrics": out / "metrics.json"}
    atomic_write_text(files["json"], json.dumps(result, indent=1, default=float) + "\n")
    atomic_write_text(files["md"], render_markdown(result) + "\n")
    atomic_write_text(files["metrics"], json.dumps(flat_metrics(result), indent=1) + "\n")
    files["png"] = plot(result, out / "compare.png")
    return files
