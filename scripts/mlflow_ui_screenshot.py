"""Check that the MLflow UI renders the project's runs, in headless Chromium, and keep a screenshot.

    .venv/bin/python scripts/mlflow_ui_screenshot.py --out mlflow_ui.png            # starts its own UI
    .venv/bin/python scripts/mlflow_ui_screenshot.py --url http://127.0.0.1:5000 --out ui.png
    .venv/bin/python scripts/mlflow_ui_screenshot.py --compare PARENT_RUN_ID --out compare.png  # its variants side by side
    .venv/bin/python scripts/mlflow_ui_screenshot.py --page '#/models/star-smoke' --expect star-smoke --out models.png
    .venv/bin/python scripts/mlflow_ui_screenshot.py --run RUN_ID --page /traces --out traces.png  # a run's tab
    .venv/bin/python scripts/mlflow_ui_screenshot.py --prefect --url http://127.0.0.1:4200 \
        --page 'runs/flow-run/ID?tab=Artifacts' --expect report --out prefect.png       # the Prefect UI

Without --url it starts `mlflow server` on a free 127.0.0.1 port against the project's store
(sqlite:///mlflow.db, or $MLFLOW_TRACKING_URI), opens the experiment page of `--experiment`, dumps
the rendered DOM (the check: the page must show the experiment's run names) and writes a PNG.
Needs Chromium (Debian: `apt-get install -y chromium`). Exit status 0 only when the UI rendered.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PROJECT = Path(__file__).resolve().parents[1]
if str(PROJECT) not in sys.path:  # this checkout's `star`, whichever one the venv has installed
    sys.path.insert(0, str(PROJECT))


def find_chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        path = shutil.which(name)
        if path:
            return path
    raise SystemExit("Chromium not found: install it (Debian: apt-get install -y chromium)")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_http(url: str, timeout: float) -> bool:
    import httpx

    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            if httpx.get(url, timeout=3).status_code == 200:
                return True
        except httpx.HTTPError:
            pass
        time.sleep(1)
    return False


def chromium(args: list[str], timeout: float, height: int = 950) -> subprocess.CompletedProcess:
    with tempfile.TemporaryDirectory(prefix="star-chromium-") as profile:
        cmd = [find_chromium(), "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
               "--no-first-run", "--hide-scrollbars", f"--user-data-dir={profile}", f"--window-size=1500,{height}",
               "--virtual-time-budget=20000", *args]
        return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--url", default=None, help="a running MLflow UI (default: start one)")
    p.add_argument("--tracking-uri", default=None, help="store for the UI this script starts")
    p.add_argument("--experiment", default="star", help="experiment whose page is captured")
    p.add_argument("--run", default=None, help="capture this run's page (its report artifacts) instead")
    p.add_argument("--compare", default=None, metavar="PARENT",
                   help="capture MLflow's compare-runs page of this ablation parent's child runs instead")
    p.add_argument("--page", default=None, metavar="PATH",
                   help="capture this UI path instead, e.g. '#/models/star-smoke' or a run's tail '/traces' with --run")
    p.add_argument("--expect", action="append", default=[], help="text the rendered page must contain (repeatable)")
    p.add_argument("--out", default="mlflow_ui.png", help="screenshot path")
    p.add_argument("--height", type=int, default=950, help="window height in pixels (a long compare page: 2400)")
    p.add_argument("--timeout", type=float, default=150.0)
    p.add_argument("--prefect", action="store_true",
                   help="the page is the Prefect UI at --url (e.g. --page runs/flow-run/ID?tab=Artifacts)")
    args = p.parse_args(argv)
    os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
    if args.prefect:
        return prefect_page(args)
    uri = args.tracking_uri or os.environ.get("MLFLOW_TRACKING_URI") or f"sqlite:///{PROJECT / 'mlflow.db'}"

    import mlflow

    client = mlflow.MlflowClient(uri)
    exp = client.get_experiment_by_name(args.experiment)
    if exp is None:
        print(f"error: experiment {args.experiment!r} not found in {uri}", file=sys.stderr)
        return 1
    runs = client.search_runs([exp.experiment_id], max_results=200, order_by=["attributes.start_time DESC"])
    # The runs table lists top-level runs (ablations, pipelines); nested ones are collapsed under them.
    expected = {r.info.run_name for r in runs if r.info.run_name and "mlflow.parentRunId" not in r.data.tags}
    if args.run:
        expected = {client.get_run(args.run).info.run_name}
    children = []
    if args.compare:
        children = client.search_runs([exp.experiment_id], f"tags.`mlflow.parentRunId` = '{args.compare}'",
                                      order_by=["attributes.start_time ASC"])
        if not children:
            print(f"error: run {args.compare} has no child runs to compare", file=sys.stderr)
            return 1
        expected = {r.info.run_name for r in children}

    server = None
    url = args.url
    if url is None:
        port = free_port()
        server = subprocess.Popen([str(Path(sys.executable).parent / "mlflow"), "server", "--host", "127.0.0.1",
                                   "--port", str(port), "--backend-store-uri", uri, "--workers", "1"],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        url = f"http://127.0.0.1:{port}"
    try:
        if not wait_http(f"{url}/health", args.timeout):
            print(f"error: MLflow UI at {url} did not answer", file=sys.stderr)
            return 1
        from star.tracking.mlflow_logging import compare_url, ui_url

        # a run alone: its artifacts tab, opened on the comparison report
        page = compare_url(url, exp.experiment_id, [r.info.run_id for r in children]) if children else \
            ui_url(url, exp.experiment_id, args.run, "/artifacts/report/report.md" if args.run else "")
        if args.page is not None and args.run:  # a tab of the run ('/traces'), or "" for its overview
            page = ui_url(url, exp.experiment_id, args.run, args.page)
        elif args.page:
            page, expected = f"{url.rstrip('/')}/{args.page.lstrip('/')}", set()
        dom, ok = capture(page, args)
        shown = sorted(n for n in expected if n in dom)
        ok = ok and (bool(shown) or not expected)
        print(f"{page}: {len(shown)}/{len(expected)} {'run' if args.run or children else 'top-level run'} names rendered; "
              f"screenshot {args.out}")
        return 0 if ok else 1
    finally:
        if server is not None:
            os.killpg(server.pid, signal.SIGINT)
            try:
                server.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(server.pid, signal.SIGKILL)


def prefect_page(args) -> int:
    """A page of a running Prefect UI: rendered (every --expect text in its DOM) and captured."""
    if not args.url or not args.page:
        print("error: --prefect needs --url (the Prefect server) and --page", file=sys.stderr)
        return 2
    if not wait_http(f"{args.url.rstrip('/')}/api/health", args.timeout):
        print(f"error: Prefect at {args.url} did not answer", file=sys.stderr)
        return 1
    page = f"{args.url.rstrip('/')}/{args.page.lstrip('/')}"
    _, ok = capture(page, args)
    print(f"{page}: screenshot {args.out}")
    return 0 if ok else 1


def capture(page: str, args) -> tuple[str, bool]:
    """The page's rendered DOM, and whether its screenshot was written and shows every --expect text."""
    dom = chromium(["--dump-dom", page], args.timeout, args.height).stdout
    missing = [t for t in args.expect if t not in dom]
    if missing:
        print(f"error: the page does not show {missing}", file=sys.stderr)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    chromium([f"--screenshot={out.resolve()}", page], args.timeout, args.height)
    return dom, out.is_file() and out.read_bytes()[:4] == b"\x89PNG" and not missing


if __name__ == "__main__":
    sys.exit(main())
