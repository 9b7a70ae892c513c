"""gdb 13 against `backstep serve` on recordings of a C program with debug info.

Each test class records tests/programs/scenario.c (-O0, static or PIE) with
`backstep record`, serves the recording and drives real gdb in batch mode,
asserting on what gdb prints: source lines, variable values, watchpoint
Old/New values, history ends. gdb is never given the program: it finds it
through qXfer:exec-file and relocates the PIE through qXfer:auxv (AT_ENTRY),
except in test_stdio_with_file, which loads it explicitly.

Run by ctest:
  /usr/bin/python3 test_gdb_recorded.py --backstep BIN --make-example BIN --programs DIR
"""

import contextlib
import os
import re
import signal
import subprocess
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import recorded  # noqa: E402
import util  # noqa: E402

PROGRAMS = recorded.programs_dir_from_argv()
L = recorded.LINES
RIP = 'printf "RIP=0x%lx\\n", $rip'
WHEN = "monitor when"
NO_HISTORY = r"^No more reverse-execution history\."
KEYFRAME = 2048  # the index's keyframe interval (core/src/index/index_builder.h)


def positions(text):
    return util.values(r"^position (\d+) of", text)


def source_lines(text):
    """Line numbers of the source lines gdb printed, in order."""
    return [int(n) for n in re.findall(r"^(\d+)\t", text, re.M)]


def gdb_argv(commands, connect, program=None):
    argv = ["gdb", "-q", "-batch", "-nx", "-ex", "set pagination off", "-ex", "set confirm off"]
    if program:
        argv += ["-ex", "file " + program]
    argv += ["-ex", connect]
    for c in commands:
        argv += ["-ex", c]
    return argv


class Scenarios:
    """The scenarios; subclasses name the build (VARIANT)."""

    VARIANT = None

    @classmethod
    def setUpClass(cls):
        cls.env = util.Env.from_argv()
        cls.rec = recorded.record(cls.env, PROGRAMS, cls.VARIANT)

    @contextlib.contextmanager
    def gdb(self, commands):
        """gdb's output; a failed assertion in the `with` body dumps the log."""
        with util.Server(self.env, self.rec.trace) as server:
            yield util.run(gdb_argv(commands, "target remote " + server.address()),
                           check=False)

    def test_connect_registers_memory_auxv(self):
        with self.gdb(["info registers rip rsp", "x/2gx $rsp", "info auxv", RIP]) as out:
            # Found and loaded through qXfer:exec-file.
            util.expect(self, r"^Reading symbols from (target:)?%s\.\.\." % re.escape(self.rec.program), out)
            self.assertEqual(util.values(r"RIP=(0x[0-9a-f]+)", out),
                             [self.env.dump_rip(self.rec.trace, 0)])
            util.expect(self, r"^rsp\s+0x7ffff", out)
            # The initial stack: argc = 1.
            util.expect(self, r"^0x[0-9a-f]+:\s+0x0000000000000001\s+0x00007fff", out)
            self.assertEqual(util.values(r"^9\s+AT_ENTRY\s.*?(0x[0-9a-f]+)$", out),
                             [self.rec.entry])
            util.expect(self, r"AT_EXECFN\s.*\"%s\"" % re.escape(self.rec.program), out)

    def test_source_breakpoints_and_memory(self):
        with self.gdb(["break scenario.c:%d" % L["counter-add"], "break square", "continue",
                       "continue", "print counter", "x/dg &counter", "bt"]) as out:
            if "pie" in self.VARIANT:  # relocated to where the recording ran
                util.expect(self, r"^Breakpoint 1 at 0x5555555[0-9a-f]+: file .*scenario\.c", out)
            util.expect(self, r"^Breakpoint 2, square \(x=0\) at .*scenario\.c:%d$"
                        % L["square-body"], out)
            util.expect(self, r"^Breakpoint 1, accumulate \(i=0\) at .*scenario\.c:%d$"
                        % L["counter-add"], out)
            util.expect(self, r"^\$1 = 100$", out)
            util.expect(self, r"^0x[0-9a-f]+ <counter>:\s+100$", out)
            util.expect(self, r"^#1 .*main \(\) at .*scenario\.c:%d$" % L["loop-call"], out)

    def test_stepi_across_a_keyframe(self):
        start = KEYFRAME - 2
        with self.gdb(["monitor goto %d" % start, "stepi", WHEN, RIP,
                       "stepi", "stepi", "stepi", WHEN, RIP,
                       "reverse-stepi", "reverse-stepi", "reverse-stepi", WHEN, RIP]) as out:
            self.assertEqual(positions(out), [start, start + 3, start])
            self.assertEqual(util.values(r"RIP=(0x[0-9a-f]+)", out),
                             [self.env.dump_rip(self.rec.trace, p)
                              for p in (start, start + 3, start)])

    def test_reverse_continue_to_breakpoint(self):
        with self.gdb(["break accumulate", "monitor goto end", "stepi", "reverse-continue",
                       "reverse-continue", "print counter"]) as out:
            util.expect(self, r"^Breakpoint 1, accumulate \(i=4\) at .*scenario\.c:%d$"
                        % L["accumulate-call"], out)
            util.expect(self, r"^Breakpoint 1, accumulate \(i=3\) at .*scenario\.c:%d$"
                        % L["accumulate-call"], out)
            util.expect(self, r"^\$1 = 108$", out)  # before i=3 adds 10

    def test_next_reverse_next_reverse_finish(self):
        with self.gdb(["break accumulate", "continue", "next", "next", "reverse-next",
                       "print local", "delete", "reverse-finish", "next", "reverse-next",
                       "print i"]) as out:
            self.assertEqual(source_lines(out),
                             [L["accumulate-call"], L["counter-add"], L["squares-store"],
                              L["counter-add"], L["loop-call"], L["loop-call"] - 1,
                              L["loop-call"]])
            util.expect(self, r"^0x[0-9a-f]+ in main \(\) at .*scenario\.c:%d$" % L["loop-call"],
                        out)
            util.expect(self, r"^\$1 = 1$", out)  # local = square(0) + 1
            util.expect(self, r"^\$2 = 0$", out)

    def test_watch_backward_and_forward(self):
        with self.gdb(["break scenario.c:%d" % L["counter-final"], "continue", "delete",
                       "watch counter", "reverse-continue", "reverse-continue", "continue",
                       "continue", "continue"]) as out:
            old_new = [(int(a), int(b)) for a, b in re.findall(
                r"^Old value = (-?\d+)\nNew value = (-?\d+)$", out, re.M)]
            # Backwards gdb shows the value before the stop as Old.
            self.assertEqual(old_new, [(135, 118), (118, 108), (108, 118), (118, 135),
                                       (135, 35)], out)
            frames = re.findall(r"^(?:Breakpoint \d+, )?(?:0x[0-9a-f]+ in )?(\w+) \(.*\) "
                                r"at .*scenario\.c:(\d+)$", out, re.M)
            self.assertEqual([(f, int(n)) for f, n in frames],
                             [("main", L["counter-final"]),
                              ("accumulate", L["counter-add"]), ("accumulate", L["counter-add"]),
                              ("accumulate", L["squares-store"]),
                              ("accumulate", L["squares-store"]), ("main", L["print"])])

    def test_read_watchpoints(self):
        # `backstep record` records reads: the first read of counter is
        # i=0's `counter += local` (100), the next access its write (101).
        with self.gdb(["rwatch counter", "continue", "delete", "awatch counter", "continue",
                       WHEN, "monitor info"]) as out:
            util.expect(self, r"^Hardware read watchpoint 1: counter\n\nValue = 100$", out)
            util.expect(self, r"^Hardware access \(read/write\) watchpoint 2: counter\n\n"
                        r"Old value = 100\nNew value = 101$", out)
            util.expect(self, r"^reads:\s+recorded", out)
            # Reported after each access: the read is inside the statement,
            # the store is its last instruction.
            self.assertEqual(source_lines(out), [L["counter-add"], L["squares-store"]])

    def test_history_ends(self):
        with self.gdb(["reverse-stepi", WHEN, "continue", WHEN, "stepi", WHEN,
                       "reverse-continue", WHEN]) as out:
            util.expect(self, NO_HISTORY, out, count=4)
            self.assertEqual(positions(out), [0, self.rec.events, self.rec.events, 0])
            self.assertNotIn("exited", out)

    def test_shared_libraries(self):
        # The PIE's libraries come from the dynamic linker's list in the
        # recorded memory (found through AT_PHDR/AT_BASE of the served auxv).
        with self.gdb(["break square", "continue", "info sharedlibrary", "bt 1"]) as out:
            util.expect(self, r"^Breakpoint 1, square \(x=0\)", out)
            loaded = r"^0x00007ffff[0-9a-f]+\s+0x00007ffff[0-9a-f]+\s+Yes\s+\S*"
            if "pie" in self.VARIANT:
                util.expect(self, loaded + r"libc\.so\.6$", out)
                util.expect(self, loaded + r"ld-linux", out)
            else:
                self.assertNotIn("libc.so", out)  # static: only the vDSO

    def test_info_threads(self):
        with self.gdb(["break square", "continue", "info threads"]) as out:
            util.expect(self, r"^\* 1\s+Thread 1\.1\s+square \(x=0\) at .*scenario\.c:%d$"
                        % L["square-body"], out)

    def test_monitor_commands(self):
        def at_counter(command):
            return 'eval "monitor %s %%p 8", &counter' % command
        with self.gdb([
            "monitor help", "monitor info", WHEN,
            "monitor goto 100", "stepi", WHEN,
            "monitor reverse-stepi", "stepi", WHEN,
            "monitor direction reverse", "stepi", WHEN, "monitor direction forward",
            "monitor goto 50%", "stepi", WHEN,
            at_counter("next-write"), "monitor goto end", "stepi", at_counter("last-write"),
            at_counter("history"), "monitor watch-filter all",
            "monitor watch-filter changes", "monitor frobnicate",
        ]) as out:
            for name in ["help", "info", "when", "goto", "reverse-stepi", "direction",
                         "last-write", "next-write", "history", "watch-filter"]:
                util.expect(self, r"^  %s\b" % name, out)
            util.expect(self, r"^format:\s+usercorn", out)
            util.expect(self, r"^exe:\s+%s$" % re.escape(self.rec.program), out)
            self.assertEqual(positions(out), [0, 100, 99, 98, self.rec.events // 2])
            writes = re.findall(r"^event \d+ \(thread 1\) wrote 8 bytes at 0x[0-9a-f]+: (.*)$",
                                out, re.M)
            # next-write from 50%: counter = 100; last-write: 35; history: all 7.
            values = [int(w.split()[0], 16) for w in writes]
            self.assertEqual(values, [100, 35, 100, 101, 103, 108, 118, 135, 35])
            util.expect(self, r"^watch-filter: all", out)
            util.expect(self, r"unknown monitor command 'frobnicate'", out)

    def test_two_clients_at_once(self):
        with util.Server(self.env, self.rec.trace) as server:
            connect = "target remote " + server.address()
            a = subprocess.Popen(gdb_argv(["break accumulate", "continue", "continue", "continue",
                                           "shell sleep 2", WHEN, "print i"], connect),
                                 stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            time.sleep(0.5)
            b = subprocess.Popen(gdb_argv(["break square", "continue", WHEN, "print x"], connect),
                                 stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            out_b, _ = b.communicate(timeout=util.STEP_TIMEOUT)
            out_a, _ = a.communicate(timeout=util.STEP_TIMEOUT)
            util.expect(self, r"^\$1 = 2$", out_a)
            util.expect(self, r"^\$1 = 0$", out_b)
            pa, pb = positions(out_a), positions(out_b)
            self.assertEqual(len(pa), 1, out_a)
            self.assertEqual(len(pb), 1, out_b)
            self.assertLess(pb[0], pa[0])
            util.expect(self, r"client 2 connected", "".join(server.stderr_lines))

    def test_interrupt_a_long_reverse_continue(self):
        # A software watchpoint makes gdb reverse-step one instruction per
        # `bs` from the end of the trace: long enough to interrupt with
        # SIGINT, as Ctrl-C in gdb does.
        with util.Server(self.env, self.rec.trace) as server:
            argv = gdb_argv(["monitor goto end", "stepi", "watch $rax == 0x123456789",
                             "echo REVERSING\\n", "reverse-continue", WHEN, RIP],
                            "target remote " + server.address())
            proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                    text=True, preexec_fn=lambda: signal.signal(
                                        signal.SIGINT, signal.SIG_DFL))
            lines = []
            started = threading.Event()

            def pump():
                for line in proc.stdout:
                    lines.append(line)
                    if line.startswith("REVERSING"):
                        started.set()
            reader = threading.Thread(target=pump, daemon=True)
            reader.start()
            self.assertTrue(started.wait(util.STEP_TIMEOUT), "".join(lines))
            time.sleep(0.3)
            proc.send_signal(signal.SIGINT)
            proc.wait(util.STEP_TIMEOUT)
            reader.join(util.STEP_TIMEOUT)
            proc.stdout.close()
            out = "".join(lines)
            util.expect(self, r"^Program received signal SIGINT, Interrupt\.$", out)
            where = positions(out)
            self.assertEqual(len(where), 1, out)
            self.assertTrue(0 < where[0] < self.rec.events, out)
            self.assertEqual(util.values(r"RIP=(0x[0-9a-f]+)", out),
                             [self.env.dump_rip(self.rec.trace, where[0])])

    def test_stdio_with_file(self):
        # gdb waits `remotetimeout` (2 s) for the first reply, which comes once
        # the trace is open: the sanitizer build at load can take longer.
        connect = "target remote | %s serve --stdio %s" % (self.env.backstep, self.rec.trace.path)
        argv = gdb_argv(["break accumulate", "continue", "continue", "print i",
                         "reverse-continue", "print i"], connect, self.rec.program)
        argv[argv.index(connect) - 1:argv.index(connect) - 1] = ["-ex", "set remotetimeout 30"]
        out = util.run(argv, check=False)
        util.expect(self, r"^Breakpoint 1, accumulate \(i=1\)", out)
        util.expect(self, r"^\$1 = 1$", out)
        util.expect(self, r"^\$2 = 0$", out)


class StaticTest(Scenarios, unittest.TestCase):
    VARIANT = "O0_static"


class PieTest(Scenarios, unittest.TestCase):
    VARIANT = "O0_pie"


if __name__ == "__main__":
    util.main()
