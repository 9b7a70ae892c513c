"""gdb 13 and lldb-19 against `backstep serve` on x64dbg traces written by our
writer: a .trace64 and a .trace32 of a hand-made two-thread program
(core/testing/include/backstep/testing/x64dbg_fixtures.h; tests/tools/make_x64dbg.cc prints its
facts).

Checks: both threads listed, registers <unavailable> before the first full
register dump and known after it, memory and `x/i $pc` from the recorded
bytes, an rwatch hit in reverse (recorded reads), a watchpoint hit in the
other thread, LastError in `backstep dump`. gdb connects with no `set
architecture`: the target description names it.

Run by ctest:  /usr/bin/python3 test_x64dbg.py --backstep BIN --make-example MAKE_X64DBG
"""

import os
import re
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import util  # noqa: E402

WHEN = "monitor when"


def positions(text):
    return util.values(r"^position (\d+) of", text)


def make(env, name, extra):
    path = os.path.join(env.dir, name)
    out = util.run([env.make_example, path] + extra)
    facts = {}
    for line in out.splitlines():
        key, value = line.split()
        facts[key] = int(value, 0)
    util.run([env.backstep, "index", path])
    return util.Trace(path, facts)


def gdb(server, commands):
    # The sanitizer build answers the first packets after it reads the
    # trace, which can take longer than gdb's default 2 s.
    argv = ["gdb", "-q", "-batch", "-nx", "-ex", "set pagination off",
            "-ex", "set remotetimeout 60", "-ex", "target remote " + server.address()]
    for c in commands:
        argv += ["-ex", c]
    return util.run(argv, check=False)


class X64dbgTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.env = util.Env.from_argv()
        cls.t64 = make(cls.env, "program.trace64", [])
        cls.t32 = make(cls.env, "program.trace32", ["--i386"])

    def test_gdb_trace64(self):
        t = self.t64
        with util.Server(self.env, t) as server:
            out = gdb(server, [
                "info registers rip", "p $rax", "p $r8", "x/i $pc", "x/2xw 0x404000",
                # A watchpoint in thread B's stack slot, from thread A at position 0.
                "watch *(int*)0x6ff000", "continue", WHEN, "info threads"])
            try:
                util.expect(self, r"^rip\s+0x401000\s", out)
                util.expect(self, r"^\$1 = 0$", out)
                util.expect(self, r"^\$2 = <unavailable>$", out)  # before the first full dump
                util.expect(self, r"=> 0x401000:\s+mov\s+0x2ff9\(%rip\),%rax", out)
                util.expect(self, r"^0x404000:\s+0x00000000", out)
                util.expect(self, r"^Hardware watchpoint 1: \*\(int\s?\*\)0x6ff000", out)
                util.expect(self, r"\[Switching to Thread 1\.%d\]" % t.thread_b, out)
                self.assertEqual(positions(out), [t.first_b_stack_write + 1])
                util.expect(self, r"Thread 1\.%d " % t.thread_a, out)
                util.expect(self, r"Thread 1\.%d " % t.thread_b, out)
                self.assertNotIn("set architecture", out)
            except AssertionError:
                server.dump()
                raise
        with util.Server(self.env, t) as server:
            out = gdb(server, [
                "monitor goto %d" % t.reverse_from, "stepi", WHEN,
                "rwatch *(int*)0x404000", "reverse-continue", WHEN,
                # After the first full dump r8 is known.
                "p/x $r8", "p/x $xmm0.uint128"])
            try:
                util.expect(self, r"Hardware read watchpoint 1: \*\(int\s?\*\)0x404000", out)
                self.assertEqual(positions(out), [t.reverse_from, t.read_before])
                util.expect(self, r"^\$1 = 0x[12]00[0-9a-f]$", out)
                util.expect(self, r"^\$2 = 0x", out)
            except AssertionError:
                server.dump()
                raise

    def test_gdb_trace32(self):
        """An i386 program: gdb picks the architecture from target.xml; the
        history ends at the last position with a known pc (the registers
        after the last instruction are not in the file)."""
        t = self.t32
        last = t.events - 1
        with util.Server(self.env, t) as server:
            out = gdb(server, [
                "show architecture", "info registers eip", "x/i $pc", "info threads",
                "monitor goto end", "stepi", WHEN, "stepi", WHEN,
                "rwatch *(int*)0x404000", "reverse-continue", WHEN,
                "monitor goto %d" % t.events, "monitor info"])
            try:
                util.expect(self, r"currently \"?i386\"?", out)
                util.expect(self, r"^eip\s+0x401000\s", out)
                util.expect(self, r"=> 0x401000:\s+mov\s+0x404000,%eax", out)
                util.expect(self, r"Thread 1\.%d " % t.thread_b, out)
                util.expect(self, r"No more reverse-execution history", out, count=1)
                self.assertEqual(positions(out), [last, last, t.read_before])
                util.expect(self, r"position %d is after the last position whose pc is known "
                                  r"\(%d\)" % (t.events, last), out)
                util.expect(self, r"^end:\s+%d \(the last position whose pc is known" % last, out)
                self.assertNotIn("PC register is not available", out)
            except AssertionError:
                server.dump()
                raise

    def test_lldb_rwatch_in_reverse(self):
        """lldb-19: a read watchpoint, run backwards, stops before the last
        read of the counter, in the thread that read it."""
        t = self.t64
        with util.Server(self.env, t) as server:
            out = util.lldb(self.env, server, [
                "process plugin packet monitor goto %d" % t.reverse_from, "thread step-inst",
                "watchpoint set expression -w read -s 4 -- 0x404000",
                "process plugin packet monitor direction reverse", "continue",
                "process plugin packet monitor when", "thread list"])
            try:
                util.expect(self, r"stop reason = watchpoint 1", out)
                self.assertEqual(positions(out), [t.read_before])
                util.expect(self, r"\* thread #\d+: tid = (0x%04x|%d), .*stop reason = watchpoint 1"
                            % (t.thread_b, t.thread_b), out)
            except AssertionError:
                server.dump()
                raise

    def test_lldb_trace32(self):
        with util.Server(self.env, self.t32) as server:
            out = util.lldb(self.env, server, ["register read eip", "thread list"])
            try:
                util.expect(self, r"eip = 0x00401000", out)
                util.expect(self, r"tid = (0x%04x|%d)\b" % (self.t32.thread_a, self.t32.thread_a), out)
            except AssertionError:
                server.dump()
                raise

    def test_dump_trace32(self):
        out = util.run([self.env.backstep, "dump", self.t32.path, "--at", "0", "--regs"])
        util.expect(self, r"^eip\s+0x0*401000\b", out)
        out = util.run([self.env.backstep, "dump", self.t32.path, "--at",
                        str(self.t32.full_dump + 1), "--regs"])
        util.expect(self, r"^esi\s+0x", out)

    def test_lldb(self):
        with util.Server(self.env, self.t64) as server:
            out = util.lldb(self.env, server, [
                "register read rip", "memory read -s1 -c8 0x401000", "thread list"])
            try:
                util.expect(self, r"rip = 0x0*401000", out)
                util.expect(self, r"0x00401000: 48 8b 05 f9 2f 00 00 48", out)
                util.expect(self, r"movq\s+0x2ff9\(%rip\), %rax", out)
                util.expect(self, r"tid = (0x01a4|420)\b", out)  # LLDB prints tids in hex or decimal
            except AssertionError:
                server.dump()
                raise

    def test_monitor_shows_lasterror(self):
        """LastError is no gdb register: `monitor system-registers` shows it,
        as `backstep dump` does for the same position and thread."""
        t = self.t64
        with util.Server(self.env, t) as server:
            out = gdb(server, ["monitor system-registers", "monitor goto %d" % (t.full_dump + 1),
                               "stepi", WHEN, "monitor system-registers"])
        util.expect(self, r"^no system register is known here$", out)
        when = re.findall(r"^position (\d+) of \d+ \(thread (\d+)\)", out, re.M)
        self.assertEqual(len(when), 1, out)
        position, thread = when[0]
        dump = util.run([self.env.backstep, "dump", t.path, "--at", position, "--thread", thread,
                         "--regs"])
        want = re.search(r"^lasterror\s+(0x[0-9a-f]+)$", dump, re.M)
        self.assertIsNotNone(want, dump)
        util.expect(self, r"^lasterror\s+%s$" % want.group(1), out)

    def test_dump_shows_lasterror(self):
        out = util.run([self.env.backstep, "dump", self.t64.path, "--at",
                        str(self.t64.full_dump + 1), "--regs"])
        thread = util.values(r"^position \d+ of \d+, thread (\d+)", out)
        self.assertEqual(len(thread), 1, out)
        # Thread A's LastError is 2 (ERROR_FILE_NOT_FOUND), B's 0.
        want = 2 if thread[0] == self.t64.thread_a else 0
        util.expect(self, r"^lasterror\s+0x0*%x$" % want if want else r"^lasterror\s+0x0+$", out)


if __name__ == "__main__":
    util.main()
