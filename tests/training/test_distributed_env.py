"""A process that initialised torch.distributed for itself can still launch stages that do the same."""

import os
import subprocess
import sys

from star.training import deepspeed_setup as dss


def test_a_child_process_gets_its_own_port_not_the_one_this_process_holds():
    dss.init_distributed()  # single process: sets RANK, MASTER_PORT, ... and listens on that port
    code = "from star.training.deepspeed_setup import init_distributed; init_distributed(); print('ok')"
    child = subprocess.run([sys.executable, "-c", code], env=dss.child_env(dict(os.environ)),
                           capture_output=True, text=True, timeout=300)
    assert child.returncode == 0, child.stderr[-2000:]
    assert child.stdout.strip().endswith("ok")


def test_variables_set_before_this_process_started_are_passed_on():
    env = {"PATH": "/bin", "NCCL_DEBUG": "INFO"}
    assert dss.child_env(env) == env
