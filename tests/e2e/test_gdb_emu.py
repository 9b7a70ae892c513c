"""gdb 13 on recordings made by the emulation engine (`backstep record --engine emu`).

Records tests/programs/scenario.c (-O0, static and PIE) with `--engine emu`
and with `--engine ptrace --cpuid portable`, checks that both recordings
have the same number of events, then drives real gdb against the served
emu recording: reverse-stepi steps back one position at a time and lands on
the previous instruction, and `watch counter` + reverse-continue/continue
stop at the writes with the values the program computes.

Run by ctest:
  /usr/bin/python3 test_gdb_emu.py --backstep BIN --make-example BIN --programs DIR
"""

import os
import re
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import recorded  # noqa: E402
import util  # noqa: E402

PROGRAMS = recorded.programs_dir_from_argv()
L = recorded.LINES
WHEN = "monitor when"


def record(env, variant, engine):
    program = os.path.join(PROGRAMS, "scenario_" + variant)
    path = os.path.join(env.dir, "scenario_%s.%s.ucir" % (variant, engine))
    # --no-vdso: the emu engine hides the vDSO, the ptrace engine must too
    # for the same instructions (ld.so reads the vDSO when it is there).
    argv = [env.backstep, "record", "--engine", engine, "--cpuid", "portable", "--no-vdso",
            "-o", path, "--", program]
    out = util.run(argv)
    assert "total 35 counter 35" in out, out
    util.run([env.backstep, "index", path])
    info = util.run([env.backstep, "info", path])
    events = int(re.search(r"^events:\s+(\d+)", info, re.M).group(1))
    return util.Trace(path, {}), events


def gdb_argv(commands, address):
    argv = ["gdb", "-q", "-batch", "-nx", "-ex", "set pagination off", "-ex", "set confirm off",
            "-ex", "target remote " + address]
    for c in commands:
        argv += ["-ex", c]
    return argv


class Scenarios:
    VARIANT = None

    @classmethod
    def setUpClass(cls):
        cls.env = util.Env.from_argv()
        cls.trace, cls.events = record(cls.env, cls.VARIANT, "emu")
        cls.ptrace_events = record(cls.env, cls.VARIANT, "ptrace")[1]

    def gdb(self, commands):
        with util.Server(self.env, self.trace) as server:
            return util.run(gdb_argv(commands, server.address()), check=False)

    def test_same_events_as_ptrace(self):
        self.assertEqual(self.events, self.ptrace_events)

    def test_reverse_stepi(self):
        out = self.gdb(["break scenario.c:%d" % L["counter-final"], "continue", WHEN,
                        'printf "PC=0x%lx\\n", $pc', "reverse-stepi", WHEN,
                        'printf "PC=0x%lx\\n", $pc', "stepi", WHEN, 'printf "PC=0x%lx\\n", $pc'])
        positions = [int(p) for p in re.findall(r"^position (\d+) of", out, re.M)]
        self.assertEqual(len(positions), 3, out)
        self.assertEqual(positions[1], positions[0] - 1, out)
        self.assertEqual(positions[2], positions[0], out)
        pcs = re.findall(r"^PC=(0x[0-9a-f]+)$", out, re.M)
        self.assertEqual(len(pcs), 3, out)
        self.assertNotEqual(pcs[0], pcs[1], out)
        self.assertEqual(pcs[0], pcs[2], out)

    def test_watch_backward_and_forward(self):
        out = self.gdb(["break scenario.c:%d" % L["counter-final"], "continue", "delete",
                        "watch counter", "reverse-continue", "reverse-continue", "continue",
                        "continue", "continue"])
        old_new = [(int(a), int(b)) for a, b in re.findall(
            r"^Old value = (-?\d+)\nNew value = (-?\d+)$", out, re.M)]
        self.assertEqual(old_new, [(135, 118), (118, 108), (108, 118), (118, 135), (135, 35)],
                         out)


class O0Static(Scenarios, unittest.TestCase):
    VARIANT = "O0_static"


class O0Pie(Scenarios, unittest.TestCase):
    VARIANT = "O0_pie"


if __name__ == "__main__":
    util.main()
