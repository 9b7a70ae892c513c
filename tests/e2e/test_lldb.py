"""lldb-19 against `backstep serve` on a generated REVEN trace (no debug info).

LLDB 19 has no reverse commands: reverse goes through the armed-move monitor
commands (docs/lldb.md §2.2), triggered by `thread step-inst`.

Run by ctest:  /usr/bin/python3 test_lldb.py --backstep BIN --make-example BIN
"""

import contextlib
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import util  # noqa: E402

MONITOR = "process plugin packet monitor "
WHEN = MONITOR + "when"
RIP_RE = r"^\s*rip = (0x[0-9a-f]+)"


def positions(text):
    return util.values(r"position (\d+) of", text)


class LldbTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.env = util.Env.from_argv()
        cls.trace = cls.env.trace()

    @contextlib.contextmanager
    def lldb(self, commands):
        """LLDB's output; a failed assertion in the `with` body dumps the log."""
        with util.Server(self.env, self.trace) as server:
            yield util.lldb(self.env, server, commands)

    def test_registers_memory_step(self):
        with self.lldb(["register read rip", "memory read --size 1 --count 8 $rsp",
                        "thread step-inst", "register read rip", WHEN]) as out:
            self.assertEqual(util.values(RIP_RE, out),
                             [self.env.dump_rip(self.trace, 0), self.env.dump_rip(self.trace, 1)])
            util.expect(self, r"^0x[0-9a-f]+:( [0-9a-f]{2}){8}", out)
            self.assertEqual(positions(out), [1])

    def test_breakpoint_continue(self):
        t = self.trace
        with self.lldb(["breakpoint set -a 0x%x" % t.far_pc, "continue", "register read rip",
                        WHEN]) as out:
            self.assertEqual(util.values(RIP_RE, out), [t.far_pc])
            self.assertEqual(positions(out), [t.far_pc_event])
            util.expect(self, r"stop reason = breakpoint 1\.1", out)

    def test_reverse_with_armed_moves(self):
        t = self.trace
        with self.lldb([
            MONITOR + "goto 100", "thread step-inst", WHEN,
            MONITOR + "reverse-stepi", "thread step-inst", "register read rip", WHEN,
            MONITOR + "direction reverse", "thread step-inst", WHEN,
            "breakpoint set -a 0x%x" % t.far_pc, MONITOR + "goto end", "thread step-inst",
            "continue", "register read rip", WHEN,
            MONITOR + "direction forward", "thread step-inst", WHEN,
        ]) as out:
            self.assertEqual(positions(out), [100, 99, 98, t.far_pc_event, t.far_pc_event + 1])
            rips = util.values(RIP_RE, out)
            self.assertEqual(rips, [self.env.dump_rip(self.trace, 99), t.far_pc])

    def test_monitor_commands(self):
        t = self.trace
        with self.lldb([MONITOR + "help", MONITOR + "info",
                        MONITOR + "next-write 0x%x %d" % (t.once_address, t.once_size)]) as out:
            util.expect(self, r"last-write ADDR \[LEN\]", out)
            util.expect(self, r"events:\s+%d" % t.events, out)
            util.expect(self, r"event %d \(thread \d+\) wrote" % t.once_event, out)


if __name__ == "__main__":
    util.main()
