"""Optional LLM back-translation through an OpenAI-compatible chat endpoint, templates as fallback.

The model sees the element JSON (without level, as the original generator did) and a few
examples; its text must pass the round-trip check, otherwise the template engine phrases the
query. Any HTTP or decoding problem is a fallback, never a crash.
"""

from __future__ import annotations

import json
import os
import random

from star.synthesis.config import TemplateConfig
from star.synthesis.templates import render_query

SYSTEM = ("You turn structured travel requests into one natural, fluent user query for a travel-planning "
          "assistant. Mention every field exactly: origin, destination (for 5 or 7 days, the number of cities "
          "to visit in that state), number of days, exact dates, number of people, the budget in dollars, and "
          "every non-null constraint. A house rule means the accommodation must allow it; a transportation "
          "value says what to avoid. Reply with the query only.")
EXAMPLES = [
    ({"org": "Washington", "dest": "Myrtle Beach", "days": 3, "visiting_city_number": 1,
      "date": ["2022-03-13", "2022-03-14", "2022-03-15"], "people_number": 1,
      "local_constraint": {"house rule": None, "cuisine": None, "room type": None, "transportation": None},
      "budget": 1400},
     "Please create a travel plan for me departing from Washington and heading to Myrtle Beach for a 3-day trip "
     "from March 13th to March 15th, 2022. Can you keep this journey within a budget of $1,400?"),
    ({"org": "Evansville", "dest": "Texas", "days": 5, "visiting_city_number": 2,
      "date": ["2022-03-12", "2022-03-13", "2022-03-14", "2022-03-15", "2022-03-16"], "people_number": 4,
      "local_constraint": {"house rule": "parties", "cuisine": None, "room type": "entire room",
                           "transportation": "no flight"}, "budget": 9500},
     "Can you help design a 5-day travel plan for a group of 4, starting from Evansville and visiting 2 cities in "
     "Texas from March 12th to March 16th, 2022? Our budget is $9,500. We require entire rooms that allow "
     "parties, and we would like to avoid flights."),
]


def _payload(elements: dict, cfg: TemplateConfig) -> dict:
    shown = {k: v for k, v in elements.items() if k not in ("level", "query", "reference_plan", "reference_cost",
                                                            "id", "source")}
    messages = [{"role": "system", "content": SYSTEM}]
    for el, text in EXAMPLES:
        messages += [{"role": "user", "content": json.dumps(el)}, {"role": "assistant", "content": text}]
    messages.append({"role": "user", "content": json.dumps(shown)})
    return {"model": cfg.llm_model, "messages": messages, "temperature": cfg.llm_temperature, "max_tokens": 300}


class LLMBackTranslator:
    """Phrase queries with an LLM; `translate` returns None when the endpoint or its text is unusable."""

    def __init__(self, cfg: TemplateConfig):
        if not cfg.llm_base_url:
            raise ValueError("LLM back-translation needs templates.llm_base_url (an OpenAI-compatible /v1 URL)")
        import httpx

        self.cfg = cfg
        headers = {}
        if os.environ.get("OPENAI_API_KEY"):
            headers["Authorization"] = f"Bearer {os.environ['OPENAI_API_KEY']}"
        self.client = httpx.Client(base_url=cfg.llm_base_url.rstrip("/"), timeout=cfg.llm_timeout_s, headers=headers)
        self.failures = 0
        self.calls = 0

    def translate(self, elements: dict) -> str | None:
        import httpx

        self.calls += 1
        try:
            resp = self.client.post("/chat/completions", json=_payload(elements, self.cfg))
            resp.raise_for_status()
            text = resp.json()["choices"][0]["message"]["content"]
        except (httpx.HTTPError, KeyError, IndexError, TypeError, ValueError):
            self.failures += 1
            return None
        text = " ".join(str(text or "").split()).strip().strip('"')
        return text or None

    def close(self) -> None:
        self.client.close()


def phrase(elements: dict, rng: random.Random, llm: LLMBackTranslator | None, check) -> tuple[str | None, str]:
    """(text, how): the LLM's text if it round-trips, else a template that does, else (None, 'roundtrip')."""
    if llm is not None:
        text = llm.translate(elements)
        if text and not check(text):
            return text, "llm"
    for _ in range(3):
        text = render_query(elements, rng)
        if not check(text):
            return text, "template"
    return None, "roundtrip"
