"""The project's own QA set and corpus: an encyclopedia written from a sandbox world's facts.

Every city, state, restaurant, attraction and accommodation of the database becomes one
Wikipedia-style passage (title + a few sentences); questions are sampled from the same facts,
single-hop ("In which city is the restaurant X?") and two-hop bridge questions in the HotpotQA
style ("In which state is the restaurant X?" needs the restaurant's city, then the city's state).
Each question records the passages that support it, so retrieval recall is measurable.
Records use the FlashRAG layout Search-R1 read (`id, question, golden_answers, metadata`).
"""

from __future__ import annotations

import random
from collections import Counter
from pathlib import Path

from star.qa.config import BuiltinDataConfig
from star.qa.corpus import Passage, load_corpus, write_corpus, write_jsonl
from star.sandbox.database import load_database

BUILTIN_NAME = "world"
"""Dataset name of the built-in QA set in the loader registry."""

__all__ = ["BUILTIN_NAME", "BuiltinDataConfig", "build_encyclopedia", "build_questions", "write_builtin"]


def _join(items: list[str]) -> str:
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1]


def _num(value: float) -> str:
    """3.0 -> '3', 4.5 -> '4.5' (how people write the number, and how the question expects it)."""
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


def build_encyclopedia(db) -> list[Passage]:
    """One passage per city, state, restaurant, attraction and accommodation of `db`, in table order."""
    # Entity passages name their city but not its state, so a state question about a restaurant
    # or attraction is a genuine two-hop question (the city passage holds the state).
    passages: list[Passage] = []
    states = db.city_states
    for state, cities in db.state_cities.items():
        passages.append(Passage(f"state:{state}", state,
                                f"{state} is a state of the United States. Its cities in the travel database are "
                                f"{_join(cities)}."))
    for city, state in states.items():
        attractions = [a.name for a in db.attractions_by_city.get(city, [])[:4]]
        restaurants = db.restaurants_by_city.get(city, [])
        stays = db.accommodations_by_city.get(city, [])
        text = f"{city} is a city in the state of {state}."
        if attractions:
            text += f" Places to visit in {city} include {_join(attractions)}."
        text += (f" The travel database lists {len(restaurants)} restaurants and {len(stays)} places to stay"
                 f" in {city}.")
        passages.append(Passage(f"city:{city}", city, text))
    # Titles are disambiguated the Wikipedia way when a name repeats (chains, common names).
    rest_names = Counter(r.name for r in db.restaurants)
    for i, r in enumerate(db.restaurants):
        title = r.name if rest_names[r.name] == 1 else f"{r.name} ({r.city})"
        passages.append(Passage(
            f"restaurant:{i}", title,
            f"{r.name} is a restaurant in {r.city}. It serves {r.cuisines} cuisine. A meal there costs "
            f"{_num(r.avg_cost)} dollars per person on average, and the restaurant holds an aggregate rating of "
            f"{_num(r.rating)}."))
    attr_names = Counter(a.name for a in db.attractions)
    for i, a in enumerate(db.attractions):
        title = a.name if attr_names[a.name] == 1 else f"{a.name} ({a.city})"
        passages.append(Passage(
            f"attraction:{i}", title,
            f"{a.name} is a tourist attraction in {a.city}. Its address is {a.address}. "
            f"Its phone number is {a.phone} and its website is {a.website}."))
    acc_names = Counter(a.name for a in db.accommodations)
    for i, a in enumerate(db.accommodations):
        title = a.name if acc_names[a.name] == 1 else f"{a.name} ({a.city})"
        nights = _num(a.minimum_nights)
        passages.append(Passage(
            f"accommodation:{i}", title,
            f"{a.name} is a place to stay in {a.city}, offered as {a.room_type.lower()}. It costs "
            f"{_num(a.price)} dollars per night with a minimum stay of {nights} "
            f"{'night' if nights == '1' else 'nights'}, accommodates at most {a.maximum_occupancy} guests and has "
            f"a review rating of {_num(a.review_rate)}. House rules: {a.house_rules}."))
    return passages


ROOM_TYPE_ANSWERS = {
    "Entire home/apt": ["Entire home/apt", "entire home", "entire apartment", "entire home or apartment"],
    "Private room": ["Private room"],
    "Shared room": ["Shared room"],
}


def _question_makers(db):
    """Each maker draws one question of its kind (or None when the world has no candidate)."""
    states = db.city_states
    cities = [c for c in states]
    rest_names = Counter(r.name for r in db.restaurants)
    rest_pairs = Counter((r.name, r.city) for r in db.restaurants)
    attr_names = Counter(a.name for a in db.attractions)
    acc_pairs = Counter((a.name, a.city) for a in db.accommodations)
    unique_rest = [i for i, r in enumerate(db.restaurants) if rest_names[r.name] == 1 and r.city in states]
    pair_rest = [i for i, r in enumerate(db.restaurants) if rest_pairs[(r.name, r.city)] == 1]
    unique_attr = [i for i, a in enumerate(db.attractions) if attr_names[a.name] == 1 and a.city in states]
    pair_acc = [i for i, a in enumerate(db.accommodations) if acc_pairs[(a.name, a.city)] == 1]
    # Bridge questions only where the entity's own passage does not give the state away
    # ("Discovery Center of Idaho"): otherwise they would be single-hop in disguise.
    bridge_rest = [i for i in unique_rest
                   if states[db.restaurants[i].city].lower() not in db.restaurants[i].name.lower()]
    bridge_attr = [i for i in unique_attr
                   if states[db.attractions[i].city].lower() not in
                   f"{db.attractions[i].name} {db.attractions[i].address} {db.attractions[i].website}".lower()]

    def city_state(rng):
        city = rng.choice(cities)
        return (f"Which state is the city of {city} in?", [states[city]], [f"city:{city}"])

    def restaurant_city(rng):
        i = rng.choice(unique_rest)
        r = db.restaurants[i]
        return (f"In which city is the restaurant {r.name} located?", [r.city], [f"restaurant:{i}"])

    def restaurant_cost(rng):
        i = rng.choice(pair_rest)
        r = db.restaurants[i]
        cost = _num(r.avg_cost)
        return (f"How much does a meal cost per person on average at {r.name} in {r.city}?",
                [cost, f"${cost}", f"{cost} dollars"], [f"restaurant:{i}"])

    def restaurant_rating(rng):
        i = rng.choice(pair_rest)
        r = db.restaurants[i]
        return (f"What aggregate rating does the restaurant {r.name} in {r.city} hold?", [_num(r.rating)],
                [f"restaurant:{i}"])

    def attraction_city(rng):
        i = rng.choice(unique_attr)
        a = db.attractions[i]
        return (f"In which city is the attraction {a.name}?", [a.city], [f"attraction:{i}"])

    def attraction_phone(rng):
        i = rng.choice(unique_attr)
        a = db.attractions[i]
        return (f"What is the phone number of {a.name}?", [a.phone], [f"attraction:{i}"])

    def accommodation_guests(rng):
        i = rng.choice(pair_acc)
        a = db.accommodations[i]
        n = str(a.maximum_occupancy)
        return (f"At most how many guests can stay at {a.name} in {a.city}?", [n, f"{n} guests"],
                [f"accommodation:{i}"])

    def accommodation_room(rng):
        i = rng.choice(pair_acc)
        a = db.accommodations[i]
        return (f"What kind of room is offered at {a.name} in {a.city}?",
                list(ROOM_TYPE_ANSWERS.get(a.room_type, [a.room_type])), [f"accommodation:{i}"])

    def restaurant_state(rng):  # bridge: restaurant -> city -> state
        i = rng.choice(bridge_rest)
        r = db.restaurants[i]
        return (f"In which state is the restaurant {r.name} located?", [states[r.city]],
                [f"restaurant:{i}", f"city:{r.city}"])

    def attraction_state(rng):  # bridge: attraction -> city -> state
        i = rng.choice(bridge_attr)
        a = db.attractions[i]
        return (f"In which state is the attraction {a.name}?", [states[a.city]],
                [f"attraction:{i}", f"city:{a.city}"])

    makers = {"city_state": (city_state, cities), "restaurant_city": (restaurant_city, unique_rest),
              "restaurant_cost": (restaurant_cost, pair_rest), "restaurant_rating": (restaurant_rating, pair_rest),
              "attraction_city": (attraction_city, unique_attr), "attraction_phone": (attraction_phone, unique_attr),
              "accommodation_guests": (accommodation_guests, pair_acc),
              "accommodation_room": (accommodation_room, pair_acc),
              "restaurant_state": (restaurant_state, bridge_rest), "attraction_state": (attraction_state, bridge_attr)}
    return {kind: fn for kind, (fn, pool) in makers.items() if pool}


TWO_HOP = {"restaurant_state", "attraction_state"}


def build_questions(db, n: int = BuiltinDataConfig().questions, seed: int = BuiltinDataConfig().seed) -> list[dict]:
    """`n` distinct questions, the kinds in rotation, deterministic in `seed`."""
    rng = random.Random(seed)
    makers = _question_makers(db)
    kinds = list(makers)
    out: list[dict] = []
    seen: set[str] = set()
    attempts = 0
    while len(out) < n and attempts < 50 * n:
        kind = kinds[attempts % len(kinds)]
        attempts += 1
        question, answers, support = makers[kind](rng)
        if question in seen:
            continue
        seen.add(question)
        out.append({"id": f"{BUILTIN_NAME}-{len(out):05d}", "question": question, "golden_answers": answers,
                    "metadata": {"type": kind, "hops": 2 if kind in TWO_HOP else 1, "supporting_ids": support}})
    return out


def write_builtin(out_dir: str | Path, config: BuiltinDataConfig | None = None) -> dict[str, Path]:
    """Write `corpus.jsonl` (wiki-18 layout) and `world.jsonl` (the QA set, FlashRAG layout) into `out_dir`."""
    config = config or BuiltinDataConfig()
    db = load_database(config.db)
    out_dir = Path(out_dir)
    corpus = write_corpus(out_dir / "corpus.jsonl", build_encyclopedia(db))
    questions = write_jsonl(out_dir / f"{BUILTIN_NAME}.jsonl", build_questions(db, config.questions, config.seed))
    return {"corpus": corpus, "questions": questions}


def resolve_corpus(spec: str, default_db: str | None = None) -> list[Passage]:
    """`builtin` / `builtin:DB` (DB = `generated[:SEED]` or a database dir) or a corpus file path.

    Plain `builtin` uses `default_db` (the built-in QA set's database), else BuiltinDataConfig's."""
    if spec == "builtin" or spec.startswith("builtin:"):
        db_spec = spec.partition(":")[2] or default_db or BuiltinDataConfig().db
        return build_encyclopedia(load_database(db_spec))
    return load_corpus(spec)
