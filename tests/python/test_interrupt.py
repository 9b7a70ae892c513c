"""Ctrl-C stops an index build inside the module: the call raises
KeyboardInterrupt within a fraction of a second and no index is left
behind (the build runs without the GIL; the waiting thread polls Python's
signal flags and sets core's interrupt flag)."""

import os
import signal
import subprocess
import sys
import time

from conftest import PYTHONPATH, env_path, run

CHILD = """
import sys, time
sys.path.insert(0, {path!r})
import backstep
print("opening", flush=True)
t0 = time.monotonic()
try:
    backstep.open({trace!r}, progress=False)
    print("finished", flush=True)
except KeyboardInterrupt:
    print("interrupted %.3f" % (time.monotonic() - t0), flush=True)
"""


def test_ctrl_c_interrupts_an_index_build(workdir):
    trace = os.path.join(workdir, "big", "trace.bin")
    os.makedirs(os.path.dirname(trace))
    # Large enough that the build (over a second even in two parallel parts
    # on an idle machine) is still running when the signal arrives: with 3e6
    # events it could finish first, and the index was then rightly kept.
    run([env_path("BACKSTEP_MAKE_EXAMPLE"), trace, "--events", "8000000"])
    child = subprocess.Popen([sys.executable, "-c", CHILD.format(path=PYTHONPATH, trace=trace)],
                             stdout=subprocess.PIPE, text=True)
    assert child.stdout.readline().strip() == "opening"
    time.sleep(0.1)
    sent = time.monotonic()
    child.send_signal(signal.SIGINT)
    out, _ = child.communicate(timeout=60)
    assert out.startswith("interrupted"), out
    assert time.monotonic() - sent < 5
    assert not os.path.exists(trace + ".bsidx")
