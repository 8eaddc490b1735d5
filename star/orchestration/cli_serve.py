"""`star serve`: a local Prefect server + process worker and the MLflow UI, all on 127.0.0.1.

    star serve                 # start all three in the background, deploy `star/ablation`, print URLs
    star serve --status        # which are running
    star serve --foreground    # the same, then follow the three services' logs until Ctrl-C stops them
    star serve --stop          # stop them (SIGINT: a Prefect worker ignores SIGTERM)

Process ids and logs live in runs/serve/ under the project. After `star serve`:
    prefect deployment run star/ablation --param ablation=reward
`star serve` points the active Prefect profile's PREFECT_API_URL at its server (noting the old value in
runs/serve/prefect-profile.json); `--stop` puts the old value back.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from star.config import resolve
from star.params_io import PROJECT_DIR
from star.tracking.mlflow_logging import TELEMETRY_OFF, Tracker, default_tracking_uri, ui_url

SERVICES = ("prefect-server", "prefect-worker", "mlflow-ui")
PROFILE_NOTE = "prefect-profile.json"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--prefect-port", type=int, default=4200, help="Prefect API/UI port on 127.0.0.1")
    parser.add_argument("--mlflow-port", type=int, default=5000, help="MLflow UI port on 127.0.0.1")
    parser.add_argument("--pool", default=None, help="work pool (default: params flow.work_pool)")
    parser.add_argument("--no-deploy", action="store_true", help="do not (re)create the `ablation` deployment")
    parser.add_argument("--foreground", action="store_true",
                        help="stay attached: print the services' logs as they grow; Ctrl-C stops them")
    parser.add_argument("--stop", action="store_true", help="stop the services started by `star serve`")
    parser.add_argument("--status", action="store_true", help="show which services are running")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds to wait for each service to answer")


def _state_dir(project: Path) -> Path:
    d = project / "runs" / "serve"
    d.mkdir(parents=True, exist_ok=True)
    return d


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
        return True
    except (ProcessLookupError, PermissionError):
        return False


def _pid(project: Path, name: str) -> int | None:
    f = _state_dir(project) / f"{name}.pid"
    if not f.is_file():
        return None
    try:
        pid = int(f.read_text().strip())
    except ValueError:
        return None
    return pid if _alive(pid) else None


def _start(project: Path, name: str, cmd: list[str], env: dict) -> int:
    existing = _pid(project, name)
    if existing:
        print(f"{name}: already running (pid {existing})")
        return existing
    log = open(_state_dir(project) / f"{name}.log", "ab")
    # Own process group, so --stop can signal the service and its children together.
    proc = subprocess.Popen(cmd, cwd=project, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    (_state_dir(project) / f"{name}.pid").write_text(f"{proc.pid}\n")
    print(f"{name}: started (pid {proc.pid}, log runs/serve/{name}.log)")
    return proc.pid


def _wait_http(url: str, timeout: float) -> bool:
    import httpx

    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            if httpx.get(url, timeout=3).status_code < 500:
                return True
        except httpx.HTTPError:
            pass
        time.sleep(1.0)
    return False


def point_prefect_profile(project: Path, api: str) -> None:
    """Set PREFECT_API_URL in the active Prefect profile, so that a bare `prefect deployment run …` in
    another shell talks to this server instead of starting a throwaway one, and note what it was."""
    from prefect.settings import PREFECT_API_URL, load_current_profile, update_current_profile

    note = _state_dir(project) / PROFILE_NOTE
    profile = load_current_profile()
    before = profile.settings.get(PREFECT_API_URL)
    if note.is_file():  # already pointed by an earlier `star serve`: the user's value is the noted one
        before = json.loads(note.read_text())["api_url"]
    note.write_text(json.dumps({"profile": profile.name, "api_url": before, "ours": api}) + "\n")
    update_current_profile({PREFECT_API_URL: api})


def restore_prefect_profile(project: Path) -> None:
    """Put back the PREFECT_API_URL that `star serve` replaced (removing it if there was none), unless
    the user has pointed the profile elsewhere since."""
    note = _state_dir(project) / PROFILE_NOTE
    if not note.is_file():
        return
    from prefect.settings import PREFECT_API_URL, load_profiles, save_profiles

    noted = json.loads(note.read_text())
    profiles = load_profiles()
    if noted["profile"] in profiles.names and profiles[noted["profile"]].settings.get(PREFECT_API_URL) == noted["ours"]:
        profiles.update_profile(noted["profile"], {PREFECT_API_URL: noted["api_url"]})  # None removes the key
        save_profiles(profiles)
        was = noted["api_url"] or "unset"
        print(f"Prefect profile {noted['profile']!r}: PREFECT_API_URL restored ({was})")
    note.unlink()


def stop(project: Path) -> int:
    for name in reversed(SERVICES):
        pid = _pid(project, name)
        if pid is None:
            print(f"{name}: not running")
            continue
        try:
            os.killpg(pid, signal.SIGINT)
        except ProcessLookupError:
            pass
        for _ in range(40):
            if not _alive(pid):
                break
            time.sleep(0.25)
        else:
            os.killpg(pid, signal.SIGTERM)
        (_state_dir(project) / f"{name}.pid").unlink(missing_ok=True)
        print(f"{name}: stopped (pid {pid})")
    restore_prefect_profile(project)
    return 0


def follow(project: Path, poll: float = 0.5) -> int:
    """Print what the services log (prefixed by name) until Ctrl-C or until every service has exited."""
    files = {name: open(_state_dir(project) / f"{name}.log", "rb") for name in SERVICES}
    for fh in files.values():
        fh.seek(0, os.SEEK_END)
    try:
        while any(_pid(project, name) for name in SERVICES):
            quiet = True
            for name, fh in files.items():
                for line in fh.readlines():
                    quiet = False
                    print(f"{name:>15} | {line.decode(errors='replace').rstrip()}", flush=True)
            if quiet:
                time.sleep(poll)
        print("every service has exited", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("\nstopping the services ...", flush=True)
        return stop(project)
    finally:
        for fh in files.values():
            fh.close()


COMPUTE_LIMIT = "star-compute"  # tasks/stages.py takes a slot of it for each `meta: {compute: true}` stage


def _compute_limit(bin_dir: Path, project: Path, env: dict, slots: int) -> None:
    """The global concurrency limit of compute-heavy stages: `slots` of them at once, none when 0."""
    prefect = [str(bin_dir / "prefect"), "global-concurrency-limit"]
    if slots == 0:
        subprocess.run([*prefect, "delete", COMPUTE_LIMIT], cwd=project, env=env, capture_output=True, input="y\n",
                       text=True)
        return
    made = subprocess.run([*prefect, "create", COMPUTE_LIMIT, "--limit", str(slots)], cwd=project, env=env,
                          capture_output=True, text=True)
    if made.returncode != 0:  # it exists: set its size
        subprocess.run([*prefect, "update", COMPUTE_LIMIT, "--limit", str(slots), "--enable"], cwd=project, env=env,
                       capture_output=True)


def run(args: argparse.Namespace) -> int:
    project = PROJECT_DIR
    if args.stop:
        return stop(project)
    if args.status:
        for name in SERVICES:
            pid = _pid(project, name)
            print(f"{name}: {'running (pid %d)' % pid if pid else 'stopped'}")
        return 0
    cfg = resolve()
    pool = args.pool or cfg["flow"].work_pool
    bin_dir = Path(sys.executable).parent
    api = f"http://127.0.0.1:{args.prefect_port}/api"
    env = {**os.environ, **TELEMETRY_OFF, "PREFECT_API_URL": api,
           "MLFLOW_TRACKING_URI": os.environ.get("MLFLOW_TRACKING_URI") or default_tracking_uri(project)}
    _start(project, "prefect-server", [str(bin_dir / "prefect"), "server", "start", "--host", "127.0.0.1",
                                       "--port", str(args.prefect_port)], env)
    if not _wait_http(f"{api}/health", args.timeout):
        print(f"error: Prefect server did not answer at {api}/health; see runs/serve/prefect-server.log",
              file=sys.stderr)
        return 1
    subprocess.run([str(bin_dir / "prefect"), "work-pool", "create", pool, "--type", "process"], cwd=project,
                   env=env, capture_output=True)  # fails harmlessly when it exists
    _compute_limit(bin_dir, project, env, cfg["flow"].compute_slots)
    point_prefect_profile(project, api)
    if not args.no_deploy:
        # The deployments on this machine's pool (prefect.yaml's `variant-gpu` is for GPU nodes' pool).
        dep = subprocess.run([str(bin_dir / "prefect"), "--no-prompt", "deploy", "--name", "ablation",
                              "--name", "variant"], cwd=project,
                             env=env, capture_output=True, text=True)
        if dep.returncode != 0:
            print(f"error: `prefect deploy --name ablation --name variant` failed:\n{dep.stdout[-1500:]}{dep.stderr[-1500:]}",
                  file=sys.stderr)
            return 1
        print("deployments star/ablation, star/variant: ready")
    _start(project, "prefect-worker", [str(bin_dir / "prefect"), "worker", "start", "--pool", pool], env)
    _start(project, "mlflow-ui", [str(bin_dir / "mlflow"), "server", "--host", "127.0.0.1", "--port",
                                  str(args.mlflow_port), "--backend-store-uri", env["MLFLOW_TRACKING_URI"],
                                  "--workers", "1"], env)
    ok = _wait_http(f"http://127.0.0.1:{args.mlflow_port}/health", args.timeout)
    experiment = Tracker(cfg["tracking"], uri=env["MLFLOW_TRACKING_URI"]).experiment_id
    print(f"Prefect UI:  http://127.0.0.1:{args.prefect_port}   (export PREFECT_API_URL={api})")
    print(f"MLflow UI:   {ui_url(f'http://127.0.0.1:{args.mlflow_port}', experiment)}"
          + ("" if ok else "   (not answering yet)"))
    print("run:  PREFECT_API_URL=%s prefect deployment run star/ablation --param ablation=reward" % api)
    print("stop: star serve --stop" + (" (or Ctrl-C here)" if args.foreground else ""))
    if args.foreground and ok:
        return follow(project)
    return 0 if ok else 1
