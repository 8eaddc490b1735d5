"""Synthesis pipeline: sample elements -> certify with the solver (+ evaluator) -> budget -> phrase -> check.

Every record carries the official query fields plus `id`, `source`, `level` and the
`reference_plan` that proves it solvable within its budget. Each query slot draws from its own
seeded RNG, so the pool is the same for any number of workers.
"""

from __future__ import annotations

import hashlib
import json
import random
from pathlib import Path
from typing import Callable, Iterable

from star.jsonl import read_jsonl
from star.sandbox.database import load_database
from star.sandbox.rows import Database
from star.synthesis.budget import draw_budget
from star.synthesis.config import LEVELS, SynthesisConfig, parse_ratio
from star.synthesis.elements import element_key, sample_elements
from star.synthesis.llm_backtranslate import LLMBackTranslator, phrase
from star.synthesis.roundtrip import mismatches, places_of
from star.synthesis.solver import solve

QUERY_FIELDS = ("org", "dest", "days", "visiting_city_number", "date", "people_number", "local_constraint",
                "budget", "query", "level")
PLAN_KEYS = ("days", "current_city", "transportation", "breakfast", "attraction", "lunch", "dinner", "accommodation")


class QueryFileError(ValueError):
    """A query file is missing or malformed; the message names the file and line."""


def level_counts(n: int, ratio: str | Iterable[float]) -> dict[str, int]:
    """Largest-remainder allocation of n slots to levels, so the ratio holds as closely as integers allow."""
    shares = parse_ratio(ratio if isinstance(ratio, str) else list(ratio))
    raw = [s * n for s in shares]
    counts = [int(x) for x in raw]
    for i in sorted(range(3), key=lambda i: raw[i] - counts[i], reverse=True)[: n - sum(counts)]:
        counts[i] += 1
    return dict(zip(LEVELS, counts))


def slot_levels(n: int, ratio: str, seed: int, day_choices: tuple[int, ...] = (3, 5, 7)) -> list[tuple[str, int]]:
    """(level, days) per slot: levels in ratio, trip lengths balanced within each level.

    Lengths are fixed per slot rather than drawn per attempt, because rejection would otherwise
    skew the pool towards the lengths that are feasible more often (5/7-day state trips).
    """
    slots = [(lv, day_choices[i % len(day_choices)]) for lv, c in level_counts(n, ratio).items() for i in range(c)]
    random.Random(f"levels:{seed}").shuffle(slots)
    return slots


def query_id(q: dict) -> str:
    return "syn-" + hashlib.sha1(json.dumps(element_key(q), default=str).encode()).hexdigest()[:12]


# -- certification ---------------------------------------------------------------------------------

def evaluator_available() -> bool:
    try:
        from star.evaluation.evaluator import evaluate_plan  # noqa: F401  # lazy: optional, with a fallback
    except ImportError:
        return False
    return True


def certify(db: Database, query: dict, plan: list[dict]) -> list[str]:
    """Failures of `plan` under the strict and the official evaluator (empty = certified).

    When the evaluation package is not installed, nothing beyond the solver's own rules is
    checked; `synthesize(stats=...)` reports which certification ran.
    """
    try:
        from star.evaluation.evaluator import evaluate_plan  # lazy: optional, its ImportError has a fallback
    except ImportError:
        return []
    problems = []
    for mode in ("official", "strict"):
        score = evaluate_plan(query, plan, db, mode=mode)
        if not score.success:
            failed = [f"{k}: {msg}" for box in (score.commonsense or {}, score.hard or {})
                      for k, (ok, msg) in box.items() if ok is False]
            problems.append(f"{mode} evaluator rejects the reference plan ({'; '.join(failed) or 'not delivered'})")
    return problems


_LLM: dict = {}


def _llm(cfg: SynthesisConfig) -> LLMBackTranslator | None:
    """One client per process and endpoint; None when LLM phrasing is off."""
    url = cfg.templates.llm_base_url
    if not url:
        return None
    key = (url, cfg.templates.llm_model)
    if key not in _LLM:
        _LLM[key] = LLMBackTranslator(cfg.templates)
    return _LLM[key]


# -- one query -----------------------------------------------------------------------------------

def make_query(db: Database, level: str, rng: random.Random, cfg: SynthesisConfig,
               days: int | None = None) -> tuple[dict | None, str]:
    """One attempt: a finished record, or None and the reason it was rejected."""
    el = sample_elements(db, level, rng, cfg.sampling, days=days)
    res = solve(db, el, None, cfg.solver)
    if not res.ok:
        return None, f"solver:{res.status}"
    el["budget"] = draw_budget(db, el, res.cost, rng, cfg.budget)
    text, how = phrase(el, rng, _llm(cfg), lambda t: mismatches(el, t, places_of(db)))
    if text is None:
        return None, "roundtrip"
    record = {k: el[k] for k in QUERY_FIELDS if k in el}
    record["query"] = text
    record = {"id": query_id(el), "source": cfg.source, **{k: record[k] for k in QUERY_FIELDS},
              "reference_plan": res.plan, "reference_cost": res.cost}
    if certify(db, record, res.plan):
        return None, "evaluator"
    return record, "ok"


def _slot(db: Database, slot: int, level: str, days: int, cfg: SynthesisConfig,
          taken: set, start: int = 0) -> tuple[dict, dict[str, int], int]:
    """The slot's first certified, not-yet-taken query from attempt `start` on: (record, rejections, attempt)."""
    rejects: dict[str, int] = {}
    for attempt in range(start, cfg.max_attempts_per_query):
        rng = random.Random(f"{cfg.seed}:{slot}:{attempt}")
        rec, why = make_query(db, level, rng, cfg, days)
        if rec is not None and element_key(rec) in taken:
            why, rec = "duplicate", None
        if rec is not None:
            return rec, rejects, attempt
        rejects[why] = rejects.get(why, 0) + 1
    raise RuntimeError(f"slot {slot} ({level}, {days} days): no certified query after {cfg.max_attempts_per_query} attempts "
                       f"(rejections: {rejects}); the database may not support this level")


_WORKER: dict = {}


def _worker_init(db_spec: str, cfg_json: str) -> None:
    _WORKER["db"] = load_database(db_spec)
    _WORKER["cfg"] = SynthesisConfig.model_validate_json(cfg_json)


def _worker_slot(args):
    slot, (level, days) = args
    return slot, *_slot(_WORKER["db"], slot, level, days, _WORKER["cfg"], set())


def synthesize(db: Database, n: int, seed: int | None = None, ratio: str | None = None,
               cfg: SynthesisConfig | None = None, progress: bool = False,
               on_record: Callable[[dict], None] | None = None, stats: dict | None = None) -> list[dict]:
    """`n` certified query records (DESIGN.md), levels in `ratio`, reproducible from `seed`.

    `seed` and `ratio` default to the config's (SynthesisConfig).
    """
    cfg = cfg or SynthesisConfig()
    seed = cfg.seed if seed is None else seed
    ratio = cfg.ratio if ratio is None else ratio
    parse_ratio(ratio)
    cfg = cfg.model_copy(update={"n": n, "seed": seed, "ratio": ratio})
    levels = slot_levels(n, ratio, seed, cfg.sampling.day_choices)
    from tqdm import tqdm

    out: list[dict | None] = [None] * n
    taken: set = set()
    rejects: dict[str, int] = {}
    bar = tqdm(total=n, desc="synthesize", unit="q", disable=not progress)

    def accept(slot: int, rec: dict, rj: dict) -> None:
        for k, v in rj.items():
            rejects[k] = rejects.get(k, 0) + v
        taken.add(element_key(rec))
        out[slot] = rec
        if on_record:
            on_record(rec)
        bar.update(1)

    if cfg.workers > 1 and n > 1 and not db.source.startswith("memory"):
        import multiprocessing as mp

        ctx = mp.get_context("fork" if "fork" in mp.get_all_start_methods() else "spawn")
        with ctx.Pool(cfg.workers, _worker_init, (db.source, cfg.model_dump_json())) as pool:
            # Workers cannot see each other's picks; duplicates are resolved here in slot order by
            # continuing the slot's own attempt sequence, exactly as the serial loop does.
            for slot, rec, rj, attempt in pool.imap(_worker_slot, list(enumerate(levels)), chunksize=8):
                if element_key(rec) in taken:
                    rj = dict(rj, duplicate=rj.get("duplicate", 0) + 1)
                    rec, more, _ = _slot(db, slot, *levels[slot], cfg, taken, start=attempt + 1)
                    rj = {k: rj.get(k, 0) + more.get(k, 0) for k in set(rj) | set(more)}
                accept(slot, rec, rj)
    else:
        for slot, (level, days) in enumerate(levels):
            rec, rj, _ = _slot(db, slot, level, days, cfg, taken)
            accept(slot, rec, rj)
    bar.close()
    llm = _llm(cfg)
    if stats is not None and llm is not None:  # in-process calls only; workers keep their own clients
        stats.update({"llm_calls": llm.calls, "llm_failures": llm.failures})
    if stats is not None:
        stats.update({"rejections": rejects, "accepted": n,
                      "certified_by": "solver+evaluator" if evaluator_available() else "solver"})
    return [r for r in out if r is not None]


# -- files -----------------------------------------------------------------------------------------

def read_query_file(path: str | Path) -> list[dict]:
    """Records of a query JSONL file; QueryFileError names the file and line of the first bad line."""
    return read_jsonl(path, QueryFileError)


def normalize(rec: dict, where: str = "") -> dict:
    """Official or synthetic query record -> our consistent shapes (date list, constraint dict, ints)."""
    import ast

    q = dict(rec)
    try:
        for key in ("date", "local_constraint"):
            v = q.get(key)
            if isinstance(v, str) and v.strip()[:1] in ("[", "{"):
                # the official CSV stores Python literals; never eval
                try:
                    q[key] = json.loads(v)
                except json.JSONDecodeError:
                    q[key] = ast.literal_eval(v)
            elif key == "date" and isinstance(v, str):
                q[key] = [v]
        lc = q.get("local_constraint") or {}
        if not isinstance(lc, dict):
            raise TypeError(f"local_constraint must be an object, got {type(lc).__name__}")
        q["local_constraint"] = {k: lc.get(k) for k in ("house rule", "cuisine", "room type", "transportation")}
        for key in ("days", "visiting_city_number", "people_number", "budget"):
            if q.get(key) is not None:
                q[key] = int(q[key])
    except (ValueError, SyntaxError, TypeError) as exc:
        raise QueryFileError(f"{where + ': ' if where else ''}malformed query field ({exc})") from None
    return q


def dataset_features():
    """Arrow schema of a query record: local_constraint values stored as str/list[str] with nulls."""
    from datasets import Features, List, Value

    day = {k: Value("string") for k in PLAN_KEYS}
    day["days"] = Value("int64")
    return Features({
        "id": Value("string"), "source": Value("string"),
        "org": Value("string"), "dest": Value("string"), "days": Value("int64"),
        "visiting_city_number": Value("int64"), "date": List(Value("string")), "people_number": Value("int64"),
        "local_constraint": {"house rule": Value("string"), "cuisine": List(Value("string")),
                             "room type": Value("string"), "transportation": Value("string")},
        "budget": Value("int64"), "query": Value("string"), "level": Value("string"),
        "reference_plan": List(day), "reference_cost": Value("float64"),
    })


def load_dataset(path: str | Path):
    """A query JSONL file as a `datasets.Dataset` with a fixed schema (no inference across mixed nulls)."""
    from datasets import Dataset

    feats = dataset_features()
    rows = [normalize(r, f"{path}:{i}") for i, r in enumerate(read_jsonl(path), 1)]
    rows = [{k: r.get(k) for k in feats} for r in rows]
    return Dataset.from_list(rows, features=feats)
