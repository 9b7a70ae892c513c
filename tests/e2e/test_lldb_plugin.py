"""The LLDB plugin (libbackstep_lldb.so) in real lldb-19.

Drives lldb-19 in-process through its Python SB API (Debian's /usr/bin/python3
with python3-lldb-19) and through `lldb-19 --batch` command files, on
recordings of tests/programs/scenario.c (-O0, static and PIE) and on a
partial-state trace (the static recording exported to a gdb tfile); the other
formats are in test_lldb_plugin_formats.py. The acceptance test compares positions with gdb 13: the same
breakpoints, then reverse-stepi / reverse-next / reverse-finish one command at
a time in both debuggers, `monitor when` (gdb) and `backstep when` (LLDB)
after each, over the same trace.

Run by ctest:
  /usr/bin/python3 test_lldb_plugin.py --backstep BIN --make-example BIN --programs DIR
                                       --plugin libbackstep_lldb.so
"""

import os
import re
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import recorded  # noqa: E402
import util  # noqa: E402
from lldb_plugin import ASAN_PRELOADED, L, PLUGIN, PROGRAMS, Lldb, LldbTestCase, lldb  # noqa: E402


def gdb_positions(env, rec, setup, steps):
    """gdb's positions: after the setup, then after each step."""
    argv = ["gdb", "-q", "-batch", "-nx", "-ex", "set pagination off", "-ex",
            "file " + rec.program, "-ex",
            "target remote | %s serve --stdio %s" % (env.backstep, rec.trace.path)]
    for c in setup + ["monitor when"]:
        argv += ["-ex", c]
    for s in steps:
        argv += ["-ex", s, "-ex", "monitor when"]
    out = util.run(argv, check=False)
    found = [int(p) for p in re.findall(r"^position (\d+) of", out, re.M)]
    assert len(found) == len(steps) + 1, out
    return found


def task_count():
    return len(os.listdir("/proc/self/task"))


def mappings_of(path):
    """How many of this process's mappings and fds show the trace (or its index)."""
    real = os.path.realpath(path)
    with open("/proc/self/maps") as f:
        count = sum(1 for line in f if line.rstrip().endswith((real, real + ".bsidx")))
    for fd in os.listdir("/proc/self/fd"):
        try:
            if os.readlink("/proc/self/fd/" + fd) in (real, real + ".bsidx"):
                count += 1
        except OSError:
            pass
    return count


class Recorded:
    VARIANT = None

    @classmethod
    def setUpClass(cls):
        cls.env = util.Env.from_argv()
        cls.rec = recorded.record(cls.env, PROGRAMS, cls.VARIANT)

    def setUp(self):
        self.lldb = Lldb()
        self.lldb.run("backstep open %s" % self.rec.trace.path)

    def tearDown(self):
        self.lldb.close()

    def compare(self, gdb_setup, lldb_setup, gdb_steps, lldb_steps):
        expected = gdb_positions(self.env, self.rec, gdb_setup, gdb_steps)
        for c in lldb_setup:
            self.lldb.run(c)
        got = [self.lldb.when()]
        for s in lldb_steps:
            self.lldb.run(s)
            got.append(self.lldb.when())
        self.assertEqual(got, expected, "LLDB %s vs gdb %s" % (lldb_steps, gdb_steps))
        return got

    # ---- the acceptance test: the same landing positions as gdb

    def test_reverse_next_from_a_callee_out_to_main_like_gdb(self):
        got = self.compare(["break square", "continue", "continue"],
                           ["breakpoint set -n square", "continue", "continue"],
                           ["reverse-next"] * 8, ["backstep reverse-next"] * 8)
        self.assertEqual(len(set(got)), len(got))  # every step moved

    def test_reverse_next_over_calls_like_gdb(self):
        line = L["squares-store"]
        self.compare(["break scenario.c:%d" % line, "continue", "continue"],
                     ["breakpoint set -f scenario.c -l %d" % line, "continue", "continue",
                      "breakpoint delete 1"],
                     ["delete", "reverse-next", "reverse-next", "reverse-next", "reverse-next",
                      "reverse-next"],
                     ["backstep when", "rn", "backstep rn", "rn", "backstep reverse-next", "rn"])

    def test_reverse_next_over_printf_like_gdb(self):
        line = L["return"]
        self.compare(["break scenario.c:%d" % line, "continue", "delete"],
                     ["breakpoint set -f scenario.c -l %d" % line, "continue",
                      "breakpoint delete 1"],
                     ["reverse-next"] * 4, ["rn"] * 4)

    def test_reverse_finish_and_stepi_like_gdb(self):
        self.compare(["break square", "continue", "continue", "continue", "delete"],
                     ["breakpoint set -n square", "continue", "continue", "continue",
                      "breakpoint delete 1"],
                     ["reverse-stepi", "reverse-stepi", "reverse-finish", "reverse-stepi",
                      "reverse-finish", "stepi", "reverse-stepi"],
                     ["rsi", "backstep rsi", "backstep reverse-finish", "backstep reverse-stepi",
                      "backstep reverse-finish", "thread step-inst", "rsi"])

    def test_reverse_finish_lands_in_the_caller_frame(self):
        self.lldb.run("breakpoint set -n square")
        self.lldb.run("continue")
        out = self.lldb.run("backstep reverse-finish")
        self.assertRegex(out, r"frame #0: 0x[0-9a-f]+ \S+`accumulate\(i=0\) at scenario\.c:%d"
                         % L["accumulate-call"])
        self.assertEqual(self.lldb.frame().GetFunctionName(), "accumulate")
        out = self.lldb.run("backstep reverse-finish")
        self.assertRegex(out, r"`main at scenario\.c:%d" % L["loop-call"])

    # ---- breakpoints and watchpoints both ways

    def test_breakpoints_forward_and_backward(self):
        self.lldb.run("breakpoint set -n accumulate")
        hits = []
        for _ in range(3):
            self.lldb.run("continue")
            hits.append(self.lldb.when())
        self.assertEqual(len(set(hits)), 3)
        out = self.lldb.run("backstep reverse-continue")
        self.assertIn("stop reason = breakpoint 1.1", out)
        self.assertRegex(out, r"accumulate\(i=1\)")
        self.assertEqual(self.lldb.when(), hits[1])
        self.lldb.run("rc")
        self.assertEqual(self.lldb.when(), hits[0])
        out = self.lldb.run("rc")  # no earlier hit: the start of the trace
        self.assertEqual(self.lldb.when(), 0)
        # Forward again: the first hit, and the direction is forward once more.
        self.lldb.run("continue")
        self.assertEqual(self.lldb.when(), hits[0])

    def test_watchpoint_in_reverse_with_old_and_new_values(self):
        self.lldb.run("breakpoint set -f scenario.c -l %d" % L["counter-final"])
        self.lldb.run("continue")
        self.lldb.run("breakpoint delete 1")
        self.lldb.run("watchpoint set variable counter")
        self.lldb.console_text()
        pairs, lines = [], []
        for _ in range(3):
            out = self.lldb.run("backstep reverse-continue")
            self.assertIn("stop reason = watchpoint 1", out)
            console = self.lldb.console_text()
            pairs += [(int(a), int(b)) for a, b in
                      re.findall(r"old value: (\d+)\s+new value: (\d+)", console)]
            lines.append(self.lldb.frame().GetLineEntry().GetLine())
        # Backwards from before the total's write: before i=4's, i=3's, i=2's adds.
        self.assertEqual(pairs, [(135, 118), (118, 108), (108, 103)])
        self.assertEqual(lines, [L["counter-add"]] * 3)
        # The history agrees: the stop is before the write of 103 -> 108.
        history = self.lldb.run("backstep history &counter 8")
        writes = [int(e) for e in re.findall(r"^event (\d+) \(thread 1\) wrote 8 bytes", history,
                                             re.M)]
        self.assertEqual(len(writes), 7, history)
        self.assertEqual(self.lldb.when(), writes[3])
        last = self.lldb.run("backstep last-write &counter 8")
        self.assertRegex(last, r"^event %d \(thread 1\) wrote 8 bytes at 0x[0-9a-f]+: 67 00" %
                         writes[2])

    def test_history_max(self):
        def accesses(text):
            return re.findall(r"^event \d+ \(thread 1\) .*$", text, re.M)
        full = accesses(self.lldb.run("backstep history &counter 8"))
        self.assertGreater(len(full), 2)
        out = self.lldb.run("backstep history &counter 8 --max 2")
        self.assertEqual(accesses(out), full[:2], out)
        self.assertIn("use --max N", out)
        out = self.lldb.run("backstep history --max %d &counter 8" % len(full))
        self.assertEqual(accesses(out), full, out)
        self.assertNotIn("use --max N", out)
        for bad in ["--max 0", "--max", "--max x"]:
            out = self.lldb.run("backstep history &counter 8 " + bad, ok=False)
            self.assertIn("usage: backstep history ADDR [LEN] [--max N]", out)

    # ---- goto / when / info

    def test_goto_when_info(self):
        events = self.rec.events
        self.lldb.run("backstep goto 1000")
        self.assertEqual(self.lldb.when(), 1000)
        self.assertEqual(self.lldb.frame().GetPC(), self.env.dump_rip(self.rec.trace, 1000))
        self.lldb.run("backstep goto 50%")
        self.assertEqual(self.lldb.when(), events // 2)
        self.lldb.run("backstep goto end")
        self.assertEqual(self.lldb.when(), events)
        info = self.lldb.run("backstep info")
        self.assertIn("format:     usercorn", info)
        self.assertIn("events:     %d" % events, info)
        self.assertIn("exe:        " + os.path.abspath(self.rec.program), info)
        self.assertIn("position:   %d" % events, info)

    # ---- errors

    def test_bad_commands(self):
        lines = []
        for command in ["backstep goto %d" % (self.rec.events + 1), "backstep goto 101%",
                        "backstep goto", "backstep goto x", "backstep rsi 3",
                        "backstep reverse-next now", "backstep history",
                        "backstep history &nosuchvar", "backstep last-write 0x1000 0",
                        "backstep open a b c", "backstep open /nonexistent/trace.ucir"]:
            out = self.lldb.run(command, ok=False)
            self.assertEqual(out.count("\n"), 1, "%r: %r" % (command, out))
            lines.append(out)
        self.assertIn("past the end", lines[0])
        self.assertIn("usage: backstep goto N|P%|end", lines[1])
        self.assertIn("usage: backstep reverse-stepi", lines[4])
        self.assertIn("/nonexistent/trace.ucir", lines[10])
        # The position did not move.
        self.assertEqual(self.lldb.when(), 0)
        # Not connected: the process is gone.
        self.lldb.run("process kill")
        # LLDB may publish the exit a moment after `process kill` returns
        # (seen under ASan): wait for it, at most 10 s.
        process = self.lldb.debugger.GetSelectedTarget().GetProcess()
        deadline = time.monotonic() + 10
        while (process.IsValid() and process.GetState() == lldb.eStateStopped
               and time.monotonic() < deadline):
            time.sleep(0.05)
        out = self.lldb.run("backstep when", ok=False)
        self.assertIn("not connected", out)
        # No trace: a target of its own.
        self.lldb.run("target create " + self.rec.program)
        out = self.lldb.run("backstep rsi", ok=False)
        self.assertIn("no trace in the selected target", out)


class StaticTest(Recorded, unittest.TestCase):
    VARIANT = "O0_static"

    def test_two_targets_and_teardown(self):
        pie = recorded.record(self.env, PROGRAMS, "O0_pie")
        threads = task_count()
        self.lldb.run("backstep open %s" % pie.trace.path)
        self.assertEqual(self.lldb.debugger.GetNumTargets(), 2)
        self.assertGreater(task_count(), threads)
        self.assertGreater(mappings_of(pie.trace.path), 0)
        first = self.lldb.debugger.GetTargetAtIndex(0)
        second = self.lldb.debugger.GetTargetAtIndex(1)
        self.lldb.run("backstep goto 500")
        self.lldb.debugger.SetSelectedTarget(first)
        self.lldb.run("backstep goto 700")
        self.assertEqual(self.lldb.when(), 700)
        self.lldb.debugger.SetSelectedTarget(second)
        self.assertEqual(self.lldb.when(), 500)
        self.assertEqual(self.lldb.frame().GetPC(), self.env.dump_rip(pie.trace, 500))
        # Deleting the target stops its stub thread and closes its trace.
        self.lldb.run("target delete 1")
        for _ in range(100):
            if task_count() == threads and mappings_of(pie.trace.path) == 0:
                break
            time.sleep(0.05)
        self.assertEqual(mappings_of(pie.trace.path), 0)
        self.assertEqual(task_count(), threads)
        self.lldb.debugger.SetSelectedTarget(first)
        self.assertEqual(self.lldb.when(), 700)


class PieTest(Recorded, unittest.TestCase):
    VARIANT = "O0_pie"

    def test_reverse_next_over_printf_like_gdb(self):
        # Here gdb 13 stops inside libc: it un-executes printf's `ret` and
        # looks for the entry of the function that returned (vfprintf's
        # internals, reached by jumps), then stops at the first instruction
        # without line information. The plugin skips the call through the
        # recorded stack, as gdb does in the static build (the test above),
        # and lands on the start of the printf line.
        self.lldb.run("breakpoint set -f scenario.c -l %d" % L["return"])
        self.lldb.run("continue")
        self.lldb.run("breakpoint delete 1")
        before = self.lldb.when()
        self.lldb.run("rn")
        frame = self.lldb.frame()
        self.assertEqual(frame.GetFunctionName(), "main")
        self.assertEqual(frame.GetLineEntry().GetLine(), L["print"])
        self.assertEqual(frame.GetPC(), frame.GetLineEntry().GetStartAddress().GetLoadAddress(
            self.lldb.debugger.GetSelectedTarget()))
        self.assertLess(self.lldb.when(), before)


class PartialStateTfile(LldbTestCase):
    """The static recording exported to a tfile: registers and memory only
    where a frame collected them."""

    def test_partial_state_tfile(self):
        rec = recorded.record(self.env, PROGRAMS, "O0_static")
        tfile = os.path.join(self.env.dir, "scenario_static.tf")
        if not os.path.exists(tfile):
            # Exported: `convert --to tfile` refuses a recording (a tfile
            # frame cannot carry the state of the positions before it).
            util.run([self.env.backstep, "export", rec.trace.path, "-o", tfile])
        out = self.lldb.run("backstep open %s %s" % (rec.program, tfile))
        self.assertIn("program " + rec.program, out)
        self.assertIn("format:     tfile", self.lldb.run("backstep info"))
        self.lldb.run("breakpoint set -n square")
        self.lldb.run("continue")
        hit = self.lldb.when()
        self.assertEqual(self.lldb.frame().GetFunctionName(), "square")
        self.lldb.run("continue")
        self.lldb.run("rc")
        self.assertEqual(self.lldb.when(), hit)
        self.lldb.run("rsi")
        self.assertEqual(self.lldb.when(), hit - 1)


class CachedTraceMappedIn(LldbTestCase):
    def test_open_maps_in_the_cached_trace(self):
        # As `serve`, the plugin maps in the whole cached trace at open, so
        # that the session's random reads of the trace take no page fault.
        big = self.env.big_trace()
        self.lldb.run("backstep open %s" % big.path)
        self.assertGreaterEqual(util.resident_bytes(os.getpid(), big.path),
                                os.path.getsize(big.path) - 4096)
        self.lldb.run("si")
        self.assertEqual(self.lldb.when(), 1)


@unittest.skipIf(ASAN_PRELOADED, "the sanitizer build loads the ASan plugin only into this "
                 "process: lldb-19 --batch hangs in setlocale() with libasan preloaded")
class BatchScript(unittest.TestCase):
    """`lldb-19 --batch` with a command file, as a user would run it."""

    @classmethod
    def setUpClass(cls):
        cls.env = util.Env.from_argv()
        cls.rec = recorded.record(cls.env, PROGRAMS, "O0_static")

    def test_batch_session(self):
        path = os.path.join(self.env.dir, "plugin.lldb")
        with open(path, "w") as f:
            f.write("plugin load %s\n" % PLUGIN)
            f.write("help backstep\n")
            f.write("backstep open %s %s\n" % (self.rec.program, self.rec.trace.path))
            f.write("breakpoint set -n square\ncontinue\ncontinue\n")
            f.write("rn\nbackstep when\nbackstep reverse-finish\nbackstep when\n")
        out = util.run(["lldb-19", "--batch", "-o", "command source -e false " + path],
                       check=False)
        for name in ["open", "reverse-stepi", "reverse-next", "reverse-finish",
                     "reverse-continue", "goto", "when", "info", "history", "last-write"]:
            self.assertRegex(out, r"(?m)^\s+%s\s+-- \S" % re.escape(name))
        positions = [int(p) for p in re.findall(r"^position (\d+) of", out, re.M)]
        self.assertEqual(len(positions), 2, out)
        self.assertGreater(positions[0], positions[1])
        self.assertRegex(out, r"accumulate\(i=1\) at scenario\.c:%d" % L["accumulate-call"])
        self.assertNotIn("error:", out)


@unittest.skipIf(ASAN_PRELOADED, "lldb-19 --batch hangs in setlocale() with libasan preloaded")
class BatchTwoTraces(unittest.TestCase):
    """Several traces open at once through the `backstep open` command."""

    def test_second_open_in_the_same_debugger(self):
        env = util.Env.from_argv()
        static = recorded.record(env, PROGRAMS, "O0_static")
        pie = recorded.record(env, PROGRAMS, "O0_pie")
        path = os.path.join(env.dir, "two.lldb")
        with open(path, "w") as f:
            f.write("plugin load %s\n" % PLUGIN)
            f.write("backstep open %s %s\n" % (static.program, static.trace.path))
            f.write("backstep goto 700\n")
            f.write("backstep open %s %s\n" % (pie.program, pie.trace.path))
            f.write("backstep goto 500\nbackstep when\ntarget list\n")
            f.write("target select 0\nbackstep when\n")
        out = util.run(["lldb-19", "--batch", "-o", "command source -e false " + path],
                       check=False)
        self.assertNotIn("error:", out)
        self.assertEqual([int(p) for p in re.findall(r"^position (\d+) of", out, re.M)],
                         [500, 700], out)
        self.assertRegex(out, r"target #0: \S+scenario_O0_static .*state=stopped")
        self.assertRegex(out, r"target #1: \S+scenario_O0_pie .*state=stopped")


if __name__ == "__main__":
    util.main()
