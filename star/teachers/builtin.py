"""The built-in teacher: a rule-based agent that plays the ReAct protocol for real, no LLM needed.

It works like a careful human agent: looks up the cities of the destination state, searches
accommodations, restaurants and attractions city by city (in a seeded, varying order), prunes
cities where nothing fits the group, checks flights and driving/taxi options for the legs of
the route it settles on, and then writes the plan with the exact solver — run only over the
rows it actually observed (a Database built from its tool results). It makes the mistakes
agents make (a misspelt city, a wrongly formatted date, a repeated search) and recovers from
the error observations. Its trajectories fail naturally when what it chose to look at holds no
plan within budget, when injected tool failures outlast its retries, or when it runs out of
calls.
"""

from __future__ import annotations

import itertools
import math
import random
import time

from star.agent.config import AGENT_DEFAULTS, AgentConfig
from star.teachers.config import BuiltinTeacherConfig
from star.agent.env import TravelPlannerEnv
from star.agent.trajectory import Trajectory
from star.agent.turns import render_answer, render_tool_call
from star.evaluation.plan import format_plan_text
from star.sandbox.rows import Accommodation, Attraction, Database, Distance, Flight, Restaurant
from star.sandbox.tools import ToolResult
from star.synthesis import solver as solver_mod
from star.synthesis.solver import ROOM_TYPE_MATCH, solve

ROOM_WORDS = {"shared room": "a shared room", "not shared room": "a room that is not shared",
              "private room": "a private room", "entire room": "an entire home/apt"}


class _EpisodeOver(Exception):
    """The env ended the episode (call budget) while the teacher was still searching."""


class Observed:
    """Everything the teacher has seen so far, as typed rows."""

    def __init__(self):
        self.cities: list[str] = []
        self.flights: dict[tuple, Flight] = {}
        self.restaurants: dict[str, list[Restaurant]] = {}
        self.attractions: dict[str, list[Attraction]] = {}
        self.accommodations: dict[str, list[Accommodation]] = {}
        self.distances: dict[tuple[str, str], Distance] = {}

    def database(self, db: Database, org: str, dest: str, multi: bool) -> Database:
        """A Database of the observed rows only (same class as the real one), for the solver."""
        states = {c: (dest if multi else db.city_states.get(c, "")) for c in self.cities}
        states.setdefault(org, db.city_states.get(org, ""))
        flights = list(self.flights.values())
        return Database(
            city_states=states, city_set=list(states), state_set=[dest] if multi else [],
            flights=flights,
            restaurants=[r for rows in self.restaurants.values() for r in rows],
            attractions=[a for rows in self.attractions.values() for a in rows],
            accommodations=[a for rows in self.accommodations.values() for a in rows],
            distance_rows=list(self.distances.values()), source="observed")


def _typo(city: str, rng: random.Random) -> str:
    """A plausible misspelling: swap two neighbouring letters, drop one, or lower-case it all."""
    letters = [i for i, ch in enumerate(city) if ch.isalpha()]
    kind = rng.randrange(3)
    if kind == 0 and len(letters) >= 3:
        i = rng.choice(letters[1:-1])
        if city[i + 1:i + 2].isalpha() and city[i] != city[i + 1]:
            return city[:i] + city[i + 1] + city[i] + city[i + 2:]
    if kind == 1 and len(letters) >= 4:
        i = rng.choice(letters[1:])
        return city[:i] + city[i + 1:]
    return city.lower() if city.lower() != city else city + "e"


def _money(x: float) -> str:
    return f"${x:,.0f}"


class BuiltinTeacher:
    """`run(query, query_id, sample, seed) -> Trajectory`; deterministic for a seed."""

    name = "builtin-teacher"

    def __init__(self, db: Database, agent_config: AgentConfig = AGENT_DEFAULTS,
                 config: BuiltinTeacherConfig | None = None, tokenizer=None):
        self.db, self.agent_config = db, agent_config
        self.config = config or BuiltinTeacherConfig()
        self.tokenizer = tokenizer  # optional: counts tokens of the chat for reports

    # -- protocol helpers -------------------------------------------------------------------------
    @property
    def _inline(self) -> bool:
        return self.config.layout == "inline"

    def _think(self, text: str, action: str) -> str:
        """The turn's reasoning: as written, or (think=brief) a fixed phrase naming the action, which a
        model trained from scratch can learn in minutes (restating the query is where tiny models break).
        think=route writes the trip's two ends once, first: every later call that names the origin or the
        destination then copies them from that fixed phrase, not from wherever the query's wording put them."""
        if self.config.think == "reasoned":
            return text
        if self.config.think == "route" and not self._history and not self.env.tool_calls:
            return f"{self._route[0]} to {self._route[1]}. Next: {action}."
        return f"Next: {action}."

    def _call(self, tool: str, args: dict, think: str) -> ToolResult:
        if self.env.tool_calls >= self.agent_config.tool_budget:
            raise _EpisodeOver()
        _, _, done, info = self.env.step(render_tool_call(tool, args, self._think(think, tool), self._inline))
        if done:
            raise _EpisodeOver()
        result: ToolResult = info["result"]
        self._history.append((tool, args))
        return result

    def _call_retrying(self, tool: str, args: dict, think: str) -> ToolResult | None:
        """Call, and retry while the tool is 'not available'; None if it never came back."""
        if (tool, args) in self._history and tool in ("SearchFlight", "GoogleDistanceMatrix"):
            return None  # a careful agent remembers a leg it already searched on an earlier route (rows kept in self.seen)
        result = self._call(tool, args, think)
        for attempt in range(self.config.retries):
            if result.error != "unavailable":
                return result
            result = self._call(tool, args, f"{tool} was not available just now. I will try the same search again.")
        return None if result.error == "unavailable" else result

    def _maybe_redundant(self) -> None:
        if self._history and self.rng.random() < self.config.p_redundant and self._calls_left() > 8:
            tool, args = self.rng.choice(self._history)
            what = ", ".join(f"{v}" for v in args.values())
            self._call(tool, dict(args), f"Let me double-check the {tool} results for {what} before going on.")

    def _no_loss_on_last_call(self) -> None:
        """Mark the last assistant turn `train: false`: SFT learns the recovery after it, not the mistake."""
        turn = next(m for m in reversed(self.env.messages) if m["role"] == "assistant")
        turn["train"] = False

    def _calls_left(self) -> int:
        return self.agent_config.tool_budget - self.env.tool_calls

    def _city_search(self, tool: str, city: str, think: str) -> ToolResult | None:
        if self.rng.random() < self.config.p_typo:
            wrong = _typo(city, self.rng)
            if wrong != city:
                res = self._call(tool, {"city": wrong}, think)
                if res.ok:
                    return res
                think = f"The tool did not accept '{wrong}'. The city is spelt '{city}'; searching again."
        return self._call_retrying(tool, {"city": city}, think)

    # -- the episode ------------------------------------------------------------------------------
    def run(self, query: dict, query_id: str = "0", sample: int = 0, seed: int = 0) -> Trajectory:
        started = time.perf_counter()
        self.rng = random.Random(seed)
        self.env = TravelPlannerEnv(self.db, self.agent_config, seed=seed)
        self.env.reset(query)
        self._history: list[tuple[str, dict]] = []
        self._route = (query["org"], query["dest"])
        self.seen = Observed()
        self._reach: dict[str, bool] = {}  # city -> whether the origin reaches it (only probed cities)
        try:
            self._play(query)
        except _EpisodeOver:
            if not self.env.done:  # out of calls: one more call makes the env record call_budget
                self.env.step(render_tool_call("SearchCity", {"state": query["dest"]},
                                               "I still need more information.", self._inline))
        env = self.env
        fe = env.format_error
        n_tokens = self._count_tokens(env.messages)
        return Trajectory(
            query_id=query_id, messages=list(env.messages), finish_reason=env.finish_reason, level=query.get("level"),
            sample=sample, seed=seed, plan=env.plan, answer=env.answer, scores=env.scores, tool_calls=env.tool_calls,
            tool_errors=env.tool_errors, format_error=fe.error if fe else None, format_detail=fe.detail if fe else None,
            n_tokens=n_tokens, n_policy_tokens=self._count_tokens([m for m in env.messages if m["role"] == "assistant"]),
            agent=self.name, elapsed_s=round(time.perf_counter() - started, 4))

    def _count_tokens(self, messages: list[dict]) -> int:
        if self.tokenizer is not None:
            return sum(len(self.tokenizer(m["content"], add_special_tokens=False)["input_ids"]) for m in messages)
        # No tokenizer given: ~4 characters per token (BPE tokenizers on English text).
        return sum(math.ceil(len(m["content"]) / 4) for m in messages)

    def _play(self, q: dict) -> None:
        org, dest, days = q["org"], q["dest"], int(q["days"])
        k = int(q.get("visiting_city_number") or {3: 1, 5: 2, 7: 3}.get(days, 1))
        dates, people = list(q["date"]), int(q.get("people_number") or 1)
        lc = q.get("local_constraint") or {}
        multi = days > 3 or k > 1
        rng = self.rng

        # 1. Which cities?
        if multi:
            res = self._call_retrying("SearchCity", {"state": dest},
                                      f"The trip goes from {org} to {k} cities in {dest} over {days} days "
                                      f"({dates[0]} to {dates[-1]}) for {people} "
                                      f"{'person' if people == 1 else 'people'}. First I list the cities of {dest}.")
            cities = [c for c in (res.rows if res is not None and res.ok else ()) if c != org]
            if not cities:
                return self._give_up(q, f"I could not get the cities of {dest}.")
            self.seen.cities.extend(cities)
            rng.shuffle(cities)
            if self.config.reach_probes > 0:
                cities = self._reachable_first(q, cities, k, max(k, self.config.max_cities))
            cities = cities[: max(k, self.config.max_cities)]
            intro = f"{dest} has {len(res.rows)} cities. I will check {', '.join(cities)}."
        else:
            cities = [dest]
            self.seen.cities.append(dest)
            intro = (f"A {days}-day trip from {org} to {dest} ({dates[0]} to {dates[-1]}) for {people} "
                     f"{'person' if people == 1 else 'people'}.")

        # 2. Stays, food and sights city by city.
        viable: list[tuple[float, str]] = []
        for n, city in enumerate(cities):
            order = ["SearchAccommodation", "SearchRestaurant", "SearchAttraction"]
            rng.shuffle(order)
            if rng.random() < 0.7:  # most agents look at the stay first: it decides whether a city works
                order.remove("SearchAccommodation")
                order.insert(0, "SearchAccommodation")
            ok = True
            for j, tool in enumerate(order):
                lead = f"{intro} " if n == 0 and j == 0 else ""
                think = lead + self._search_thought(tool, city, lc, people)
                if self._calls_left() < 6:
                    ok = False
                    break
                res = self._city_search(tool, city, think)
                rows = list(res.rows) if res is not None and res.ok else None
                if rows is None:
                    ok = False
                    break
                if tool == "SearchAccommodation":
                    self.seen.accommodations[city] = rows
                    fitting = self._fitting_stays(rows, lc, people)
                    if not fitting:
                        ok = False
                        break
                elif tool == "SearchRestaurant":
                    self.seen.restaurants[city] = rows
                else:
                    self.seen.attractions[city] = rows
                self._maybe_redundant()
            if ok:
                viable.append((self._city_estimate(city, lc, people), city))
            if not multi:
                break
        if len(viable) < k:
            return self._give_up(q, f"Only {len(viable)} of the cities I checked can host this group; "
                                    f"I need {k}. I will write the best plan I can.")

        # 3. Transport for the route(s) worth trying, then the plan.
        viable.sort()
        # cities that can be reached from the origin first: a route must start and end with one
        viable.sort(key=lambda v: not self._reach.get(v[1], True))
        routes = self._candidate_routes([c for _, c in viable], k)
        for attempt, route in enumerate(routes):
            if self._calls_left() < 3 * (k + 1) + 1:
                break
            self._search_legs(q, route, attempt)
            result = self._solve(q, multi)
            if result.ok:
                return self._answer(q, result)
        return self._give_up(q, "No combination of what I found fits every requirement and the budget.")

    # -- reasoning snippets ------------------------------------------------------------------------
    def _search_thought(self, tool: str, city: str, lc: dict, people: int) -> str:
        if tool == "SearchAccommodation":
            needs = []
            if lc.get("room type"):
                needs.append(ROOM_WORDS.get(lc["room type"], lc["room type"]))
            if lc.get("house rule"):
                needs.append(f"{lc['house rule']} allowed")
            extra = f" It must offer {' and '.join(needs)}." if needs else ""
            return f"Next, accommodations in {city} for {people} {'guest' if people == 1 else 'guests'}.{extra}"
        if tool == "SearchRestaurant":
            want = lc.get("cuisine")
            extra = f" The group wants to try {', '.join(want)} food." if want else ""
            return f"Now the restaurants in {city}; meals need distinct places.{extra}"
        return f"Let me see the attractions in {city}, one per full day."

    def _fitting_stays(self, rows: list[Accommodation], lc: dict, people: int) -> list[Accommodation]:
        room, rule = lc.get("room type"), lc.get("house rule")
        return [a for a in rows
                if (not room or a.room_type in ROOM_TYPE_MATCH.get(room, ()))
                and (not rule or f"No {rule}" not in a.house_rules)]

    def _city_estimate(self, city: str, lc: dict, people: int) -> float:
        stays = self._fitting_stays(self.seen.accommodations.get(city, []), lc, people)
        night = min((a.price * math.ceil(people / a.maximum_occupancy) for a in stays), default=1e9)
        meals = sorted(r.avg_cost for r in self.seen.restaurants.get(city, []))[:3]
        return night + sum(meals) * people

    def _candidate_routes(self, viable: list[str], k: int) -> list[list[str]]:
        if k == 1:
            return [[c] for c in viable[:2]]
        pool = viable[: k + 1]
        routes = [list(p) for p in itertools.permutations(pool, k)]
        self.rng.shuffle(routes)
        cheapest = list(viable[:k])
        # routes that start and end in cities reachable from the origin first, then the cheapest cities
        ends = lambda r: (not self._reach.get(r[0], True)) + (not self._reach.get(r[-1], True))  # noqa: E731
        routes.sort(key=lambda r: (ends(r), set(r) != set(cheapest)))
        return routes[:3]

    def _reachable_first(self, q: dict, cities: list[str], k: int, want: int) -> list[str]:
        """Probe, city by city, whether the origin reaches it (a drive or taxi of under a day, else a
        flight on the first day) until `want` cities are reachable or `reach_probes` calls are spent;
        the reachable cities come first. The route's first and last legs join a city to the origin, so
        a city the origin cannot reach is worth nothing however cheap its stays are."""
        org, first_day = q["org"], list(q["date"])[0]
        ban = (q.get("local_constraint") or {}).get("transportation")
        mode = "taxi" if ban == "no self-driving" else "self-driving"
        reachable: list[str] = []
        spent, note = 0, ""
        for n, city in enumerate(cities):
            if len(reachable) >= want or spent >= self.config.reach_probes or self._calls_left() < 20:
                break
            lead = (f"The route visits {k} of these cities and starts and ends in {org}, so before comparing stays "
                    f"I check which cities {org} can reach at all. " if n == 0 else note)
            spent += 1
            res = self._call_retrying("GoogleDistanceMatrix", {"departure": org, "destination": city, "mode": mode},
                                      f"{lead}Can I go from {org} to {city} by {mode}?")
            ok = False
            if res is not None and res.ok:
                for d in res.rows:
                    self.seen.distances[(d.origin, d.dest)] = d
                ok = any(d.cost(mode) is not None for d in res.rows)
            if not ok and ban != "no flight" and spent < self.config.reach_probes:
                spent += 1
                res = self._call_retrying("SearchFlight", {"departure": org, "destination": city, "date": first_day},
                                          f"No {mode} from {org} to {city}; is there a flight on {first_day}?")
                if res is not None and res.ok:
                    for f in res.rows:
                        self.seen.flights[(f.number, f.date, f.origin)] = f
                    ok = bool(res.rows)
            self._reach[city] = ok
            if ok:
                reachable.append(city)
            note = (f"{city} is within reach ({len(reachable)} so far). " if ok
                    else f"{city} cannot be reached from {org}; I leave it out. ")
        probed = set(self._reach)
        return reachable + [c for c in cities if c not in probed] + [c for c in cities if c in probed and c not in reachable]

    def _leg_days(self, days: int, k: int) -> list[int]:
        """Day numbers (1-based) of the k+1 legs, nights split as evenly as possible."""
        nights = days - 1
        per = [nights // k + (1 if i < nights % k else 0) for i in range(k)]
        out, d = [1], 1
        for n in per:
            d += n
            out.append(d)
        return out

    def _search_legs(self, q: dict, route: list[str], attempt: int) -> None:
        org, dates = q["org"], list(q["date"])
        lc = q.get("local_constraint") or {}
        ban = lc.get("transportation")
        stops = [org, *route, org]
        leg_days = self._leg_days(int(q["days"]), len(route))
        for i, (a, b) in enumerate(zip(stops, stops[1:])):
            date = dates[min(leg_days[i], len(dates)) - 1]
            lead = (f"I will try the route {' -> '.join(stops)}. " if i == 0 else "") if attempt == 0 else (
                f"That did not work out; trying {' -> '.join(stops)} instead. " if i == 0 else "")
            flown = False
            if ban != "no flight":
                args = {"departure": a, "destination": b, "date": date}
                if self.rng.random() < self.config.p_typo / 2:
                    bad = date.replace("-", "/")
                    res = self._call("SearchFlight", {**args, "date": bad}, f"{lead}Flights from {a} to {b} on {date}.")
                    lead = "The date has to be written YYYY-MM-DD. "
                res = self._call_retrying("SearchFlight", args, f"{lead}Flights from {a} to {b} on {date}.")
                if res is not None and res.ok:
                    for f in res.rows:
                        self.seen.flights[(f.number, f.date, f.origin)] = f
                flown = any(f.origin == a and f.dest == b and f.date == date for f in self.seen.flights.values())
                lead = ""
            modes = [m for m in ("self-driving", "taxi") if not (ban == "no self-driving" and m == "self-driving")]
            for mode in modes:
                # it may skip the road options only when a flight covers the leg: never leaves a leg unconnected
                if self.rng.random() < self.config.p_skip_distance and flown:
                    continue
                args = {"departure": a, "destination": b, "mode": mode}
                # a mistake only before a search it then makes (a leg searched on an earlier route is skipped);
                # drawn only when enabled, so that p_self_route 0 leaves the random stream as it was
                if (self.config.p_self_route and ("GoogleDistanceMatrix", args) not in self._history
                        and self.rng.random() < self.config.p_self_route):
                    end = self.rng.choice((a, b))
                    self._call("GoogleDistanceMatrix", {"departure": end, "destination": end, "mode": mode},
                               f"{lead}How long and how costly is {mode} from {end} to {end}?")
                    self._no_loss_on_last_call()
                    lead = f"There is no route from {end} to itself; the leg is {a} to {b}. "
                res = self._call_retrying("GoogleDistanceMatrix", args,
                                          f"{lead}How long and how costly is {mode} from {a} to {b}?")
                lead = ""
                if res is not None and res.ok:
                    for d in res.rows:
                        self.seen.distances[(d.origin, d.dest)] = d
            self._maybe_redundant()

    def _solve(self, q: dict, multi: bool):
        rdb = self.seen.database(self.db, q["org"], q["dest"], multi)
        try:
            return solve(rdb, q, budget=q.get("budget"))
        finally:
            # The solver caches an index per Database object; ours are throwaway, so drop it.
            solver_mod._INDEXES.pop(id(rdb), None)

    # -- endings -----------------------------------------------------------------------------------
    def _answer(self, q: dict, result) -> None:
        cost = result.cost
        think = (f"I have transport for every leg and enough places to stay, eat and visit. The cheapest "
                 f"plan that meets every requirement costs {_money(cost)}"
                 + (f", within the {_money(q['budget'])} budget." if q.get("budget") else "."))
        self.env.step(render_answer(format_plan_text(result.plan), self._think(think, "the plan"), self._inline))

    def _give_up(self, q: dict, why: str) -> None:
        """Answer with the closest plan it can build (it will fail a check), or a bare skeleton."""
        rdb = self.seen.database(self.db, q["org"], q["dest"], int(q["days"]) > 3)
        try:
            relaxed = {**q, "local_constraint": {k: None for k in (q.get("local_constraint") or {})}}
            result = solve(rdb, relaxed)
        finally:
            solver_mod._INDEXES.pop(id(rdb), None)
        if result.plan is not None:
            plan = result.plan
        else:
            plan = [{"days": d, "current_city": q["dest"] if 1 < d < int(q["days"]) else
                     (f"from {q['org']} to {q['dest']}" if d == 1 else f"from {q['dest']} to {q['org']}"),
                     "transportation": "-", "breakfast": "-", "attraction": "-", "lunch": "-", "dinner": "-",
                     "accommodation": "-"} for d in range(1, int(q["days"]) + 1)]
        self.env.step(render_answer(format_plan_text(plan), self._think(why, "the plan"), self._inline))
