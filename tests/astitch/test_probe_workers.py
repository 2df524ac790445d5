"""Issue 38: ``run astitch --jobs N`` killed with SIGKILL left its worker processes and
resource trackers alive, and Ctrl-C printed ``KeyboardInterrupt`` tracebacks from the
workers. The probe's fits now run in the guarded pool of the report's figure workers: a run
is started on a tiny synthetic problem, killed while its workers fit, and no child of it may
survive (with joblib's workers, as before, four did: two workers, two resource trackers)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import psutil
import pytest

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="the kernel's parent-death signal is Linux's")

# slow enough that the workers are still fitting when the run is stopped
SCRIPT = textwrap.dedent("""
    import signal
    import sys

    # Ctrl-C as a terminal's Python gets it, whatever the test runner's process left to its
    # children (a disposition of SIG_IGN and a blocked signal are inherited through exec,
    # and Python then never raises KeyboardInterrupt): said first, then set
    print("SIGINT", signal.getsignal(signal.SIGINT),
          sorted(signal.pthread_sigmask(signal.SIG_BLOCK, [])), file=sys.stderr, flush=True)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, [signal.SIGINT])

    import numpy as np
    from ncprobe.astitch import probe

    rng = np.random.default_rng(0)
    x = rng.normal(size=(1500, 120))
    y = (rng.random(1500) < 0.4).astype(int)
    expr = np.repeat(np.arange(150).astype(str), 10)
    from ncprobe.astitch.linear import within_permutation
    within = within_permutation(expr, y, seed=0, draws=40)
    task = (x, y, x[:300], y[:300], x[:300], y, within, (0.001, 0.01, 0.1, 1.0, 10.0))
    print("fitting", flush=True)
    probe._fit_cells([task] * 400, 2)      # minutes of work: it is stopped long before
""")


def _start() -> tuple[subprocess.Popen, list[psutil.Process]]:
    proc = subprocess.Popen([sys.executable, "-c", SCRIPT], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    parent = psutil.Process(proc.pid)
    deadline = time.monotonic() + 120
    children: list[psutil.Process] = []
    # the two workers (and the resource tracker) started, and the workers busy importing
    while time.monotonic() < deadline:
        children = parent.children(recursive=True)
        if len(children) >= 2:
            break
        time.sleep(0.2)
    assert len(children) >= 2, "the run started no worker"
    time.sleep(3.0)
    assert proc.poll() is None, "the run ended before it could be stopped"
    children = parent.children(recursive=True)
    assert len(children) >= 2
    return proc, children


def _gone(children: list[psutil.Process], timeout: float = 20.0) -> list[psutil.Process]:
    _, alive = psutil.wait_procs(children, timeout=timeout)
    for p in alive:          # never leave the test's own strays behind
        p.kill()
    return alive


def test_a_run_killed_outright_leaves_no_worker_behind() -> None:
    proc, children = _start()
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    proc.communicate()
    alive = _gone(children)
    assert not alive, f"{len(alive)} child process(es) outlived the killed run: " + ", ".join(
        " ".join(p.cmdline()[:3]) for p in alive if p.is_running())


def test_ctrl_c_stops_the_workers_without_their_tracebacks() -> None:
    proc, children = _start()
    os.killpg(proc.pid, signal.SIGINT)       # what a terminal's Ctrl-C does: every process
    _, err = proc.communicate(timeout=120)
    assert proc.returncode != 0, f"the run went on to exit {proc.returncode}: {err[-3000:]}"
    alive = _gone(children)
    assert not alive
    # the run's own KeyboardInterrupt, no worker's (a worker's traceback names its process)
    assert err.count("KeyboardInterrupt") <= 1, err
    assert "SpawnProcess" not in err and "Process " not in err, err
