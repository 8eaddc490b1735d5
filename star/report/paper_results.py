"""The STAR paper's published numbers (spec/star-recipe.md §6), as data the report puts beside ours.

Every row is a setting (scale, stage, reward, algorithm, RL data size, difficulty) and its metrics
in percent on the TravelPlanner *test* set (1,000 queries). A variant of ours "matches" a row when
every key of the row's setting equals the variant's; the report then shows both numbers.
"""

from __future__ import annotations

from dataclasses import dataclass, field

METRICS = ("cs_micro", "cs_macro", "hard_micro", "hard_macro", "success")
SCALES = ("1.5B", "3B", "7B")
EVAL_SET = "TravelPlanner test (1,000 queries)"


@dataclass(frozen=True)
class PaperRow:
    table: str                 # "1", "3", "4", "9", "ood"
    setting: dict[str, object]
    metrics: dict[str, float]  # percent
    extra: dict[str, float] = field(default_factory=dict)


def _t1(scale: str, stage: str, reward: str | None, success: float, full: tuple | None = None) -> PaperRow:
    setting: dict[str, object] = {"scale": scale, "stage": stage}
    if reward:
        setting.update(reward=reward, algorithm="grpo", data_size=1000, difficulty="mixed")
    metrics = dict(zip(METRICS, full)) if full else {"success": success}
    return PaperRow("1", setting, metrics)


ROWS: list[PaperRow] = [
    # Table 1: success by reward and scale (full rows where the paper prints them).
    _t1("1.5B", "base", None, 0.0), _t1("1.5B", "sft", None, 6.9),
    _t1("1.5B", "rl", "sum", 33.1, (95.1, 71.6, 51.4, 33.4, 33.1)),
    _t1("1.5B", "rl", "macro", 30.1), _t1("1.5B", "rl", "success", 33.8),
    _t1("1.5B", "rl", "curriculum", 34.9, (93.9, 70.2, 51.0, 35.4, 34.9)),
    _t1("3B", "base", None, 0.0), _t1("3B", "sft", None, 12.2),
    _t1("3B", "rl", "sum", 47.0, (97.6, 82.5, 64.8, 47.6, 47.0)),
    _t1("3B", "rl", "macro", 48.2, (95.1, 79.6, 68.8, 52.3, 48.2)),
    _t1("3B", "rl", "success", 46.6),
    _t1("3B", "rl", "curriculum", 49.9, (95.3, 83.0, 67.6, 51.0, 49.9)),
    _t1("7B", "base", None, 0.1), _t1("7B", "sft", None, 19.7),
    _t1("7B", "rl", "sum", 62.8, (96.9, 87.4, 78.7, 66.5, 62.8)),
    _t1("7B", "rl", "macro", 58.9, (97.0, 89.8, 77.3, 60.0, 58.9)),
    _t1("7B", "rl", "success", 60.9), _t1("7B", "rl", "curriculum", 57.0),
]

# Table 3: RL data quantity, 3B + curriculum, equal gradient steps (in-domain success; OOD average).
for size, success, ood in [(100, 37.5, 33.8), (200, None, 33.4), (500, None, 33.6), (1000, 49.9, 35.0),
                           (2000, 50.8, 32.2)]:
    metrics = {"success": success} if success is not None else {}
    ROWS.append(PaperRow("3", {"scale": "3B", "stage": "rl", "reward": "curriculum", "algorithm": "grpo",
                               "data_size": size, "difficulty": "mixed"}, metrics, {"ood_average": ood}))

# Table 4: RL data difficulty, 3B + curriculum, 1K queries.
for difficulty, success in [("easy", 45.3), ("medium", 41.1), ("hard", 25.9), ("mixed", 49.9)]:
    ROWS.append(PaperRow("4", {"scale": "3B", "stage": "rl", "reward": "curriculum", "algorithm": "grpo",
                               "data_size": 1000, "difficulty": difficulty}, {"success": success}))

# Table 9: algorithms (success; minutes per step; GPU hours). 1.5B and 3B with macro, 7B with sum.
for scale, reward, rows in [("1.5B", "macro", {"grpo": (30.1, 8.0, 164), "dapo": (36.9, 8.2, 183),
                                               "arpo": (37.5, 9.5, 195)}),
                            ("3B", "macro", {"grpo": (48.2, 8.6, 176), "dapo": (45.6, 8.9, 184),
                                             "arpo": (47.5, 13.3, 273)}),
                            ("7B", "sum", {"grpo": (62.8, 9.0, 368), "dapo": (58.4, 9.5, 390),
                                           "arpo": (58.3, 13.3, 547)})]:
    for algorithm, (success, minutes, gpu_hours) in rows.items():
        ROWS.append(PaperRow("9", {"scale": scale, "stage": "rl", "reward": reward, "algorithm": algorithm,
                                   "data_size": 1000, "difficulty": "mixed"}, {"success": success},
                             {"minutes_per_step": minutes, "gpu_hours": gpu_hours}))

# Out-of-domain average over the 7 QA sets.
for stage, reward, value in [("sft", None, 41.9), ("rl", "sum", 36.7), ("rl", "macro", 42.9)]:
    setting: dict[str, object] = {"scale": "7B", "stage": stage}
    if reward:
        setting.update(reward=reward, algorithm="grpo", data_size=1000, difficulty="mixed")
    ROWS.append(PaperRow("ood", setting, {}, {"ood_average": value}))
SEARCH_R1_OOD_AVERAGE = 38.5

ENV_FAILURE_FINDING = "3B + macro: success stable up to 5% tool failures during training, clear drop at 10%"
RECIPE = {"1.5B": "ARPO + mixed-difficulty 1K", "3B": "GRPO + curriculum reward", "7B": "GRPO + sum reward"}
TABLE_TITLES = {
    "1": "Table 1 — success by reward and scale",
    "3": "Table 3 — RL data quantity (3B, curriculum, equal gradient steps)",
    "4": "Table 4 — RL data difficulty (3B, curriculum, 1K queries)",
    "9": "Table 9 — RL algorithm",
    "env_failure": "Environment failure rate during RL (3B, macro)",
    "ood": "Out-of-domain QA average",
}

_PROFILE_SCALE = {"paper-1.5b": "1.5B", "paper-3b": "3B", "paper-7b": "7B"}
_RATIO_DIFFICULTY = {(1.0, 0.0, 0.0): "easy", (0.0, 1.0, 0.0): "medium", (0.0, 0.0, 1.0): "hard",
                     (0.4, 0.3, 0.3): "mixed"}


def setting_of(values: dict, stage: str = "rl") -> dict[str, object]:
    """The paper-comparable setting of a resolved config (star.config.ResolvedConfig.values)."""
    model = values.get("model") or {}
    rl = values.get("rl") or {}
    split = values.get("split") or {}
    scale = _PROFILE_SCALE.get(str(model.get("profile")), str(model.get("profile")))
    setting: dict[str, object] = {"scale": scale, "stage": stage}
    if stage == "rl":
        ratio = str(split.get("ratio", "4:3:3"))
        try:
            parts = [float(p) for p in ratio.split(":")]
            shares = tuple(round(p / sum(parts), 2) for p in parts)
        except (ValueError, ZeroDivisionError):
            shares = ()
        setting.update(reward=rl.get("reward"), algorithm=rl.get("algorithm"), data_size=split.get("rl_size"),
                       difficulty=_RATIO_DIFFICULTY.get(shares, ratio))
        if float(rl.get("env_failure_rate") or 0.0) > 0:
            setting["env_failure_rate"] = rl.get("env_failure_rate")
    return setting


def matches(setting: dict[str, object], table: str | None = None) -> list[PaperRow]:
    """Paper rows whose every setting key equals ours (and, if given, from that table)."""
    out = []
    for row in ROWS:
        if table is not None and row.table != table:
            continue
        if set(setting) - set(row.setting):
            continue  # we vary something the paper did not (e.g. tool failures): no match
        if all(setting.get(k) == v for k, v in row.setting.items()):
            out.append(row)
    return out


def paper_success(setting: dict[str, object], table: str | None = None) -> float | None:
    for row in matches(setting, table):
        if "success" in row.metrics:
            return row.metrics["success"]
    return None
