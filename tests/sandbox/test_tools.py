"""The six tools: both observation styles, the official messages, bad calls, aliases, failure injection."""

from __future__ import annotations

import pytest

from star.sandbox.rows import Accommodation, Attraction, Database, Distance, Flight, Restaurant
from star.sandbox.render import INVALID_ACTION
from star.sandbox.tools import ALIASES, TOOL_ARGUMENTS, TOOL_SPECS, Toolbox, ToolResult


@pytest.fixture(scope="module")
def tiny_db() -> Database:
    """A hand-made database whose every observation can be written out in full below."""
    return Database(
        city_states={"Dallas": "Texas", "Austin": "Texas", "Boise": "Idaho", "Nowhere": "Idaho"},
        city_set=["Dallas", "Austin", "Boise", "Nowhere"],
        state_set=["Texas", "Idaho"],
        flights=[
            Flight("F3574992", 542, "22:51", "00:42", "2 hours 51 minutes", "2022-03-10", "Dallas", "Boise", 1173.0),
            Flight("F1000001", 89, "06:05", "07:03", "0 hours 58 minutes", "2022-03-10", "Dallas", "Boise", 1173.0),
            Flight("F1000002", 120, "09:00", "10:00", "1 hours 0 minutes", "2022-03-11", "Dallas", "Boise", 1173.0),
        ],
        restaurants=[
            Restaurant("Coco Bambu", "Austin", "Tea, Cafe, Desserts", 33, 4.9),
            Restaurant("Taco Joint", "Austin", "Mexican", 12, 0.0),
        ],
        attractions=[
            Attraction("Zilker Park", 30.266962, -97.772859, "2100 Barton Springs Rd, Austin, TX 78746, USA",
                       "(512) 974-6700", "https://www.austintexas.gov/", "Austin"),
            Attraction("State Capitol", 30.2746652, -97.7403505, "1100 Congress Ave., Austin, TX 78701, USA",
                       "Unknown", "Unknown", "Austin"),
        ],
        accommodations=[
            Accommodation("Cozy Loft", "Private room", 120.0, 2.0, 4.0, "No smoking & No pets", 2, "Austin"),
            Accommodation("Big House", "Entire home/apt", 455.0, 1.0, 3.0, "No parties", 8, "Austin"),
        ],
        distance_rows=[
            Distance("Dallas", "Austin", "3 hours 5 mins", "314 km"),
            Distance("Dallas", "Austin", "9 hours 9 mins", "999 km"),  # a duplicate pair: the first row wins
            Distance("Dallas", "Boise", "1 day 2 hours", "2,562 km"),
            Distance("Austin", "Boise", None, None),
        ],
        source="tiny",
    )


@pytest.fixture(scope="module")
def official(tiny_db):
    return Toolbox(tiny_db, style="official")


@pytest.fixture(scope="module")
def compact(tiny_db):
    return Toolbox(tiny_db, style="compact")


FLIGHT_ARGS = {"departure": "Dallas", "destination": "Boise", "date": "2022-03-10"}


# -- official style: the official tables and messages ------------------------------------------------

def test_official_flights_are_the_pandas_table_in_file_order(official, tiny_db):
    result = official.run("SearchFlight", FLIGHT_ARGS)
    assert result.text == (
        "Flight Number  Price DepTime ArrTime  ActualElapsedTime FlightDate OriginCityName DestCityName  Distance\n"
        "     F3574992    542   22:51   00:42 2 hours 51 minutes 2022-03-10         Dallas        Boise    1173.0\n"
        "     F1000001     89   06:05   07:03 0 hours 58 minutes 2022-03-10         Dallas        Boise    1173.0")
    assert result.ok and result.error is None and result.tool == "SearchFlight"
    assert result.rows == tuple(tiny_db.flights[:2])


def test_no_flight_message_is_the_official_one_in_both_styles(official, compact):
    args = {"departure": "Boise", "destination": "Dallas", "date": "2022-03-10"}
    for toolbox in (official, compact):
        result = toolbox.run("SearchFlight", args)
        assert result.text == "There is no flight from Boise to Dallas on 2022-03-10."
        assert result.ok and result.rows == ()


def test_official_restaurants_are_stripped_like_the_official_agent(official):
    assert official.call("SearchRestaurant", {"city": "Austin"}) == (
        "Name  Average Cost            Cuisines  Aggregate Rating   City\n"
        "Coco Bambu            33 Tea, Cafe, Desserts               4.9 Austin\n"
        "Taco Joint            12             Mexican               0.0 Austin")


def test_official_attractions_print_six_decimals_and_unknowns(official):
    text = official.call("SearchAttraction", {"city": "Austin"})
    assert text.splitlines() == [
        "Name  Latitude  Longitude                                       Address          Phone"
        "                      Website   City",
        "  Zilker Park 30.266962 -97.772859 2100 Barton Springs Rd, Austin, TX 78746, USA (512) 974-6700"
        " https://www.austintexas.gov/ Austin",
        "State Capitol 30.274665 -97.740351     1100 Congress Ave., Austin, TX 78701, USA        Unknown"
        "                      Unknown Austin",
    ]


def test_official_accommodations_and_the_copy_pasted_empty_message(official):
    assert official.call("AccommodationSearch", {"city": "Austin"}) == (
        "NAME  price       room type          house_rules  minimum nights  maximum occupancy  review rate number   city\n"
        "Cozy Loft  120.0    Private room No smoking & No pets             2.0                  2                 "
        "4.0 Austin\n"
        "Big House  455.0 Entire home/apt           No parties             1.0                  8                 "
        "3.0 Austin")
    # The official tool says "attraction" for an empty accommodation search; the restaurant one is right.
    assert official.call("SearchAccommodation", {"city": "Boise"}) == "There is no attraction in this city."
    assert official.call("SearchAttraction", {"city": "Boise"}) == "There is no attraction in this city."
    assert official.call("SearchRestaurant", {"city": "Boise"}) == "There is no restaurant in this city."


def test_official_city_search_prints_the_python_list_or_invalid_state(official):
    assert official.call("CitySearch", {"state": "Texas"}) == "['Dallas', 'Austin']"
    result = official.run("CitySearch", {"state": "texas"})  # exact match, as in the official tool
    assert (result.text, result.ok, result.error) == ("Invalid State", False, "unknown_state")


def test_official_distance_matrix_messages(official):
    call = lambda o, d, m: official.call("GoogleDistanceMatrix", {"departure": o, "destination": d, "mode": m})
    assert call("Dallas", "Austin", "self-driving") == \
        "self-driving, from Dallas to Austin, duration: 3 hours 5 mins, distance: 314 km, cost: 15"
    assert call("Dallas", "Austin", "taxi") == \
        "taxi, from Dallas to Austin, duration: 3 hours 5 mins, distance: 314 km, cost: 314"
    # the mode is echoed as given; '(State)' suffixes are cut as the official tool does
    assert call("Dallas(Texas)", "Austin(Texas)", "Self-driving") == \
        "Self-driving, from Dallas to Austin, duration: 3 hours 5 mins, distance: 314 km, cost: 15"
    assert call("Dallas", "Boise", "taxi") == "No valid information."  # a drive over a day
    assert call("Austin", "Boise", "taxi") == "No valid information."  # the pair has empty values
    assert call("Boise", "Austin", "taxi") == "taxi, from Boise to Austin, no valid information."


def test_official_distance_with_a_mode_outside_the_cost_rule_prints_cost_none(official):
    result = official.run("GoogleDistanceMatrix", {"departure": "Dallas", "destination": "Austin", "mode": "walking"})
    assert result.text == "walking, from Dallas to Austin, duration: 3 hours 5 mins, distance: 314 km, cost: None"
    assert (result.ok, result.error) == (False, "bad_mode")


@pytest.mark.parametrize("style", ["official", "compact"])
def test_distance_takes_the_papers_departure_and_the_origin_alias(tiny_db, style):
    toolbox = Toolbox(tiny_db, style=style)
    paper = toolbox.run("GoogleDistanceMatrix", {"departure": "Dallas", "destination": "Austin", "mode": "taxi"})
    alias = toolbox.run("GoogleDistanceMatrix", {"origin": "Dallas", "destination": "Austin", "mode": "taxi"})
    assert paper.ok and paper.error is None and paper == alias
    assert "from Dallas to Austin" in paper.text and "314" in paper.text
    # the paper's "driving" mode is priced as self-driving
    driving = toolbox.run("GoogleDistanceMatrix", {"departure": "Dallas", "destination": "Austin", "mode": "driving"})
    assert driving.ok and "15" in driving.text
    # both spellings at once is ambiguous: refused, naming the argument
    both = toolbox.run("GoogleDistanceMatrix", {"departure": "Dallas", "origin": "Dallas", "destination": "Austin",
                                                "mode": "taxi"})
    assert (both.ok, both.error) == (False, "bad_arguments")
    if style == "compact":
        assert "'origin'" in both.text and "'departure'" in both.text


# -- compact style ------------------------------------------------------------------------------------

def test_compact_flight_lines_follow_the_paper(compact):
    assert compact.call("SearchFlight", FLIGHT_ARGS).splitlines() == [
        "1. [F3574992] $542. Departure: 22:51, Arrival: 00:42, Actual Elapsed Time: 2 hours 51 minutes, "
        "Distance: 1173.0 miles",
        "2. [F1000001] $89. Departure: 06:05, Arrival: 07:03, Actual Elapsed Time: 0 hours 58 minutes, "
        "Distance: 1173.0 miles",
    ]


def test_compact_city_tables(compact):
    # a header line naming the columns once, then one numbered tab-separated row per line, bare values;
    # a text cell starts with a space (a name tokenizes as in a plan), a number does not
    assert compact.call("SearchRestaurant", {"city": "Austin"}).splitlines() == [
        "name\taverage cost\tcuisines\trating",
        "1. Coco Bambu\t33\t Tea, Cafe, Desserts\t4.9",
        "2. Taco Joint\t12\t Mexican\t0"]
    # attractions: name and address; coordinates, phone and website only in the official style
    assert compact.call("SearchAttraction", {"city": "Austin"}).splitlines() == [
        "name\taddress",
        "1. Zilker Park\t 2100 Barton Springs Rd, Austin, TX 78746, USA",
        "2. State Capitol\t 1100 Congress Ave., Austin, TX 78701, USA"]
    assert compact.call("SearchAccommodation", {"city": "Austin"}).splitlines() == [
        "name\tprice per night\troom type\thouse rules\tminimum nights\tmaximum occupancy\trating",
        "1. Cozy Loft\t120\t Private room\t No smoking & No pets\t2\t2\t4",
        "2. Big House\t455\t Entire home/apt\t No parties\t1\t8\t3"]
    assert compact.call("SearchAccommodation", {"city": "Boise"}) == "There is no accommodation in Boise."
    assert compact.call("SearchCity", {"state": "Idaho"}) == "Cities in Idaho: Boise, Nowhere"


def test_compact_cells_never_break_the_row_layout():
    from star.sandbox.render import compact_accommodations, compact_attractions

    odd = Accommodation("Cozy|  STUDIO\n2BR\tMidtown", "Private room", 99.5, 30.0, 4.5, "No pets", 1, "X")
    assert compact_accommodations([odd]).splitlines()[1] == \
        "1. Cozy| STUDIO 2BR Midtown\t99.5\t Private room\t No pets\t30\t1\t4.5"
    spot = Attraction("Spot\tPark", 1.5, -0.0000004, "Road 1\nNorth", "Unknown", "Unknown", "X")
    assert compact_attractions([spot]).splitlines()[1] == "1. Spot Park\t Road 1 North"


def test_compact_distance(compact):
    call = lambda o, d, m: compact.run("GoogleDistanceMatrix", {"departure": o, "destination": d, "mode": m})
    assert call("Dallas", "Austin", "self-driving").text == \
        "self-driving from Dallas to Austin: 3 hours 5 mins, 314 km, $15"
    assert call("Dallas", "Boise", "taxi").text == "No valid route."  # a drive over a day
    assert call("Austin", "Boise", "self-driving").text == "No valid route."  # the pair has empty values
    assert call("Boise", "Austin", "taxi").text == "No route data from Boise to Austin."
    bad = call("Dallas", "Austin", "walking")
    assert (bad.ok, bad.error) == (False, "bad_mode")
    assert bad.text == "Error: mode must be 'self-driving' or 'taxi', got 'walking'."


def test_compact_carries_every_row_of_the_official_table_with_what_a_plan_needs(any_db):
    official, compact = Toolbox(any_db, style="official"), Toolbox(any_db, style="compact")
    cities = [c for c in any_db.city_set if c in any_db.restaurants_by_city][:15]
    for tool in ("SearchRestaurant", "SearchAttraction", "SearchAccommodation"):
        for city in cities:
            full, short = official.run(tool, {"city": city}), compact.run(tool, {"city": city})
            assert short.rows == full.rows
            if full.rows:
                lines = short.text.splitlines()
                assert len(lines) == len(full.text.splitlines()) == len(full.rows) + 1  # a header, then the rows
                assert len(short.text) < len(full.text)
                width = len(lines[0].split("\t"))
                for number, (row, line) in enumerate(zip(full.rows, lines[1:]), 1):
                    cells = line.split("\t")
                    assert len(cells) == width, line  # no cell carries a tab or a line break
                    assert cells[0] == f"{number}. " + _flat(row.name)
                    assert cells[1:] == _facts(row), line


def _flat(text: str) -> str:
    """A cell with a line break or tab in it is flattened (whitespace runs become one space); others are kept."""
    return " ".join(text.split()) if any(c in text for c in "\n\r\t") else text


def _facts(row) -> list[str]:
    """A row's values after the name, as the compact line must show them (what a plan or a check reads)."""
    num = lambda x: str(int(x)) if float(x).is_integer() else repr(float(x))
    flat = _flat
    if isinstance(row, Restaurant):
        return [str(row.avg_cost), " " + flat(row.cuisines), num(row.rating)]
    if isinstance(row, Accommodation):
        return [num(row.price), " " + flat(row.room_type), " " + flat(row.house_rules), num(row.minimum_nights),
                str(row.maximum_occupancy), num(row.review_rate)]
    return [" " + flat(row.address)]  # attractions: no coordinates, phone or website


# -- bad calls: a clear observation, never an exception ----------------------------------------------

def test_bad_date_is_checked_before_the_cities(official, compact):
    args = {"departure": "Atlantis", "destination": "Boise", "date": "2022-3-10"}
    result = official.run("FlightSearch", args)
    assert (result.text, result.error) == ("'2022-3-10' is not in the format YYYY-MM-DD", "bad_date")
    assert compact.call("FlightSearch", args) == "Error: date '2022-3-10' is not in the format YYYY-MM-DD."


def test_unknown_city_prints_the_whole_city_list_in_official_style(official, compact, tiny_db):
    result = official.run("SearchFlight", {"departure": "Dallas", "destination": "boise", "date": "2022-03-10"})
    assert result.text == "boise is not valid city in ['Dallas', 'Austin', 'Boise', 'Nowhere']."
    assert (result.ok, result.error, result.tool) == (False, "unknown_city", "SearchFlight")
    for tool in ("SearchRestaurant", "SearchAttraction", "SearchAccommodation"):
        assert official.call(tool, {"city": "Paris"}) == f"Paris is not valid city in {tiny_db.city_set!s}."
        assert compact.call(tool, {"city": "austin"}) == "Error: unknown city 'austin' (did you mean 'Austin'?)."
        assert compact.call(tool, {"city": "Austin(Texas)"}) == \
            "Error: unknown city 'Austin(Texas)' (did you mean 'Austin'?)."
        assert compact.call(tool, {"city": "Paris"}) == "Error: unknown city 'Paris'."


def test_unknown_state_in_compact_style_suggests_a_spelling(compact):
    result = compact.run("SearchCity", {"state": "texas"})
    assert (result.text, result.error) == ("Error: unknown state 'texas' (did you mean 'Texas'?).", "unknown_state")


def test_unknown_tool(official, compact):
    result = official.run("HotelSearch", {"city": "Austin"})
    assert (result.text, result.ok, result.tool, result.error) == (INVALID_ACTION, False, None, "unknown_tool")
    assert "Valid Actions are  FlightSearch[" in INVALID_ACTION  # the official double space
    assert compact.call("HotelSearch", {}) == ("Error: unknown tool 'HotelSearch'. Available tools: SearchCity, "
                                               "SearchFlight, GoogleDistanceMatrix, SearchRestaurant, "
                                               "SearchAttraction, SearchAccommodation.")


@pytest.mark.parametrize("arguments, compact_text", [
    ({"departure": "Dallas", "destination": "Boise"},
     "Error: SearchFlight is missing argument(s) 'date'; it takes 'departure', 'destination', 'date'."),
    ({**FLIGHT_ARGS, "class": "economy"},
     "Error: SearchFlight got unexpected argument(s) 'class'; it takes 'departure', 'destination', 'date'."),
    ({**FLIGHT_ARGS, "date": 20220310},
     "Error: SearchFlight argument 'date' must be a string, got int 20220310."),
    (["Dallas", "Boise", "2022-03-10"],
     "Error: SearchFlight needs a JSON object of arguments {'departure', 'destination', 'date'}, got list."),
    (None, "Error: SearchFlight needs a JSON object of arguments {'departure', 'destination', 'date'}, "
           "got NoneType."),
])
def test_malformed_arguments(official, compact, arguments, compact_text):
    result = official.run("SearchFlight", arguments)
    assert (result.text, result.ok, result.error) == ("Illegal Flight Search. Please try again.", False,
                                                      "bad_arguments")
    assert compact.call("SearchFlight", arguments) == compact_text


def test_each_tool_has_its_official_illegal_call_message(official):
    expected = {"SearchCity": "Illegal City Search. Please try again.",
                "GoogleDistanceMatrix": "Illegal GoogleDistanceMatrix. Please try again.",
                "SearchRestaurant": "Illegal Restaurant Search. Please try again.",
                "SearchAttraction": "Illegal Attraction Search. Please try again.",
                "SearchAccommodation": "Illegal Accommodation Search. Please try again."}
    for tool, text in expected.items():
        assert official.call(tool, {}) == text


@pytest.mark.parametrize("style", ["official", "compact"])
def test_garbage_never_raises(tiny_db, style):
    toolbox = Toolbox(tiny_db, style=style)
    garbage = [None, 3, "x" * 10_000, ["a"], {"a": {"b": []}}, {"city": None}, {"city": ["Austin"]},
               {"state": 1.5}, {"origin": "Dallas", "destination": "Austin", "mode": None}, {}, "{\"city\": 1"]
    names = [*TOOL_ARGUMENTS, *ALIASES, "", None, 42, "NotebookWrite", "Planner"]
    for name in names:
        for arguments in garbage:
            result = toolbox.run(name, arguments)
            assert isinstance(result, ToolResult) and not result.ok and result.text


# -- names, specs, rows ---------------------------------------------------------------------------------

def test_both_spellings_give_the_same_result(official, compact):
    calls = {"SearchCity": {"state": "Texas"}, "SearchFlight": FLIGHT_ARGS, "SearchRestaurant": {"city": "Austin"},
             "SearchAttraction": {"city": "Austin"}, "SearchAccommodation": {"city": "Austin"}}
    for alias, canonical in ALIASES.items():
        for toolbox in (official, compact):
            a, b = toolbox.run(alias, calls[canonical]), toolbox.run(canonical, calls[canonical])
            assert a == b and a.tool == canonical and a.ok


def test_tool_specs_describe_the_accepted_arguments(official):
    assert [s["name"] for s in TOOL_SPECS] == list(TOOL_ARGUMENTS)
    for spec in TOOL_SPECS:
        params = spec["parameters"]
        assert spec["description"] and params["type"] == "object" and params["additionalProperties"] is False
        assert tuple(params["required"]) == TOOL_ARGUMENTS[spec["name"]] == tuple(params["properties"])
        # every argument the spec declares is accepted (no bad_arguments error)
        result = official.run(spec["name"], {a: "Austin" for a in params["required"]})
        assert result.error != "bad_arguments"


def test_rows_are_the_typed_database_rows(any_db):
    toolbox = Toolbox(any_db)
    (origin, dest, date), flights = next(iter(any_db.flights_by_route_date.items()))
    if origin in any_db.city_set and dest in any_db.city_set:
        assert toolbox.run("SearchFlight", {"departure": origin, "destination": dest, "date": date}).rows == \
            tuple(flights)
    city = next(c for c in any_db.city_set if c in any_db.accommodations_by_city)
    assert toolbox.run("SearchAccommodation", {"city": city}).rows == tuple(any_db.accommodations_by_city[city])
    state = next(iter(any_db.state_cities))
    assert toolbox.run("SearchCity", {"state": state}).rows == tuple(any_db.state_cities[state])


def test_unknown_style_is_refused(tiny_db):
    with pytest.raises(ValueError, match="unknown observation style 'fancy'"):
        Toolbox(tiny_db, style="fancy")


# -- failure injection ---------------------------------------------------------------------------------

def test_failure_rate_zero_and_one(tiny_db):
    assert all(Toolbox(tiny_db, failure_rate=0.0).run("SearchCity", {"state": "Texas"}).ok for _ in range(200))
    always = Toolbox(tiny_db, failure_rate=1.0)
    result = always.run("FlightSearch", FLIGHT_ARGS)
    assert result.text == "Error: Current tool FlightSearch is not available."
    assert (result.ok, result.error, result.tool) == (False, "unavailable", "SearchFlight")
    # an unknown tool is not a tool execution: it gets the unknown-tool answer, not the outage
    assert always.run("HotelSearch", {}).error == "unknown_tool"


def test_failure_rate_is_respected_and_reproducible(tiny_db):
    def outcomes(seed):
        toolbox = Toolbox(tiny_db, style="official", failure_rate=0.1, seed=seed)
        return [toolbox.run("SearchRestaurant", {"city": "Austin"}).error == "unavailable" for _ in range(3000)]

    first = outcomes(7)
    assert 0.08 < sum(first) / len(first) < 0.12
    assert outcomes(7) == first
    assert outcomes(8) != first


def test_failure_rate_outside_unit_interval_is_refused(tiny_db):
    with pytest.raises(ValueError, match="failure rate"):
        Toolbox(tiny_db, failure_rate=1.5)


# -- the answer cache --------------------------------------------------------------------------------------

def test_toolboxes_on_one_database_share_answers_but_not_styles(tiny_db):
    first, second = Toolbox(tiny_db, style="official"), Toolbox(tiny_db, style="official")
    a = first.run("SearchFlight", FLIGHT_ARGS)
    assert second.run("FlightSearch", FLIGHT_ARGS) is a  # served from the shared cache
    assert Toolbox(tiny_db, style="compact").run("SearchFlight", FLIGHT_ARGS).text != a.text


def test_only_answers_with_rows_are_cached(tiny_db):
    toolbox = Toolbox(tiny_db, style="compact")
    toolbox.clear_cache()
    for i in range(50):  # a model inventing city names must not grow the cache
        toolbox.run("SearchRestaurant", {"city": f"Atlantis {i}"})
        date = f"2022-03-{i % 28 + 1:02d}"
        toolbox.run("SearchFlight", {"departure": "Boise", "destination": "Dallas", "date": date})
    assert len(toolbox._cache) == 0
    toolbox.run("SearchRestaurant", {"city": "Austin"})
    assert len(toolbox._cache) == 1


def test_runaway_arguments_are_not_echoed_in_full(compact):
    huge = "Austin" * 1000
    for text in (compact.call(huge, {}), compact.call("SearchRestaurant", {"city": huge}),
                 compact.call("SearchFlight", {"departure": "Dallas", "destination": "Boise", "date": huge})):
        assert text.startswith("Error: ") and len(text) < 400


def test_the_first_toolbox_of_a_small_database_renders_every_answer_up_front(tiny_db):
    import copy

    db = copy.copy(tiny_db)  # another Database object: its answer cache starts empty
    box = Toolbox(db, style="official", precompute_limit=100)
    assert 0 < box.answer_count() <= 100 and len(box._cache) == box.answer_count()
    later = Toolbox(db, style="official")
    assert later._cache is box._cache  # shared: later toolboxes only look answers up
    assert later.call("SearchRestaurant", {"city": "Austin"}) == Toolbox(copy.copy(tiny_db), style="official",
                                                                         precompute_limit=0).call(
        "SearchRestaurant", {"city": "Austin"})


def test_a_database_over_the_precompute_limit_renders_answers_on_first_use(tiny_db):
    import copy

    box = Toolbox(copy.copy(tiny_db), style="compact", precompute_limit=1)
    assert box._cache == {}
    box.call("SearchRestaurant", {"city": "Austin"})
    assert list(box._cache) == [("SearchRestaurant", "Austin")]


def test_the_real_database_is_small_enough_to_be_rendered_whole(real_db):
    import copy

    from star.sandbox.config import DEFAULTS

    box = Toolbox(copy.copy(real_db), style="compact")
    assert box.answer_count() <= DEFAULTS.precompute_limit and len(box._cache) == box.answer_count()


@pytest.mark.parametrize("style", ["official", "compact"])
def test_the_answer_index_holds_exactly_what_a_call_would_render(any_db, style):
    import random

    box = Toolbox(any_db, style=style)
    box.clear_cache()
    added = box.precompute()
    cities = [c for c in any_db.restaurants_by_city if c in any_db.city_set]
    flights = list(any_db.flights_by_route_date)
    assert added >= len(cities) + len(flights)  # every city table and every (route, date) answer
    rng = random.Random(0)
    keys = [("SearchRestaurant", (c,)) for c in rng.sample(cities, 5)] + \
           [("SearchFlight", k) for k in rng.sample(flights, 5)]
    indexed = [box._cache[(tool, *args)].text for tool, args in keys]
    box.clear_cache()  # now every call renders from scratch
    names = {"SearchRestaurant": ("city",), "SearchFlight": ("departure", "destination", "date")}
    fresh = [box.call(tool, dict(zip(names[tool], args))) for tool, args in keys]
    assert indexed == fresh
