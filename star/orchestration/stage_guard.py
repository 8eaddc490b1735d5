"""Run a stage command as its own process group that ends with whoever started it.

    python -m star.orchestration.stage_guard --parent PID -- dvc repro --single-item grpo

The guard leads a new process group (its pid is the group id, so one `killpg` reaches the stage
and everything it started: dvc, the stage wrapper, the trainer). It asks the kernel for SIGTERM
when its parent dies (PR_SET_PDEATHSIG), so a flow-run process that is SIGKILLed, or a worker
whose flow-run went down with it, does not leave a stage computing on into the next run's
workspace. On SIGTERM/SIGINT/SIGHUP the guard stops the group: SIGTERM, then SIGKILL after a
grace period; its exit status is the command's, or 128 + the signal that stopped it.
"""

from __future__ import annotations

import argparse
import ctypes
import os
import signal
import subprocess
import sys
import time

PR_SET_PDEATHSIG = 1
GRACE_S = 10.0


def _die_with_parent(parent: int) -> None:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    except (OSError, AttributeError):  # not Linux: the next run still stops a leftover group
        return
    if os.getppid() != parent:  # the parent died before the request took effect
        os.kill(os.getpid(), signal.SIGTERM)


def group_members(pgid: int) -> list[int]:
    """The live (not zombie) processes of a process group."""
    found = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat") as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if fields[0] != "Z" and int(fields[2]) == pgid:
            found.append(int(entry.name))
    return found


def stop_group(pgid: int, grace_s: float = GRACE_S, spare: int | None = None) -> bool:
    """SIGTERM every process of the group (but `spare`), SIGKILL what is left after `grace_s`;
    True if any process was there to stop."""
    members = [p for p in group_members(pgid) if p != spare]
    if not members:
        return False
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in members:
            try:
                os.kill(pid, sig)
            except (ProcessLookupError, PermissionError):
                pass
        deadline = time.time() + (grace_s if sig == signal.SIGTERM else 5.0)
        while time.time() < deadline:
            members = [p for p in group_members(pgid) if p != spare]
            if not members:
                return True
            time.sleep(0.2)
    return True


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--parent", type=int, required=True, help="pid whose death stops the command")
    parser.add_argument("cmd", nargs=argparse.REMAINDER, help="-- COMMAND ARGS…")
    args = parser.parse_args(argv)
    cmd = args.cmd[1:] if args.cmd[:1] == ["--"] else args.cmd
    if not cmd:
        parser.error("no command after --")
    if os.getpgid(0) != os.getpid():
        os.setpgid(0, 0)  # the caller normally starts us as a group leader already
    stopping: list[int] = []

    def on_signal(signum, _frame):
        stopping.append(signum)

    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, on_signal)
    _die_with_parent(args.parent)
    proc = subprocess.Popen(cmd)  # same group as the guard
    while True:
        try:
            code = proc.wait(timeout=0.5)
            return code if code >= 0 else 128 - code
        except subprocess.TimeoutExpired:
            pass
        if stopping:
            stop_group(os.getpgid(0), spare=os.getpid())
            proc.poll()
            print(f"stage_guard: stopped the stage's process group (signal {stopping[0]})", file=sys.stderr)
            return 128 + stopping[0]


if __name__ == "__main__":
    sys.exit(main())
