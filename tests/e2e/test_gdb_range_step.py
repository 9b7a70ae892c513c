"""gdb 13's range stepping (`vCont;r`) against `backstep serve`.

The stub lists `r` in its `vCont?` reply, so gdb's `next` and `step` send one
`vCont;r<start>,<end>` per line instead of one `vCont;s` per instruction.
These tests record tests/programs/scenario.c (-O0, static), run the same
`next`/`step` sequence on the live program under gdb (the ground truth, with
software watchpoints), on
the served recording with range stepping, and on the served recording with
`set range-stepping off`, and compare where each command stopped (rip),
what gdb reported (a breakpoint in the middle of a line, a watchpoint's
old and new values), and the packets gdb sent.

Run by ctest:
  /usr/bin/python3 test_gdb_range_step.py --backstep BIN --make-example BIN --programs DIR
"""

import os
import re
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import recorded  # noqa: E402
import util  # noqa: E402

PROGRAMS = recorded.programs_dir_from_argv()
RIP = 'printf "RIP=0x%lx\\n", $rip'

# From main's first line: lines, a `next` over a call (leaves the range into
# the callee: gdb puts a breakpoint at the return and continues), a `step`
# into a call, `next` over a nested call, a breakpoint on the second
# instruction of a line (the range step must stop there), and a watchpoint
# written in the middle of a line.
SEQUENCE = (["next", RIP] * 3 + ["next", RIP, "next", RIP, "step", RIP, "next", RIP]
            + ["python a = gdb.selected_frame().architecture().disassemble("
               "gdb.selected_frame().pc(), count=2)[1]['addr']",
               "python gdb.execute('break *%d' % a)", "python print('MIDLINE=0x%x' % a)",
               "next", RIP, "delete", "watch counter", "next", RIP, "next", RIP, "delete",
               "next", RIP, "next", RIP])


def rips(text):
    return re.findall(r"^RIP=(0x[0-9a-f]+)$", text, re.M)


def reports(text):
    """What gdb reported besides source lines: breakpoint hits, watchpoint values
    (a software watchpoint's "Watchpoint N" read as "Hardware watchpoint N")."""
    text = re.sub(r"^Watchpoint (\d+): ", r"Hardware watchpoint \1: ", text, flags=re.M)
    return re.findall(r"^(Breakpoint \d+, .*|Hardware watchpoint \d+: counter|Old value = .*|"
                      r"New value = .*)$", text, re.M)


def sent(log, prefix):
    with open(log) as f:
        return sum(len(re.findall(r"\$" + re.escape(prefix), line))
                   for line in f if " <- " in line)


class RangeStep(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.env = util.Env.from_argv()
        cls.rec = recorded.record(cls.env, PROGRAMS, "O0_static")
        # Software watchpoints on the live side: some VMs give a process no
        # working debug registers (gdb sets a hardware watchpoint that never
        # triggers), while gdb's single-stepped ones stop where the write was.
        live = ["gdb", "-q", "-batch", "-nx", "-ex", "set pagination off", "-ex",
                "set can-use-hw-watchpoints 0", "-ex",
                "file " + cls.rec.program, "-ex", "break main", "-ex", "run"]
        for c in SEQUENCE:
            live += ["-ex", c]
        cls.live = util.run(live, check=False)
        assert len(rips(cls.live)) == SEQUENCE.count(RIP), cls.live

    def served(self, extra=()):
        with util.Server(self.env, self.rec.trace) as server:
            out = util.gdb(server, list(extra) + ["break main", "continue"] + SEQUENCE)
            return out, server.log

    def test_next_and_step_range_step_and_stop_where_the_program_did(self):
        out, log = self.served()
        self.assertEqual(rips(out), rips(self.live), out)
        self.assertEqual(reports(out), reports(self.live), out)
        util.expect(self, r"^MIDLINE=0x[0-9a-f]+$", out, 1)
        util.expect(self, r"^Breakpoint 2, ", out, 1)
        util.expect(self, r"^Old value = ", out)
        # One range step per line instead of a vCont;s per instruction.
        # gdb single-steps once, off the `break main` breakpoint it stands
        # on (with the breakpoint removed), before its first range step.
        self.assertGreaterEqual(sent(log, "vCont;r"), 8)
        self.assertLessEqual(sent(log, "vCont;s"), 1)

    def test_range_stepping_off_gives_the_same_stops(self):
        out, log = self.served(["set range-stepping off"])
        self.assertEqual(rips(out), rips(self.live), out)
        self.assertEqual(reports(out), reports(self.live), out)
        self.assertEqual(sent(log, "vCont;r"), 0)
        self.assertGreater(sent(log, "vCont;s"), 30)


if __name__ == "__main__":
    util.main()
