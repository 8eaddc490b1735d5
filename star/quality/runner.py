"""Run a suite with Great Expectations (1.x: ephemeral context -> pandas asset -> whole-frame batch)
and turn the result into a report people can act on: which expectation, how many rows, examples.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from star.jsonl import read_jsonl
from star.quality.config import DEFAULTS
from star.quality.suites import Expect, eval_suite, queries_suite, trajectories_suite


@dataclass
class Failure:
    check: str
    expectation: str
    column: str | None
    unexpected: int | None
    total: int | None
    examples: list[str] = field(default_factory=list)
    error: str | None = None


@dataclass
class SuiteReport:
    name: str
    rows: int
    evaluated: int
    failures: list[Failure]

    @property
    def success(self) -> bool:
        return not self.failures

    def to_dict(self) -> dict:
        return {"suite": self.name, "rows": self.rows, "expectations": self.evaluated, "success": self.success,
                "failures": [f.__dict__ for f in self.failures]}

    def format(self, max_examples: int = 5) -> str:
        head = f"data-quality suite '{self.name}': {self.rows} rows, {self.evaluated} expectations, "
        if self.success:
            return head + "all passed"
        lines = [head + f"{len(self.failures)} FAILED"]
        for f in self.failures:
            where = f" [{f.column}]" if f.column else ""
            count = f" — {f.unexpected} of {f.total} rows" if f.unexpected is not None else ""
            lines.append(f"  ✗ {f.check}{where} ({f.expectation}){count}")
            if f.error:
                lines.append(f"      error: {f.error}")
            for e in f.examples[:max_examples]:
                lines.append(f"      e.g. {e}")
        return "\n".join(lines)


_CTX: dict = {}


def _context():
    """One ephemeral GX context per process (creating one costs more than a whole validation)."""
    if "ctx" in _CTX:
        return _CTX["ctx"]
    import great_expectations as gx

    ctx = gx.get_context(mode="ephemeral")
    try:  # GX draws a progress bar per validation; our stages print their own
        from great_expectations.data_context.types.base import ProgressBarsConfig

        ctx.variables.progress_bars = ProgressBarsConfig(globally=False)
    except Exception:  # noqa: BLE001 - cosmetic only
        pass
    _CTX["ctx"] = ctx
    _CTX["source"] = ctx.data_sources.add_pandas("star_quality")
    return ctx


def run_suite(name: str, df: pd.DataFrame, expectations: list[Expect]) -> SuiteReport:
    """Validate `df` against `expectations` with GX and collect the failures."""
    import great_expectations as gx

    ctx = _context()
    _CTX["runs"] = run_id = _CTX.get("runs", 0) + 1
    uid = f"{name}_{run_id}"  # names are unique within the shared context
    asset = _CTX["source"].add_dataframe_asset(name=uid)
    batch_def = asset.add_batch_definition_whole_dataframe(f"{uid}_all")
    suite = gx.ExpectationSuite(name=f"{uid}_suite")
    for e in expectations:
        cls = getattr(gx.expectations, e.kind)
        suite.add_expectation(cls(**e.kwargs, meta={"check": e.check, **e.meta}))
    suite = ctx.suites.add(suite)
    vd = ctx.validation_definitions.add(gx.ValidationDefinition(name=f"{uid}_validation", data=batch_def,
                                                                suite=suite))
    label = ["row_label"] if "row_label" in df.columns else []
    fmt = {"result_format": "COMPLETE", "unexpected_index_column_names": label} if label else "SUMMARY"
    if df.empty:  # GX cannot validate a frame with no columns; an empty file is itself the failure
        return SuiteReport(name, 0, len(expectations), [Failure("the file has at least one record", "-", None,
                                                                None, None)])
    res = vd.run(batch_parameters={"dataframe": df}, result_format=fmt)
    failures = []
    for r in res.results:
        if r.success:
            continue
        cfg = r.expectation_config
        result = r.result or {}
        examples = []
        for item in (result.get("unexpected_index_list") or [])[:10]:
            if isinstance(item, dict):
                lab = item.get("row_label", "?")
                vals = {k: v for k, v in item.items() if k != "row_label"}
                examples.append(f"{lab}: " + ", ".join(f"{k}={_short(v)}" for k, v in vals.items()))
        if not examples:
            examples = [_short(v) for v in (result.get("partial_unexpected_list") or [])[:10]]
        err = None
        if r.exception_info and r.exception_info.get("raised_exception"):
            err = (r.exception_info.get("exception_message") or "").splitlines()[0][:300]
        failures.append(Failure(cfg.meta.get("check", cfg.type), cfg.type, cfg.kwargs.get("column"),
                                result.get("unexpected_count"), result.get("element_count"), examples, err))
    return SuiteReport(name, len(df), len(expectations), failures)


def _short(v, n: int = 80) -> str:
    s = v if isinstance(v, str) else json.dumps(v, default=str)
    return s if len(s) <= n else s[: n - 1] + "…"


# -- the three kinds, from files -----------------------------------------------------------------------

KINDS = ("queries", "trajectories", "eval")


def read_records(path: str | Path) -> list[dict]:
    return read_jsonl(path)


def check_queries(records: list[dict], against: list[dict] | None = None, ratio: str | None = DEFAULTS.ratio,
                  tolerance: float = DEFAULTS.tolerance, min_rows_for_ratio: int = DEFAULTS.min_rows_for_ratio
                  ) -> SuiteReport:
    return run_suite("queries", *queries_suite(records, against, ratio, tolerance, min_rows_for_ratio))


def check_trajectories(records: list[dict], against: list[dict] | None = None,
                       tool_budget: int = DEFAULTS.tool_budget,
                       require_success: bool = DEFAULTS.require_success) -> SuiteReport:
    return run_suite("trajectories", *trajectories_suite(records, against, tool_budget, require_success))


def check_eval(obj) -> SuiteReport:
    return run_suite("eval", *eval_suite(obj))


def read_eval(path: str | Path):
    """A metrics JSON document, or JSONL of metrics dicts."""
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"{path}: file not found")
    text = path.read_text(encoding="utf-8")
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return read_records(path)


def check_file(kind: str, path: str | Path, against: list[str | Path] | None = None, **opts) -> SuiteReport:
    if kind not in KINDS:
        raise ValueError(f"unknown data kind {kind!r}; expected one of {KINDS}")
    if kind == "eval":
        return check_eval(read_eval(path))
    other = [r for p in against or [] for r in read_records(p)] or None
    records = read_records(path)
    if kind == "queries":
        return check_queries(records, other, **opts)
    return check_trajectories(records, other, **opts)
