"""A process killed while DeepSpeed built or loaded its CPU comm op must not stall every later trainer."""

import os
import subprocess
import sys

import pytest


@pytest.mark.skipif(sys.platform != "linux", reason="flock and DeepSpeed's CPU op: Linux")
def test_a_build_lock_left_by_a_killed_process_does_not_stall_the_next_trainer():
    env = dict(os.environ)  # the folder every trainer here uses (built once, so this loads in seconds)
    code = ("from torch.utils.cpp_extension import _get_build_directory; "
            "print(_get_build_directory('deepspeed_shm_comm', False))")
    folder = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                            check=True).stdout.strip()
    baton = os.path.join(folder, "lock")
    open(baton, "w").close()  # what a SIGKILLed build leaves, some minutes ago
    import time

    os.utime(baton, (time.time() - 600, time.time() - 600))
    init = "from star.training.deepspeed_setup import init_distributed; init_distributed(); print('up')"
    env = {k: v for k, v in env.items() if k not in ("RANK", "LOCAL_RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")}
    done = subprocess.run([sys.executable, "-c", init], env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0 and "up" in done.stdout, done.stderr[-2000:]
    assert "a build lock left by a killed process" in done.stderr
    assert not os.path.exists(baton)
