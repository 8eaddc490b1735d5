"""Configuration of the synthesis stage: sampling, solving, budgets, phrasing, splitting.

One place per default; `star/config.py` composes these from params/.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from star.evaluation.queries import parse_ratio

LEVELS = ("easy", "medium", "hard")


def ratio_text(value: object) -> str:
    """A ratio from params ([4, 3, 3], the form that survives DVC's YAML writer) or a CLI ('4:3:3') as
    'easy:medium:hard' text. A bare number is what YAML 1.1 makes of an unquoted 4:3:3 (base 60)."""
    if isinstance(value, (list, tuple)):
        parse_ratio(list(value))
        return ":".join(f"{v:g}" if isinstance(v, float) else str(v) for v in value)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        raise ValueError(f"level ratio {value!r} is a number: an unquoted 4:3:3 reads as base 60 in YAML 1.1; "
                         "write the ratio as a list, e.g. [4, 3, 3]")
    if not isinstance(value, str):
        raise ValueError(f"level ratio {value!r}: expected a list like [4, 3, 3] or text like '4:3:3'")
    parse_ratio(value)
    return value


class SamplingConfig(BaseModel):
    model_config = ConfigDict(use_attribute_docstrings=True, extra="forbid")

    month: str = "2022-03"
    """Year-month the consecutive travel dates are drawn from (the benchmark uses March 2022)."""
    day_choices: tuple[Literal[3, 5, 7], ...] = Field((3, 5, 7), min_length=1)
    """Trip lengths drawn uniformly; 3 days visit one city, 5 two and 7 three cities of a state."""
    min_state_cities: int = 4
    """A multi-city destination state needs at least this many cities (reference §5: more than 3)."""
    hard_type_probs: tuple[float, float, float, float] = (0.3, 0.1, 0.3, 0.3)
    """Draw weights of house rule, cuisine, room type, transportation for hard queries (reference §5)."""
    hard_n_types: int = 3
    """Distinct constraint types a hard query carries."""
    medium_cuisines: int = 2
    """Cuisines a medium cuisine constraint names."""
    hard_cuisines: int = 4
    """Cuisines a hard cuisine constraint names."""
    reach_share_weights: tuple[float, float, float, float, float] | None = (9, 4, 3, 3, 131)
    """Multi-city (origin, state) draws follow these weights over the reach-share bins [0, .2), [.2, .4), [.4, .6),
    [.6, .8), [.8, 1]: the share of the state's cities the origin reaches by a drive under a day or a flight.
    The defaults are the 150 official train + validation multi-city queries on the official database (most
    origins reach nearly every city); None: the original generator's draws, whatever their reach."""
    cities: tuple[str, ...] | None = Field(None, min_length=2)
    """Draw origins (and a 3-day trip's destination) among these database cities only; None: every city. A
    handful of cities is a data shape a tiny model learns in minutes (the smoke profile)."""


class SolverConfig(BaseModel):
    model_config = ConfigDict(use_attribute_docstrings=True, extra="forbid")

    max_nodes: int = 2_000_000
    """Safety cap on branch-and-bound nodes per query; hitting it reports status 'limit', never a guess."""
    travel_day_meals: bool = True
    """Allow optional meals on travel days when a cuisine constraint needs them (keeps the search complete)."""


class BudgetConfig(BaseModel):
    model_config = ConfigDict(use_attribute_docstrings=True, extra="forbid")

    round_to: int = 100
    """Budgets are rounded to this many dollars (the benchmark's r100)."""
    medium_factor: float = 0.75
    """Per-person multiplier for medium budgets (reference §5 table)."""
    hard_factor: float = 0.5
    """Per-person multiplier for hard budgets (reference §5 table)."""
    max_over_min: float | None = None
    """Formula method: cap budgets at this multiple of the certified minimum cost (None: the formula only)."""
    method: Literal["ratio", "formula"] = "ratio"
    """ratio: certified minimum cost x a ratio drawn from the official budget / cheapest-plan quantiles of the
    query's level and length; formula: the original generator's estimator (much looser on the official
    database; the data-difficulty ablation's `loose_budget` level)."""
    ratio_quantiles: dict[str, tuple[float, ...]] = {
        "easy-3": (1.09, 1.13, 1.2, 1.56, 1.77, 1.99, 2.34, 2.54, 3.06, 3.72, 5.26),
        "easy-5": (1.79, 3.02, 3.83, 4.47, 5.6, 6.52, 6.83, 7.07, 7.72, 8.0, 9.55),
        "easy-7": (1.26, 1.63, 3.03, 3.67, 4.96, 5.63, 6.29, 6.85, 7.42, 9.09, 10.6),
        "medium-3": (1.05, 1.16, 1.42, 1.67, 2.17, 2.84, 3.29, 3.72, 4.07, 5.13, 7.32),
        "medium-5": (1.53, 2.52, 3.21, 3.43, 4.49, 4.95, 5.4, 5.96, 6.38, 7.06, 11.3),
        "medium-7": (1.59, 2.68, 3.1, 3.99, 4.92, 5.68, 6.68, 7.16, 7.47, 8.36, 10.2),
        "hard-3": (1.0, 1.03, 1.11, 1.13, 1.18, 1.23, 1.28, 1.32, 1.45, 1.65, 3.28),
        "hard-5": (1.33, 1.65, 1.97, 2.07, 2.45, 2.98, 3.25, 3.67, 3.98, 4.38, 5.44),
        "hard-7": (1.57, 1.89, 1.97, 2.04, 2.08, 2.38, 3.57, 4.36, 4.66, 4.89, 6.54)}
    """Ratio method: per `level-days`, the 0%, 10%, ..., 100% quantiles of official budget / cheapest plan (the
    180 validation queries solved on the official database, 20 per cell; hard-3's minimum 0.93, query #132's,
    is kept at 1); a draw interpolates linearly between them."""

    @field_validator("ratio_quantiles")
    @classmethod
    def _check_quantiles(cls, v: dict[str, tuple[float, ...]]) -> dict[str, tuple[float, ...]]:
        missing = [f"{lv}-{d}" for lv in LEVELS for d in (3, 5, 7) if f"{lv}-{d}" not in v]
        if missing:
            raise ValueError(f"ratio_quantiles lacks the key(s) {missing} (level-days)")
        for key, q in v.items():
            if len(q) < 2 or any(x <= 0 for x in q) or any(a > b for a, b in zip(q, q[1:])):
                raise ValueError(f"ratio_quantiles[{key!r}] = {list(q)}: need at least 2 positive, non-decreasing values")
        return v


class TemplateConfig(BaseModel):
    model_config = ConfigDict(use_attribute_docstrings=True, extra="forbid")

    llm_base_url: str | None = None
    """OpenAI-compatible endpoint (e.g. http://127.0.0.1:8000/v1) for LLM back-translation; None = templates only."""
    llm_model: str = "gpt-oss-120b"
    """Model name sent to the endpoint."""
    llm_timeout_s: float = 30.0
    """Per-request timeout; on timeout or a failed round trip the template engine is used."""
    llm_temperature: float = 0.8
    """Sampling temperature of the back-translator (diversity of phrasing)."""


class SynthesisConfig(BaseModel):
    model_config = ConfigDict(use_attribute_docstrings=True, extra="forbid")

    n: int = 2000
    """Number of certified queries to produce."""
    seed: int = 0
    """Seed of every random draw (sampling, phrasing); same seed, same pool."""
    ratio: str = "4:3:3"
    """Easy:medium:hard proportions of the pool ([4, 3, 3] in params; '4:3:3' on a command line)."""
    max_attempts_per_query: int = 200
    """Resampling attempts for one query slot before the stage gives up with an error."""
    source: str = "synthetic"
    """Value of the `source` field of each record."""
    workers: int = 1
    """Processes certifying candidates in parallel (1 = in process)."""
    sampling: SamplingConfig = Field(default_factory=SamplingConfig)
    """Element sampling rules."""
    solver: SolverConfig = Field(default_factory=SolverConfig)
    """Feasibility solver limits."""
    budget: BudgetConfig = Field(default_factory=BudgetConfig)
    """Budget estimation."""
    templates: TemplateConfig = Field(default_factory=TemplateConfig)
    """Back-translation."""

    @field_validator("ratio", mode="before")
    @classmethod
    def _check_ratio(cls, v: object) -> str:
        return ratio_text(v)


class SplitConfig(BaseModel):
    model_config = ConfigDict(use_attribute_docstrings=True, extra="forbid")

    rl_size: int = 1000
    """Queries in the RL training set."""
    val_size: int = 200
    """Queries in the synthetic validation set."""
    ratio: str = "4:3:3"
    """Easy:medium:hard proportions of the RL and validation sets ([4, 3, 3] in params)."""
    seed: int = 0
    """Seed of the shuffle that assigns queries to splits."""

    @field_validator("ratio", mode="before")
    @classmethod
    def _check_ratio(cls, v: object) -> str:
        return ratio_text(v)
