"""lldb-19 against `backstep serve` on recordings of a C program with debug info.

Each test class records tests/programs/scenario.c (-O0, static or PIE) with
`backstep record`, serves it, and runs lldb-19 in batch mode on a command
file: `target create PROG`, `gdb-remote`, then the scenario. LLDB 19 has no
reverse commands, so going back uses the armed monitor commands
(`monitor reverse-stepi`, `monitor direction reverse`, docs/lldb.md).
LLDB loads and slides the program from the served auxv (AT_ENTRY, AT_PHDR).

Run by ctest:
  /usr/bin/python3 test_lldb_recorded.py --backstep BIN --make-example BIN --programs DIR
"""

import contextlib
import os
import re
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import recorded  # noqa: E402
import util  # noqa: E402

PROGRAMS = recorded.programs_dir_from_argv()
L = recorded.LINES
WHEN = "process plugin packet monitor when"
MONITOR = "process plugin packet monitor "
RIP_RE = r"^\s+rip = (0x[0-9a-f]+)"


def positions(text):
    return util.values(r"^position (\d+) of", text)


def frames(text):
    """(function, line) of every `frame #0` LLDB printed, in order."""
    return [(f, int(n)) for f, n in
            re.findall(r"^\s+frame #0: 0x[0-9a-f]+ \w+`(\w+)(?:\(.*\))? at scenario\.c:(\d+)", text,
                       re.M)]


class Scenarios:
    VARIANT = None

    @classmethod
    def setUpClass(cls):
        cls.env = util.Env.from_argv()
        cls.rec = recorded.record(cls.env, PROGRAMS, cls.VARIANT)

    @contextlib.contextmanager
    def lldb(self, commands):
        """LLDB's output; a failed assertion in the `with` body dumps the log."""
        with util.Server(self.env, self.rec.trace) as server:
            yield util.lldb(self.env, server, commands, program=self.rec.program)

    def test_connect_registers_memory(self):
        with self.lldb(["register read rip", "memory read --size 8 --format x --count 1 $rsp",
                        "image list"]) as out:
            self.assertEqual(util.values(RIP_RE, out), [self.env.dump_rip(self.rec.trace, 0)])
            util.expect(self, r"^0x7ffff[0-9a-f]+: 0x0000000000000001$", out)  # argc
            load = recorded.PIE_BASE if "pie" in self.VARIANT else 0x400000
            util.expect(self, r"^\[  0\] \S+ 0x%016x %s" % (load, re.escape(self.rec.program)),
                        out)

    def test_source_breakpoint_variables_memory(self):
        with self.lldb(["breakpoint set -f scenario.c -l %d" % L["counter-add"], "continue",
                        "continue", "frame variable local",
                        "memory read --size 8 --format d --count 1 &counter",
                        "print counter"]) as out:
            util.expect(self, r"stop reason = breakpoint 1\.1", out, count=2)
            self.assertEqual(frames(out), [("accumulate", L["counter-add"])] * 2)
            util.expect(self, r"`accumulate\(i=1\) at scenario\.c:%d" % L["counter-add"], out)
            util.expect(self, r"^\(int\) local = 2$", out)
            util.expect(self, r"^0x[0-9a-f]+: 101$", out)
            util.expect(self, r"^\(long\) 101$", out)

    def test_watchpoint_both_ways(self):
        with self.lldb(["breakpoint set -f scenario.c -l %d" % L["counter-final"], "continue",
                        "breakpoint delete 1", "watchpoint set variable counter", "continue",
                        MONITOR + "direction reverse", "continue", "continue",
                        MONITOR + "direction forward", "continue"]) as out:
            pairs = [(int(a), int(b)) for a, b in
                     re.findall(r"^old value: (\d+)\nnew value: (\d+)$", out, re.M)]
            # Forward: the write of the total; backward: before it, then
            # before i=4's add; forward again: after that add.
            self.assertEqual(pairs, [(135, 35), (35, 135), (135, 118), (118, 135)], out)
            self.assertEqual(frames(out), [("main", L["counter-final"]), ("main", L["print"]),
                                           ("main", L["counter-final"]),
                                           ("accumulate", L["counter-add"]),
                                           ("accumulate", L["squares-store"])])
            util.expect(self, r"stop reason = watchpoint 1", out, count=4)

    def test_stepping_both_ways(self):
        with self.lldb(["breakpoint set -n accumulate", "continue", "continue", WHEN,
                        "thread step-over", "thread step-inst", WHEN, "register read rip",
                        MONITOR + "reverse-stepi", "thread step-inst", WHEN,
                        MONITOR + "direction reverse", "continue", WHEN, "continue",
                        "frame variable i", WHEN,
                        MONITOR + "direction forward", "thread step-inst", WHEN]) as out:
            hit_i1, stepped, back, again_i1, hit_i0, forward = positions(out)
            self.assertGreater(stepped, hit_i1)
            self.assertEqual(back, stepped - 1)
            # Backwards from inside i=1's call: first its own breakpoint, then i=0's.
            self.assertEqual(again_i1, hit_i1)
            self.assertLess(hit_i0, hit_i1)
            self.assertEqual(forward, hit_i0 + 1)
            self.assertEqual(util.values(RIP_RE, out),
                             [self.env.dump_rip(self.rec.trace, stepped)])
            self.assertEqual([line for _, line in frames(out)],
                             [L["accumulate-call"], L["accumulate-call"], L["counter-add"],
                              L["counter-add"], L["counter-add"], L["accumulate-call"],
                              L["accumulate-call"], L["accumulate-call"]])
            util.expect(self, r"^\(int\) i = 0$", out)


    def test_read_watchpoint_and_history_end(self):
        with self.lldb(["breakpoint set -n main", "continue", "breakpoint delete 1",
                        "watchpoint set variable -w read counter", "continue",
                        "watchpoint delete 1", "continue", WHEN, "process status"]) as out:
            # `backstep record` records reads: the first read of counter.
            util.expect(self, r"stop reason = watchpoint 1", out, count=1)
            self.assertEqual(frames(out)[1], ("accumulate", L["counter-add"]))
            # The end of the recording is a stop, never an exit.
            self.assertEqual(positions(out), [self.rec.events])
            self.assertNotIn("exited", out)
            util.expect(self, r"^Process 1 stopped$", out)


class StaticTest(Scenarios, unittest.TestCase):
    VARIANT = "O0_static"


class PieTest(Scenarios, unittest.TestCase):
    VARIANT = "O0_pie"


if __name__ == "__main__":
    util.main()
