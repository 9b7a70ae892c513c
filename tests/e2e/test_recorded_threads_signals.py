"""Threads, signal handlers and fork in recordings: gdb 13 and lldb-19 against
`backstep serve` on tests/programs/threads.c, signals.c (-O0, static and PIE)
and forks.c (-O0 static) recorded with `backstep record`.

threads.c: a producer (thread 1) and a consumer (thread 2) hand items over
under a mutex and both add to `counter` without it (producer +1 at
MARK:producer-add, consumer +1000 at MARK:consumer-add). The recorder runs
one thread at a time; from the end, `watch counter` + `reverse-continue`
must stop at those lines with the thread that wrote selected.

signals.c: SIGUSR1 (raise) and SIGALRM (interrupting pause) handlers both add
to `handled`. From the end, `watch handled` + `reverse-continue` must stop in
each handler, with the signal frame below it in the backtrace.

forks.c: the fork child writes `marker` and exits with 3. Recorded with
`--follow child`, the trace goes on in the child after fork: `watch marker`
stops at the child's write, and the trace ends with the child's exit. With
`--follow parent` (the default), the parent's trace never sees that write:
at the print, `marker` is 0 and the child's status is 3.

worker_signal.c (PIE): a worker thread and a SIGUSR1 handler running on its
stack; lldb-19's `frame variable` and `bt` there equal gdb's, and the
never-written bytes of its stack read as zeros in gdb, `backstep dump --mem`
and the Python module (BACKSTEP_PYTHONPATH) alike.

Run by ctest:
  /usr/bin/python3 test_recorded_threads_signals.py --backstep BIN --make-example BIN
                   --programs DIR
"""

import contextlib
import os
import re
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import recorded  # noqa: E402
import util  # noqa: E402

PROGRAMS = recorded.programs_dir_from_argv()
HERE = os.path.dirname(os.path.abspath(__file__))
MONITOR_LLDB = "process plugin packet monitor "


def marks(name):
    lines = {}
    with open(os.path.join(HERE, "..", "programs", name)) as f:
        for number, text in enumerate(f, 1):
            match = re.search(r"MARK:([a-z0-9-]+)", text)
            if match and number > 5:
                lines[match.group(1)] = number
    return lines


class Recorded:
    NAME = None      # program name in tests/programs
    VARIANT = None
    EXPECT = None    # what the program prints
    FOLLOW = []      # extra `backstep record` options
    STATUS = 0       # `backstep record` exits with the program's status

    @classmethod
    def setUpClass(cls):
        cls.env = util.Env.from_argv()
        cls.program = os.path.join(PROGRAMS, "%s_%s" % (cls.NAME, cls.VARIANT))
        path = os.path.join(cls.env.dir, "%s_%s.ucir" % (cls.NAME, cls.VARIANT))
        rec = subprocess.run([cls.env.backstep, "record", "-o", path] + cls.FOLLOW
                             + ["--", cls.program], stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True, timeout=util.STEP_TIMEOUT)
        out = rec.stdout
        assert cls.EXPECT in out, out
        assert rec.returncode == cls.STATUS, out
        util.run([cls.env.backstep, "index", path])
        cls.trace = util.Trace(path, {})
        cls.L = marks(cls.NAME + ".c")

    @contextlib.contextmanager
    def gdb(self, commands):
        with util.Server(self.env, self.trace) as server:
            argv = ["gdb", "-q", "-batch", "-nx", "-ex", "set pagination off",
                    "-ex", "set confirm off", "-ex", "target remote " + server.address()]
            for c in commands:
                argv += ["-ex", c]
            yield util.run(argv, check=False)

    @contextlib.contextmanager
    def lldb(self, commands):
        with util.Server(self.env, self.trace) as server:
            yield util.lldb(self.env, server, commands, program=self.program)


class Threads(Recorded):
    NAME = "threads"
    EXPECT = "sum 210 counter 20020"

    def test_gdb_watch_in_reverse_selects_the_writer(self):
        steps = ["reverse-continue", "thread"] * 6
        with self.gdb(["break %d" % self.L["print"], "continue", "delete", "info threads",
                       "watch counter"] + steps) as out:
            # At the print (after the join), both threads are listed.
            util.expect(self, r"^\s+2\s+Thread \S+\.2 ", out)
            # Each stop: the line of the write and the thread gdb selected.
            stops = re.findall(r"^Thread (\d+) hit Hardware watchpoint 2: counter\n\n"
                               r"Old value = \d+\nNew value = \d+\n.* at \S*threads\.c:(\d+)\n"
                               r"\d+\t.*\n\[Current thread is (\d+) ", out, re.M)
            self.assertEqual(len(stops), 6, out)
            writer = {self.L["producer-add"]: "1", self.L["consumer-add"]: "2"}
            for hit, line, current in stops:
                self.assertEqual(writer.get(int(line)), hit, out)
                self.assertEqual(current, hit, out)
            # Both threads wrote among the last six writes.
            self.assertEqual({t for t, _, _ in stops}, {"1", "2"}, out)

    def test_lldb_watch_in_reverse_selects_the_writer(self):
        with self.lldb(["breakpoint set -f threads.c -l %d" % self.L["print"], "continue",
                        "breakpoint delete 1", "thread list", "watchpoint set variable counter",
                        MONITOR_LLDB + "direction reverse", "continue", "continue", "continue",
                        "continue", MONITOR_LLDB + "direction forward"]) as out:
            util.expect(self, r"^\s+thread #2: tid = \d+", out)
            stops = re.findall(r"^\* thread #(\d+), .*stop reason = watchpoint 1\n"
                               r"\s+frame #0: .* at threads\.c:(\d+)", out, re.M)
            self.assertEqual(len(stops), 4, out)
            writer = {self.L["producer-add"]: "1", self.L["consumer-add"]: "2"}
            for thread, line in stops:
                self.assertEqual(writer.get(int(line)), thread, out)
            self.assertEqual({t for t, _ in stops}, {"1", "2"}, out)


class Signals(Recorded):
    NAME = "signals"
    EXPECT = "usr1 10 alrm 14 handled 107"

    def test_gdb_watch_in_reverse_stops_in_handlers(self):
        # SIGUSR1 would stop both ways (test_recorded_sigall.py): this is about watchpoints.
        with self.gdb(["handle SIGUSR1 nostop noprint", "break %d" % self.L["print"], "continue",
                       "delete", "watch handled",
                       "reverse-continue", "bt", "reverse-continue", "bt",
                       "reverse-continue"]) as out:
            util.expect(self, r"^Old value = 107$", out)
            util.expect(self, r"^Old value = 7$", out)
            lines = [int(n) for n in re.findall(r"^(\d+)\t", out, re.M)]
            self.assertEqual(lines[1:3], [self.L["alrm-write"], self.L["usr1-write"]], out)
            util.expect(self, r"^#0 .*on_alrm ", out)
            util.expect(self, r"^#0 .*on_usr1 ", out)
            util.expect(self, r"^#1\s+<signal handler called>$", out, count=2)
            util.expect(self, r"^No more reverse-execution history\.", out, count=1)

    def test_lldb_breakpoint_in_handler(self):
        with self.lldb(["breakpoint set -f signals.c -l %d" % self.L["usr1-write"],
                        "breakpoint set -f signals.c -l %d" % self.L["alrm-write"],
                        "continue", "continue", "thread backtrace", "continue"]) as out:
            # LLDB stops at SIGUSR1 first, as on a live process (SIGALRM it passes).
            util.expect(self, r"stop reason = signal SIGUSR1$", out, count=1)
            stops = [int(n) for n in re.findall(r"^\s+frame #0: .* at signals\.c:(\d+)", out,
                                                re.M)]
            self.assertEqual(stops, [self.L["usr1-write"], self.L["alrm-write"]], out)
            util.expect(self, r"frame #1: .*<signal handler called>|frame #1: .*__restore_rt",
                        out)


class WorkerSignal(Recorded, unittest.TestCase):
    """A second thread's variables and backtrace, also in a signal handler
    running on its stack: LLDB reads memory in aligned 512-byte blocks, and
    the block under a thread stack's deepest write held bytes the trace
    left unknown (the 8 MiB stack's zero fill), so LLDB failed where gdb,
    reading just the variable, did not."""
    NAME = "worker_signal"
    VARIANT = "O0_pie"
    EXPECT = "hits 2 total 2051"

    def test_lldb_frame_variable_and_bt_in_a_thread_and_its_handler_equal_gdbs(self):
        stops = ["worker-add", "handler-add"]
        gdb_commands = ["handle SIGUSR1 nostop noprint"]
        lldb_commands = ["process handle SIGUSR1 -s false -n false"]
        for mark in stops:
            gdb_commands += ["break %d" % self.L[mark]]
            lldb_commands += ["breakpoint set -f worker_signal.c -l %d" % self.L[mark]]
        for _ in stops:
            gdb_commands += ["continue", "info args", "bt"]
            lldb_commands += ["continue", "frame variable", "bt"]
        with self.gdb(gdb_commands) as gdb_out, self.lldb(lldb_commands) as lldb_out:
            # The arguments: worker(arg), then on_usr1(sig).
            gdb_args = re.findall(r"^(arg|sig) = (0x[0-9a-f]+|\d+)$", gdb_out, re.M)
            lldb_args = re.findall(r"^\((?:void \*|int)\) (arg|sig) = (0x[0-9a-f]+|\d+)$",
                                   lldb_out, re.M)
            self.assertEqual(gdb_args, [("arg", "0x8"), ("sig", "10")], gdb_out)
            self.assertEqual([(n, int(v, 0)) for n, v in lldb_args],
                             [(n, int(v, 0)) for n, v in gdb_args], lldb_out)
            self.assertNotIn("read memory from", lldb_out)
            # Both backtraces reach the worker frame (arg 8) and start_thread
            # in both stops, through the signal frame in the handler.
            gdb_workers = re.findall(r"^#\d+ .*worker \(arg=0x8\)", gdb_out, re.M)
            lldb_workers = re.findall(r"frame #\d+: .*`worker\(arg=0x0+8\)", lldb_out)
            self.assertEqual(len(gdb_workers), 2, gdb_out)
            # The first stop's line and bt, the handler stop's bt.
            self.assertEqual(len(lldb_workers), 3, lldb_out)
            self.assertEqual(len(re.findall(r"frame #\d+: .*`start_thread", lldb_out)), 2,
                             lldb_out)
            util.expect(self, r"frame #1: .*`__restore_rt", lldb_out)
            util.expect(self, r"^#1\s+<signal handler called>$", gdb_out)

    def test_never_written_stack_bytes_read_as_zeros_everywhere_as_in_gdb(self):
        """64 KiB below the worker's stack pointer, bytes of its 8 MiB stack
        that no event wrote: the trace leaves the stack's zero fill out, and
        every front end (the stub, `backstep dump --mem`, the Python module)
        reads them as the zeros the kernel gave, not as unknown."""
        with self.gdb(["break %d" % self.L["worker-add"], "continue", "monitor info",
                       "printf \"sp=%#lx\\n\", (long) $sp",
                       "x/64xb ((long) $sp - 0x10000) & ~0xf"]) as out:
            position = int(util.expect(self, r"^position:\s+(\d+)", out)[0])
            sp = int(util.expect(self, r"^sp=(0x[0-9a-f]+)$", out)[0], 16)
            gdb_bytes = bytes(int(b, 16) for b in re.findall(r"\t0x([0-9a-f]{2})\b", out))
        address = (sp - 0x10000) & ~0xf
        self.assertEqual(gdb_bytes, bytes(64), out)
        dump = util.run([self.env.backstep, "dump", self.trace.path, "--at", str(position),
                         "--mem", hex(address), "64"])
        lines = re.findall(r"^0x[0-9a-f]{16}:((?: (?:[0-9a-f]{2}|\?\?))+)", dump, re.M)
        self.assertEqual(" ".join(lines).split(), ["%02x" % b for b in gdb_bytes], dump)
        pythonpath = os.environ.get("BACKSTEP_PYTHONPATH")
        if not pythonpath:
            self.skipTest("BACKSTEP_PYTHONPATH unset: the Python module is not built")
        code = ("import sys; sys.path.insert(0, %r); import backstep; "
                "print(backstep.open(%r).at(%d).read(%d, 64).hex())"
                % (pythonpath, self.trace.path, position, address))
        python_out = util.run(["/usr/bin/python3", "-c", code])
        self.assertEqual(python_out.strip(), gdb_bytes.hex(), python_out)


class ForkChild(Recorded, unittest.TestCase):
    NAME = "forks"
    VARIANT = "O0_static"
    EXPECT = "(program exited, status 3)"
    STATUS = 3
    FOLLOW = ["--follow", "child"]

    def test_gdb_watch_finds_the_childs_write(self):
        with self.gdb(["watch marker", "continue", "info threads", "continue",
                       "reverse-continue", "reverse-continue"]) as out:
            util.expect(self, r"^Old value = 0\nNew value = 24589$", out, count=1)
            # Forwards, gdb reports the statement after the store; in reverse
            # the store's own line.
            lines = [int(n) for n in re.findall(r"^(\d+)\t", out, re.M)]
            self.assertEqual(lines, [self.L["child-write"] + 1, self.L["child-write"]], out)
            # One thread (the child goes on in the parent's thread), then the
            # end of the trace (the child's exit), back to the write, then
            # back past it to the start.
            util.expect(self, r"^\* 1\s+Thread ", out)
            util.expect(self, r"^Old value = 24589\nNew value = 0$", out, count=1)
            util.expect(self, r"^No more reverse-execution history\.", out, count=2)

    def test_lldb_breakpoint_in_the_child(self):
        with self.lldb(["breakpoint set -f forks.c -l %d" % self.L["child-write"], "continue",
                        "print marker", "next", "print marker"]) as out:
            util.expect(self, r"^\s+frame #0: .* at forks\.c:%d" % self.L["child-write"], out)
            util.expect(self, r"^\(long\) 0$", out)
            util.expect(self, r"^\(long\) 24589$", out)


class ForkParent(Recorded, unittest.TestCase):
    NAME = "forks"
    VARIANT = "O0_static"
    EXPECT = "(program exited, status 0)"

    def test_gdb_the_parent_never_sees_the_childs_write(self):
        with self.gdb(["break %d" % self.L["print"], "continue", "print marker",
                       "print status >> 8", "watch marker", "reverse-continue"]) as out:
            util.expect(self, r"^\$1 = 0$", out)
            util.expect(self, r"^\$2 = 3$", out)
            util.expect(self, r"^No more reverse-execution history\.", out, count=1)
            self.assertNotIn("New value", out)


class Execs(unittest.TestCase):
    """execs.c (-O0 static) forks; its child execs loop.c (-O0 PIE, dynamic).
    Recorded with --follow child, the trace holds two images: gdb stops at
    the exec (`exec:` stop reply), loads loop's symbols, stops at a
    breakpoint in it and executes in reverse there, and reverse-continuing
    past the exec brings execs's symbols back. Under the recorder, with
    either --follow, the program prints what it prints untraced and
    `backstep record` exits with the recorded process's status."""

    @classmethod
    def setUpClass(cls):
        cls.env = util.Env.from_argv()
        cls.parent = os.path.abspath(os.path.join(PROGRAMS, "execs_O0_static"))
        cls.child = os.path.abspath(os.path.join(PROGRAMS, "loop_O0_pie"))
        untraced = subprocess.run([cls.parent, cls.child], stdout=subprocess.PIPE, text=True,
                                  timeout=util.STEP_TIMEOUT)
        cls.untraced = (untraced.stdout, untraced.returncode)
        cls.recorded = {}
        for follow in ("parent", "child"):
            path = os.path.join(cls.env.dir, "execs_%s.ucir" % follow)
            rec = subprocess.run([cls.env.backstep, "record", "-o", path, "--follow", follow,
                                  "--", cls.parent, cls.child], stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True, timeout=util.STEP_TIMEOUT)
            cls.recorded[follow] = (rec.stdout, rec.returncode, rec.stderr, path)
        util.run([cls.env.backstep, "index", cls.recorded["child"][3]])
        cls.trace = util.Trace(cls.recorded["child"][3], {})

    def test_output_and_status_are_unchanged(self):
        stdout, status = self.untraced
        self.assertRegex(stdout, r"^\d+ \d+ [\d.]+\nchild status %d\n$" % status)
        for follow in ("parent", "child"):
            out, code, err, _ = self.recorded[follow]
            self.assertEqual((out, code), (stdout, status), err)
        # The child's trace went on into loop: its exit is the trace's end.
        self.assertIn("(program exited, status %d)" % status, self.recorded["child"][2])

    def test_gdb_breaks_in_the_execd_program_and_reverses_across_the_exec(self):
        with util.Server(self.env, self.trace) as server:
            out = util.run(["gdb", "-q", "-batch", "-nx", "-ex", "set pagination off",
                            "-ex", "set confirm off", "-ex", "set breakpoint pending on",
                            "-ex", "target remote " + server.address(),
                            "-ex", "info symbol $pc",
                            "-ex", "break accumulate", "-ex", "continue",
                            "-ex", "print n", "-ex", "info proc exe",
                            "-ex", "info sharedlibrary", "-ex", "continue", "-ex", "print n",
                            "-ex", "print counter",
                            "-ex", "reverse-continue", "-ex", "print n",
                            "-ex", "reverse-stepi", "-ex", "info symbol $pc",
                            "-ex", "reverse-continue", "-ex", "info symbol $pc",
                            "-ex", "continue", "-ex", "print n"], check=False)
        parent, child = re.escape(self.parent), re.escape(self.child)
        # At the start and back there: execs's symbols (its _start).
        util.expect(self, r"^_start in section \.text(?: of (?:target:)?%s)?$" % parent, out,
                    count=2)
        # The exec, forward twice and backward once.
        util.expect(self, r"is executing new program: %s$" % child, out, count=2)
        util.expect(self, r"is executing new program: %s$" % parent, out, count=1)
        stops = re.findall(r"^Breakpoint 1, accumulate \(n=(\d+)\) at \S*loop\.c:\d+", out,
                           re.M)
        self.assertEqual(stops, ["100", "101", "100", "100"], out)
        values = re.findall(r"^\$\d+ = (\d+)$", out, re.M)
        self.assertEqual(values, ["100", "101", "100", "100", "100"], out)
        # In loop: its executable (/proc/PID/exe) and its libraries.
        util.expect(self, r"^exe = '%s'$" % child, out)
        util.expect(self, r"^0x[0-9a-f]+\s+0x[0-9a-f]+\s+Yes\s+\S*/libc\.so\.6$", out)
        # One instruction back: in accumulate's prologue, with loop's symbols.
        util.expect(self, r"^accumulate \+ \d+ in section \.text of (?:target:)?%s$" % child,
                    out)
        util.expect(self, r"^No more reverse-execution history\.", out, count=1)


class ThreadsStatic(Threads, unittest.TestCase):
    VARIANT = "O0_static"


class ThreadsPie(Threads, unittest.TestCase):
    VARIANT = "O0_pie"


class SignalsStatic(Signals, unittest.TestCase):
    VARIANT = "O0_static"


class SignalsPie(Signals, unittest.TestCase):
    VARIANT = "O0_pie"


if __name__ == "__main__":
    util.main()
