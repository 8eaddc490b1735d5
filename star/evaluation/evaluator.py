"""Scoring plans: one plan → PlanScore (every check's verdict and reason); many → aggregate metrics.

Flow per plan (reference §4.6): a plan is delivered iff it is truthy; the 8 commonsense checks
run on delivered plans; the 5 hard constraints run only when Complete Information and Within
Sandbox both pass (the gate), in both modes. In official mode, a plan on which the official
script would crash is recorded as failing every commonsense check with a message saying so
(`PlanScore.aborted`), instead of aborting the run.
"""

from __future__ import annotations

from dataclasses import dataclass

from star.evaluation import commonsense, hard
from star.evaluation.commonsense import COMMONSENSE_KEYS, OfficialAbort
from star.evaluation.config import SPLIT_DENOMINATORS
from star.evaluation.hard import HARD_KEYS, LOCAL_TO_HARD
from star.evaluation.lookup import Lookup
from star.evaluation.queries import QueryError, normalize_query
from star.evaluation.slots import CHECK_SLOTS, VACUOUS, plan_slots
from star.sandbox.rows import Database

MODES = ("official", "strict")
LEVELS = ("easy", "medium", "hard")
PAPER_NAMES = {
    "is_valid_information_in_sandbox": "Within Sandbox", "is_not_absent": "Complete Information",
    "is_valid_information_in_current_city": "Within Current City",
    "is_reasonable_visiting_city": "Reasonable City Route", "is_valid_restaurants": "Diverse Restaurants",
    "is_valid_attractions": "Diverse Attractions", "is_valid_transportation": "Non-conf. Transportation",
    "is_valid_accommodation": "Minimum Nights Stay", "valid_cost": "Budget", "valid_room_rule": "Room Rule",
    "valid_cuisine": "Cuisine", "valid_room_type": "Room Type", "valid_transportation": "Transportation",
}
ABORT_PREFIX = "the official evaluator would abort on this plan: "


@dataclass
class PlanScore:
    """Verdicts for one plan. Boxes map check key → (verdict, reason); hard verdict None = not asked."""

    delivered: bool
    commonsense: dict[str, tuple[bool, str | None]] | None
    hard: dict[str, tuple[bool | None, str | None]] | None
    mode: str = "strict"
    level: str | None = None
    n_hard: int = 1
    """Hard constraints this query asks for (budget + non-null local constraints)."""
    n_hard_official: int = 1
    """This query's share of the official hard denominator H (eval.py's counting rule)."""
    aborted: str | None = None
    """Official mode: why the official script would crash on this plan (None = it would not)."""
    cost: float | None = None
    """Total cost when the hard box was computed."""
    days_covered: int = 0
    """The query's days the plan fills (a day object with a current city), at most the query's days."""
    days_asked: int = 1
    """The query's days."""
    slot_credit: float = 0.0
    """Share of the slots the query requires (star.evaluation.slots) that the plan fills with a valid item."""
    slots_empty: int = 0
    """Required slots the plan leaves empty (every slot of an undelivered plan)."""
    slots_required: int = 0
    """Slots the query requires."""

    @property
    def cs_pass(self) -> int:
        return sum(1 for ok, _ in (self.commonsense or {}).values() if ok is True)

    @property
    def hard_pass(self) -> int:
        return sum(1 for ok, _ in (self.hard or {}).values() if ok is True)

    @property
    def cs_micro(self) -> float:
        return self.cs_pass / len(COMMONSENSE_KEYS)

    @property
    def cs_macro(self) -> bool:
        # Official: counted only when the hard box exists too (implied by all 8 passing).
        return bool(self.commonsense) and self.hard is not None and \
            all(ok is not False for ok, _ in self.commonsense.values())

    @property
    def coverage(self) -> float:
        """Share of the query's days the plan covers: a one-day stub of a 3-day trip covers 1/3."""
        return self.days_covered / max(self.days_asked, 1)

    @property
    def vacuous(self) -> list[str]:
        """Strict checks refused because the plan left out the slots they examine."""
        return [k for k, (ok, why) in (self.commonsense or {}).items() if ok is False and (why or "").startswith(VACUOUS)]

    @property
    def hard_micro(self) -> float:
        return self.hard_pass / max(self.n_hard, 1)

    @property
    def hard_macro(self) -> bool:
        return self.hard is not None and all(ok is not False for ok, _ in self.hard.values())

    @property
    def success(self) -> bool:
        return self.cs_macro and self.hard_macro

    def to_dict(self) -> dict:
        box = lambda b: None if b is None else {k: {"pass": v, "reason": m} for k, (v, m) in b.items()}  # noqa: E731
        return {"delivered": self.delivered, "mode": self.mode, "level": self.level,
                "commonsense": box(self.commonsense), "hard": box(self.hard), "aborted": self.aborted,
                "cost": self.cost, "cs_micro": self.cs_micro, "cs_macro": self.cs_macro,
                "hard_micro": self.hard_micro, "hard_macro": self.hard_macro, "success": self.success,
                "coverage": self.coverage, "slot_credit": self.slot_credit, "slots_empty": self.slots_empty,
                "vacuous": self.vacuous}


def hard_counts(query: dict) -> tuple[int, int]:
    """(applicable hard constraints, the query's share of the official H).

    Official H counts every query's budget, a medium query's house rule / cuisine / room type and a
    hard query's four local constraints when not None; easy queries' local constraints never.
    """
    lc = query.get("local_constraint") or {}
    applicable = 1 + sum(1 for k in LOCAL_TO_HARD if lc.get(k) is not None)
    level = query.get("level")
    counted = {"medium": ("house rule", "cuisine", "room type"),
               "hard": ("house rule", "cuisine", "room type", "transportation")}.get(level, ())
    return applicable, 1 + sum(1 for k in counted if lc.get(k) is not None)


def days_covered(plan, n: int) -> int:
    """How many of the first `n` plan days are objects naming a current city (one reading in both modes:
    it measures the plan's extent for the reward, not a check of the official script)."""
    if not isinstance(plan, list):
        return 0
    return sum(1 for d in plan[:n] if isinstance(d, dict) and isinstance(d.get("current_city"), str)
               and d["current_city"].strip() not in ("", "-", commonsense.NOT_NEEDED))


def _strict_days(plan: list, n: int) -> list[dict]:
    """Strict mode reads non-object days as empty ones (never crashes)."""
    return [d if isinstance(d, dict) else {} for d in plan[:n]]


def evaluate_plan(query: dict, plan, db: Database, mode: str = "strict", *, lookup: Lookup | None = None) -> PlanScore:
    """Every commonsense and hard verdict for one plan (`mode`: 'official' or 'strict')."""
    if mode not in MODES:
        raise ValueError(f"unknown evaluator mode {mode!r}; expected one of {MODES}")
    missing = [k for k in ("org", "dest", "days", "budget") if k not in query]
    if missing:
        raise QueryError(f"query is missing the field(s) {missing}: cannot evaluate a plan against it")
    if not isinstance(query.get("local_constraint"), dict) or "visiting_city_number" not in query \
            or isinstance(query.get("date"), str):
        query = normalize_query(query)  # raw official record (literal strings, missing defaults)
    lk = lookup or Lookup.for_db(db)
    strict = mode == "strict"
    n_hard, n_hard_official = hard_counts(query)
    score = PlanScore(delivered=bool(plan), commonsense=None, hard=None, mode=mode, level=query.get("level"),
                      n_hard=n_hard, n_hard_official=n_hard_official, days_asked=int(query["days"]))
    slots = plan_slots(query, plan, lk)  # an undelivered plan fills none of them
    score.slots_required, score.slot_credit, score.slots_empty = slots.n_required, slots.credit, slots.empty()
    if not plan:
        return score
    score.days_covered = days_covered(plan, score.days_asked)
    if not isinstance(plan, list):
        if not strict:
            return _aborted(score, f"the plan is a {type(plan).__name__}, not a list of days")
        plan = []
    days = _strict_days(plan, query["days"]) if strict else plan[: query["days"]]
    try:
        if strict and not days:
            box = {k: (False, "The plan has no days.") for k in COMMONSENSE_KEYS}
        else:
            box = {k: commonsense.CHECKS[k](query, days, lk, strict) for k in COMMONSENSE_KEYS}
            if strict:
                box = _refuse_vacuous(box, slots)
        score.commonsense = box
        if box["is_not_absent"][0] and box["is_valid_information_in_sandbox"][0]:
            score.hard = {k: hard.CHECKS[k](query, days, lk, strict) for k in HARD_KEYS}
            score.cost = hard.total_cost(query, days, lk, strict)
    except OfficialAbort as exc:
        if strict:  # a strict check must never depend on the official crash paths
            raise RuntimeError(f"strict evaluator hit an official-only crash path: {exc}") from exc
        return _aborted(score, str(exc))
    except (TypeError, AttributeError, KeyError, IndexError) as exc:
        if strict:
            raise
        # Official mode mirrors the official control flow, so a type error on an odd value (a
        # number where text is expected, …) happens where the official script would raise too.
        return _aborted(score, f"{type(exc).__name__}: {exc}")
    return score


def _refuse_vacuous(box: dict, slots) -> dict:
    """Strict mode: a check that passed while the slots it examines are missing did not check them."""
    out = dict(box)
    for key, category in CHECK_SLOTS.items():
        missing = slots.empty(category)
        if out[key][0] is True and missing:
            out[key] = (False, f"{VACUOUS}{missing} of the {slots.required[category]} {category} slots the "
                               f"query requires are empty.")
    return out


def _aborted(score: PlanScore, why: str) -> PlanScore:
    msg = ABORT_PREFIX + why
    score.commonsense = {k: (False, msg) for k in COMMONSENSE_KEYS}
    score.hard = None
    score.aborted = why
    return score


def plan_cost(query: dict, plan: list[dict], db: Database, mode: str = "strict") -> float:
    """The plan's total cost under `mode`'s lookup rules (reference §4.5)."""
    if not plan:
        return 0.0
    strict = mode == "strict"
    days = _strict_days(plan, query["days"]) if strict else plan[: query["days"]]
    return hard.total_cost(query, days, Lookup.for_db(db), strict)


# -- aggregation ---------------------------------------------------------------------------------

def _rates(scores: list[PlanScore], denominators: tuple[int, int, int] | None, official_h: bool) -> dict:
    n = len(scores)
    if denominators is None:
        h = sum(s.n_hard_official if official_h else s.n_hard for s in scores)
        denominators = (n, len(COMMONSENSE_KEYS) * n, h)
    n_den, cs_den, h_den = denominators
    div = lambda a, b: a / b if b else 0.0  # noqa: E731
    return {
        "n": n,
        "delivery_rate": div(sum(s.delivered for s in scores), n_den),
        "commonsense_micro": div(sum(s.cs_pass for s in scores), cs_den),
        "commonsense_macro": div(sum(s.cs_macro for s in scores), n_den),
        "hard_micro": div(sum(s.hard_pass for s in scores), h_den),
        "hard_macro": div(sum(s.hard_macro for s in scores), n_den),
        "success_rate": div(sum(s.success for s in scores), n_den),
    }


def aggregate(scores: list[PlanScore], split: str = "own") -> dict:
    """Pooled metrics: micro rates pool passes over all plans; undelivered / gated plans count as
    failures. `split='own'` divides by the plans given; a split name uses the official fixed
    N / 8N / H (reference §4.7). Adds per-level rates, per-check pass rates and abort counts."""
    if split != "own" and split not in SPLIT_DENOMINATORS:
        raise ValueError(f"unknown split {split!r}; expected 'own' or one of {sorted(SPLIT_DENOMINATORS)}")
    official_h = bool(scores) and all(s.mode == "official" for s in scores)
    out = _rates(scores, SPLIT_DENOMINATORS.get(split), official_h)
    out["mode"] = scores[0].mode if scores and len({s.mode for s in scores}) == 1 else "mixed"
    out["split"] = split
    out["aborted"] = sum(1 for s in scores if s.aborted)
    out["per_level"] = {lvl: _rates(group, None, official_h)
                        for lvl in sorted({s.level or "unknown" for s in scores},
                                          key=lambda v: (LEVELS.index(v) if v in LEVELS else len(LEVELS), v))
                        if (group := [s for s in scores if (s.level or "unknown") == lvl])}
    checks = {}
    for key in (*COMMONSENSE_KEYS, *HARD_KEYS):
        which = "commonsense" if key in COMMONSENSE_KEYS else "hard"
        verdicts = [b[key][0] for b in (getattr(s, which) for s in scores) if b and key in b]
        applicable = [v for v in verdicts if v is not None]
        checks[key] = {"name": PAPER_NAMES[key], "pass": sum(v is True for v in applicable),
                       "fail": sum(v is False for v in applicable)}
    out["checks"] = checks
    return out
