"""`star tools`: call one sandbox tool, or a JSONL batch of calls, and print the observations.

    star tools SearchFlight '{"departure": "Dallas", "destination": "Austin", "date": "2022-03-10"}'
    star tools --batch calls.jsonl --style official      # one {"name", "arguments"} per line
"""

from __future__ import annotations

import argparse
import json
import os
import sys

from star.cli_args import literal_choices
from star.sandbox.config import DEFAULTS
from star.sandbox.database import load_database
from star.sandbox.rows import DatabaseError
from star.sandbox.tools import TOOL_SPECS, Toolbox


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("name", nargs="?", help="tool name, either spelling (SearchFlight or FlightSearch, ...)")
    parser.add_argument("arguments", nargs="?", default="{}", help="the tool's arguments as a JSON object")
    parser.add_argument("--batch", metavar="CALLS.jsonl",
                        help="run every {\"name\", \"arguments\"} line of this file ('-' for stdin) and print one "
                             "JSON line {\"name\", \"arguments\", \"observation\"} per call")
    parser.add_argument("--db", default=None, help="database: a directory in the official layout, 'generated' or "
                                                   "'generated:SEED' (default: $STAR_DB, else generated)")
    parser.add_argument("--style", choices=literal_choices(DEFAULTS, "style"), default=DEFAULTS.style,
                        help="observation style (default: %(default)s)")
    parser.add_argument("--failure-rate", type=float, default=DEFAULTS.failure_rate,
                        help="probability that a call returns the 'tool is not available' error")
    parser.add_argument("--seed", type=int, default=DEFAULTS.seed, help="seed of the failure injection")
    parser.add_argument("--specs", action="store_true", help="print the tools' JSON specs and exit")


def _fail(message: str, code: int = 2) -> int:
    print(f"star tools: {message}", file=sys.stderr)
    return code


def run(args: argparse.Namespace) -> int:
    if args.specs:
        print(json.dumps(TOOL_SPECS, indent=2))
        return 0
    if args.batch is None and not args.name:
        return _fail("give a tool NAME and its JSON arguments, or --batch CALLS.jsonl (see --help)")
    if args.batch is not None and args.name:
        return _fail("give either a single call (NAME JSON_ARGS) or --batch, not both")
    if not 0.0 <= args.failure_rate <= 1.0:
        return _fail(f"--failure-rate must be within [0, 1], got {args.failure_rate}")
    try:
        db = load_database(args.db)
    except DatabaseError as exc:
        return _fail(str(exc))
    toolbox = Toolbox(db, style=args.style, failure_rate=args.failure_rate, seed=args.seed)

    try:
        if args.batch is None:
            try:
                arguments = json.loads(args.arguments)
            except json.JSONDecodeError as exc:
                return _fail(f"the arguments are not valid JSON ({exc}): {args.arguments!r}")
            result = toolbox.run(args.name, arguments)
            print(result.text)
            return 0 if result.ok else 1
        return _run_batch(toolbox, args.batch)
    except BrokenPipeError:  # the reader went away (`| head`): stop quietly, as Unix tools do
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


def _parse_call(line: str) -> tuple[str, object]:
    """(name, arguments) of one batch line; ValueError says what is wrong with it."""
    try:
        record = json.loads(line)
    except json.JSONDecodeError as exc:
        raise ValueError(f"not valid JSON ({exc})") from None
    if not isinstance(record, dict):
        raise ValueError(f"expected a JSON object with 'name' and 'arguments', got {type(record).__name__}")
    if not isinstance(record.get("name"), str):
        raise ValueError("missing the tool 'name' (a string)")
    extra = set(record) - {"name", "arguments"}
    if extra:
        raise ValueError(f"unexpected key(s) {sorted(extra)}; a call has 'name' and 'arguments'")
    # A call whose arguments are not an object still runs: the tool answers with a clear observation.
    return record["name"], record.get("arguments", {})


def _run_batch(toolbox, path: str) -> int:
    from tqdm import tqdm

    try:
        fh = sys.stdin if path == "-" else open(path, encoding="utf-8", errors="replace")
    except OSError as exc:
        return _fail(f"cannot read the batch file: {exc}")
    bad = 0
    with fh:
        for lineno, line in enumerate(tqdm(fh, desc="tool calls", unit="call", disable=None), 1):
            if not line.strip():
                continue
            try:
                name, arguments = _parse_call(line)
            except ValueError as exc:
                bad += 1
                print(f"star tools: {path}:{lineno}: {exc}; line skipped", file=sys.stderr)
                continue
            observation = toolbox.call(name, arguments)
            print(json.dumps({"name": name, "arguments": arguments, "observation": observation},
                             ensure_ascii=False), flush=True)
    if bad:
        print(f"star tools: {bad} malformed line(s) in {path} skipped; the other calls ran", file=sys.stderr)
    return 1 if bad else 0
