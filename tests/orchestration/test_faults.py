"""Faults end cleanly: a stage's process group dies with its run, and a workspace is held by one run at a time."""

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from star.orchestration.stage_guard import group_members
from star.orchestration.workspace_hold import WorkspaceHold

GUARD = Path(__file__).resolve().parents[2] / "star" / "orchestration" / "stage_guard.py"


def _wait(predicate, timeout=60.0):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if predicate():
            return True
        time.sleep(0.1)
    return False


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat")
    return stat.exists() and stat.read_text().rsplit(")", 1)[1].split()[0] != "Z"


def _grandchild_script(tmp_path: Path) -> list[str]:
    """A stage stand-in: a shell that starts a long sleep (a grandchild of the guard) and records its pid."""
    pidfile = tmp_path / "grandchild.pid"
    return ["sh", "-c", f"sleep 300 & echo $! > {pidfile}; wait"], pidfile


def test_guard_passes_the_commands_exit_status_through():
    done = subprocess.run([sys.executable, str(GUARD), "--parent", str(os.getpid()), "--", "sh", "-c", "exit 3"])
    assert done.returncode == 3


def test_a_stage_dies_with_the_process_that_started_it(tmp_path):
    # A "flow-run process" starts the guarded stage, then is SIGKILLed: nothing of the stage may live on.
    cmd, pidfile = _grandchild_script(tmp_path)
    runner = textwrap.dedent(f"""
        import os, subprocess, sys, time
        p = subprocess.Popen([sys.executable, {str(GUARD)!r}, "--parent", str(os.getpid()), "--", *{cmd!r}],
                             start_new_session=True)
        print(p.pid, flush=True)
        time.sleep(300)
    """)
    flow = subprocess.Popen([sys.executable, "-c", runner], stdout=subprocess.PIPE, text=True)
    guard_pid = int(flow.stdout.readline())
    assert _wait(pidfile.exists) and _wait(lambda: pidfile.read_text().strip() != "")
    grandchild = int(pidfile.read_text())
    assert _alive(grandchild) and guard_pid in group_members(guard_pid)
    flow.kill()
    flow.wait()
    assert _wait(lambda: not _alive(grandchild)), "the stage outlived the run that started it"
    assert _wait(lambda: not group_members(guard_pid))


def test_sigterm_to_the_guard_stops_the_whole_group(tmp_path):
    cmd, pidfile = _grandchild_script(tmp_path)
    guard = subprocess.Popen([sys.executable, str(GUARD), "--parent", str(os.getpid()), "--", *cmd],
                             start_new_session=True, stderr=subprocess.PIPE, text=True)
    assert _wait(lambda: pidfile.exists() and pidfile.read_text().strip() != "")
    grandchild = int(pidfile.read_text())
    guard.send_signal(signal.SIGTERM)
    assert guard.wait(timeout=90) == 128 + signal.SIGTERM
    assert "stopped the stage's process group" in guard.stderr.read()
    assert not _alive(grandchild)


def test_a_second_holder_waits_until_the_first_releases(tmp_path):
    holder = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
        import sys, time
        from star.orchestration.workspace_hold import WorkspaceHold
        with WorkspaceHold({str(tmp_path)!r}, "reward-sum", {{"flow_run": "first"}}) as h:
            h.update(stage="sft")
            print("held", flush=True)
            time.sleep(3)
    """)], stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline().strip() == "held"
    said = []
    start = time.time()
    with WorkspaceHold(tmp_path, "reward-sum", {"flow_run": "second"}, log=said.append, poll_s=0.2) as hold:
        waited = time.time() - start
        assert hold.stale is None  # the first one released cleanly
        assert json.loads(hold.record_path.read_text())["flow_run"] == "second"
    assert holder.wait() == 0
    assert waited > 1.0
    assert said and "held by PID" in said[0] and "flow run first" in said[0] and "at stage sft" in said[0]
    assert not hold.record_path.exists()  # a clean release leaves no record


def test_a_holder_that_dies_leaves_its_record_for_the_next_one(tmp_path):
    holder = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
        import time
        from star.orchestration.workspace_hold import WorkspaceHold
        h = WorkspaceHold({str(tmp_path)!r}, "reward-sum", {{"flow_run": "dead", "mlflow_run": "abc"}}).acquire()
        h.update(stage="grpo", pgid=12345)
        print("held", flush=True)
        time.sleep(300)
    """)], stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline().strip() == "held"
    holder.kill()
    holder.wait()
    with WorkspaceHold(tmp_path, "reward-sum", {"flow_run": "next"}, poll_s=0.2) as hold:
        assert hold.stale["flow_run"] == "dead" and hold.stale["stage"] == "grpo"
        assert hold.stale["mlflow_run"] == "abc" and hold.stale["pgid"] == 12345


def test_a_leftover_stage_is_stopped_only_in_its_own_workspace(tmp_path):
    from star.orchestration.stages import stop_leftover_stage

    ws, other = tmp_path / "ws", tmp_path / "other"
    ws.mkdir(), other.mkdir()
    proc = subprocess.Popen(["sleep", "300"], cwd=ws, start_new_session=True)
    try:
        assert not stop_leftover_stage(proc.pid, other)  # a group working elsewhere is not ours to stop
        assert proc.poll() is None
        assert stop_leftover_stage(proc.pid, ws)
        assert proc.wait(timeout=20) == -signal.SIGTERM
    finally:
        if proc.poll() is None:
            proc.kill()


def test_stage_wrapper_closes_its_run_as_killed_on_sigterm(tmp_path):
    """stage_run, SIGTERMed while its command runs, ends the stage's MLflow run KILLED with the reason."""
    import mlflow

    params = tmp_path / "params.yaml"
    params.write_text(f"tracking: {{tracking_uri: 'sqlite:///{tmp_path}/mlflow.db', experiment: faults, "
                      f"artifact_root: '{tmp_path}/mlruns'}}\n")
    client = mlflow.MlflowClient(f"sqlite:///{tmp_path}/mlflow.db")
    client.search_experiments()  # the store exists (migrated) before the wrapper opens it: no two migrations at once
    env = {**os.environ, "STAR_MLFLOW_PARENT_RUN_ID": ""}
    proc = subprocess.Popen([sys.executable, "-m", "star.orchestration.stage_run", "sft", "--params", str(params),
                             "--project-dir", str(tmp_path), "--",
                             sys.executable, "-c", "import time; time.sleep(300)"], cwd=tmp_path, env=env, start_new_session=True)

    def stage_run():
        try:
            exp = client.get_experiment_by_name("faults")
            runs = client.search_runs([exp.experiment_id], "tags.`star.stage` = 'sft'") if exp else []
        except Exception:
            return None
        return runs[0] if runs else None

    assert _wait(lambda: stage_run() is not None, timeout=180)
    time.sleep(1)
    os.killpg(proc.pid, signal.SIGTERM)
    assert proc.wait(timeout=90) == 143
    run = client.get_run(stage_run().info.run_id)
    assert run.info.status == "KILLED"
    assert run.data.tags["star.failed_stage"] == "sft" and "stopped by SIGTERM" in run.data.tags["star.error"]
