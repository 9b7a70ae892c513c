"""`backstep record` on programs nobody here wrote, as a user runs them.

A shell pipeline whose commands the shell forks and execs: the recorded shell
is followed, its children run untraced and must run exactly as without the
recorder (before, they inherited the recorder's rdtsc trapping and died of
SIGSEGV in ld.so). The program's output on stdout is unchanged (the
recorder's summary goes to stderr) and `backstep record` exits with the
program's status, 128+N when a signal N killed it (as `rr record` does;
test_recorded_threads_signals.py ForkChild checks an exit status).
"""

import os
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import recorded  # noqa: E402
import util  # noqa: E402

PROGRAMS = recorded.programs_dir_from_argv()


def record(env, name, argv, follow=None):
    """Runs `backstep record`; returns the CompletedProcess (stdout, stderr apart)."""
    path = os.path.join(env.dir, name + ".ucir")
    cmd = [env.backstep, "record", "-o", path]
    if follow:
        cmd += ["--follow", follow]
    return subprocess.run(cmd + ["--"] + argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True, timeout=300)


class ShellPipeline(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.env = util.Env.from_argv()

    def test_pipeline_output_unchanged_and_signal_status(self):
        # One recording (the shell is slow to record): a pipeline of execed
        # programs, a program run after it, then the shell kills itself.
        script = ('printf "b\\na\\n" | sort | tr a-z A-Z; /bin/true && echo true-ok; '
                  'kill -TERM $$')
        rec = record(self.env, "pipeline", ["/bin/sh", "-c", script])
        self.assertEqual(rec.stdout, "A\nB\ntrue-ok\n", rec.stderr)
        self.assertIn("(program killed by a signal, signal 15)", rec.stderr)
        self.assertEqual(rec.returncode, 128 + 15, rec.stderr)


if __name__ == "__main__":
    util.main()
