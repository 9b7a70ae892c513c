"""Signals in gdb 13 against `backstep serve`, side by side with gdb's own
`record full`, on tests/programs/sigall.c (-O0, static): a handler for every
catchable signal, each sent by the program to itself in turn, SIGTSTP,
SIGTTIN and SIGTTOU included (after gdb's gdb.reverse/sigall-reverse).

The program is recorded whole by `backstep record`. With `handle SIGx stop
print` for every signal and a breakpoint on `kill`, both sides run from main
to the final print with `continue`, then back with `reverse-continue`; the
stops (breakpoints and "Program received signal ...") must come in the same
order on both sides, and $_siginfo.si_signo must be the signal's number at
each of backstep's signal stops. `record full` runs with glibc's AVX-512 and
AVX2 string functions masked (GLIBC_TUNABLES): it cannot record them.

Run by ctest:
  /usr/bin/python3 test_recorded_sigall.py --backstep BIN --make-example BIN --programs DIR
"""

import argparse
import os
import re
import signal
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import recorded  # noqa: E402
import util  # noqa: E402

_parser = argparse.ArgumentParser()
_parser.add_argument("--plugin")  # libbackstep_lldb.so: the LLDB tests
_args, _rest = _parser.parse_known_args()
sys.argv[1:] = _rest
PLUGIN = os.path.abspath(_args.plugin) if _args.plugin else None
PROGRAMS = recorded.programs_dir_from_argv()
HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.join(HERE, "..", "programs", "sigall.c")
# The order in which sigall.c sends them (its SIGNAL_LIST).
SIGNALS = ["HUP", "QUIT", "ILL", "ABRT", "BUS", "FPE", "USR1", "SEGV", "USR2", "PIPE", "ALRM",
           "TERM", "CHLD", "CONT", "TSTP", "TTIN", "TTOU", "URG", "XCPU", "XFSZ", "VTALRM",
           "PROF", "WINCH", "IO", "PWR", "SYS"]
TUNABLES = "glibc.cpu.hwcaps=-AVX512F,-AVX512BW,-AVX512VL,-AVX2,-ERMS"


def print_line():
    with open(SOURCE) as f:
        for number, text in enumerate(f, 1):
            if "MARK:print" in text:
                return number
    raise AssertionError("no MARK:print in " + SOURCE)


def stops(out):
    """The stops gdb reported, in order: ("signal", "SIGHUP") or ("break", "kill")."""
    found = []
    for match in re.finditer(r"^Program received signal (SIG\w+), |^Breakpoint \d+, (?:0x\w+ in )?(\w+) ",
                             out, re.M):
        found.append(("signal", match.group(1)) if match.group(1) else ("break", match.group(2)))
    return found


class SigallTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.env = util.Env.from_argv()
        cls.program = os.path.join(PROGRAMS, "sigall_O0_static")
        path = os.path.join(cls.env.dir, "sigall.ucir")
        out = util.run([cls.env.backstep, "record", "-o", path, "--", cls.program])
        assert "delivered %d" % len(SIGNALS) in out, out
        cls.record_output = out
        cls.trace = util.Trace(path, {})
        cls.line = print_line()
        n = len(SIGNALS)
        # From main: n times (kill, signal), then the print; back: n times
        # (signal, kill).
        cls.commands = (["handle SIG%s stop print" % s for s in SIGNALS]
                        + ["break kill", "break %d" % cls.line]
                        + ["continue"] * (2 * n + 1) + ["reverse-continue"] * (2 * n))

    def test_record_resumes_a_default_stop(self):
        # `sigall stop`: SIGTSTP with its default action, which would stop the
        # process; the recorder says so, resumes it, and records the signal.
        path = os.path.join(self.env.dir, "sigall_stop.ucir")
        out = util.run([self.env.backstep, "record", "-o", path, "--", self.program, "stop"])
        util.expect(self, r"SIGTSTP stopped the program \(default action\); the recorder "
                    r"resumed it", out)
        util.expect(self, r"^resumed$", out)
        trace = util.Trace(path, {})
        with util.Server(self.env, trace) as server:
            out = util.gdb(server, ["handle SIGTSTP stop print", "continue",
                                    "print $_siginfo.si_signo", "continue", "reverse-continue"])
        self.assertEqual(stops(out), [("signal", "SIGTSTP")] * 2, out)
        util.expect(self, r"^\$1 = %d$" % signal.SIGTSTP, out)

    def test_gdb_stops_like_record_full(self):
        with util.Server(self.env, self.trace) as server:
            ours = util.gdb(server, ["break main", "continue", "delete"] + self.commands)
        env = dict(os.environ, GLIBC_TUNABLES=TUNABLES)
        argv = ["gdb", "-q", "-batch", "-nx", "-ex", "set pagination off", "-ex", "break main",
                "-ex", "run", "-ex", "delete", "-ex", "record full"]
        for c in self.commands:
            argv += ["-ex", c]
        theirs = subprocess.run(argv + [self.program], stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True, timeout=util.STEP_TIMEOUT,
                                env=env).stdout
        expected = [("break", "main")]
        for name in SIGNALS:
            expected += [("break", "kill"), ("signal", "SIG" + name)]
        expected.append(("break", "main"))
        for name in reversed(SIGNALS):
            expected += [("signal", "SIG" + name), ("break", "kill")]
        self.assertEqual(stops(theirs), expected, theirs)
        self.assertEqual(stops(ours), expected, ours)

    def test_gdb_siginfo_at_each_signal_stop(self):
        commands = ["handle SIG%s stop print" % s for s in SIGNALS]
        for _ in SIGNALS:
            commands += ["continue", "print $_siginfo.si_signo"]
        for _ in SIGNALS:
            commands += ["reverse-continue", "print $_siginfo.si_signo"]
        with util.Server(self.env, self.trace) as server:
            out = util.gdb(server, commands)
        names = [s for _, s in stops(out)]
        self.assertEqual(names, ["SIG" + s for s in SIGNALS + SIGNALS[-2::-1]] + [], out)
        numbers = util.values(r"^\$\d+ = (\d+)$", out)
        expected = [int(getattr(signal, n)) for n in names]
        self.assertEqual(numbers, expected, out)


    def live_gdb(self, commands, args=()):
        """gdb on the program itself (no recording), from main."""
        argv = ["gdb", "-q", "-batch", "-nx", "-ex", "set pagination off", "-ex", "break main",
                "-ex", "run", "-ex", "delete"]
        for c in commands:
            argv += ["-ex", c]
        return util.run(argv + ["--args", self.program] + list(args), check=False)

    def test_gdb_catch_syscall_write_both_ways(self):
        commands = ["catch syscall write", "continue", "continue", "reverse-continue",
                    "reverse-continue"]
        with util.Server(self.env, self.trace) as server:
            out = util.gdb(server, ["handle all nostop noprint"] + commands)
        caught = re.findall(r"^Catchpoint \d+ \((call to|returned from) syscall (\w+)\)", out,
                            re.M)
        self.assertEqual(caught, [("call to", "write"), ("returned from", "write"),
                                  ("call to", "write")], out)
        # The return's reverse-continue goes back to the call; the next one
        # finds no earlier write.
        util.expect(self, r"^No more reverse-execution history\.", out, count=1)

    def test_gdb_catch_every_syscall_like_the_live_program(self):
        # gdb's `record full` does not stop at system calls: the live program
        # under gdb is the reference, forward; backward, the same stops in the
        # reverse order.
        pattern = r"^Catchpoint \d+ \((call to|returned from) syscall ([\w-]+)\)"
        live = self.live_gdb(["handle all nostop noprint", "catch syscall"] + ["continue"] * 300)
        theirs = re.findall(pattern, live, re.M)
        # Linux reports rt_sigreturn's return as system call -1 (orig_rax).
        theirs = [(kind, "rt_sigreturn" if name == "-1" else name) for kind, name in theirs]
        self.assertGreater(len(theirs), 200, live)
        self.assertEqual(theirs[-1], ("call to", "exit_group"), live)
        n = len(theirs)  # up to exit_group's entry: one more continue ends the process
        with util.Server(self.env, self.trace) as server:
            out = util.gdb(server, ["handle all nostop noprint", "break main", "continue",
                                    "delete", "catch syscall"] + ["continue"] * n
                           + ["reverse-continue"] * (n - 1))
        ours = re.findall(pattern, out, re.M)
        self.assertEqual(ours[:len(theirs)], theirs, out)
        self.assertEqual(ours[n:], theirs[::-1][1:], out)

    def test_gdb_fatal_signal_ends_the_trace(self):
        path = os.path.join(self.env.dir, "sigall_segv.ucir")
        argv = [self.env.backstep, "record", "-o", path, "--", self.program, "segv"]
        proc = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              timeout=util.STEP_TIMEOUT)
        out = proc.stdout
        # `record` exits as the program did: killed by SIGSEGV, 128 + 11.
        self.assertEqual(proc.returncode, 128 + 11, out)
        self.assertIn("signal 11", out)
        trace = util.Trace(path, {})
        with open(SOURCE) as f:
            lines = {m: n for n, text in enumerate(f, 1)
                     for m in re.findall(r"MARK:([a-z-]+)", text)}
        with util.Server(self.env, trace) as server:
            out = util.gdb(server, ["break main", "continue", "delete", "continue", "continue",
                                    "watch delivered[11]", "reverse-continue", "reverse-continue",
                                    "continue", "continue", "continue", "continue",
                                    "info program"])
        # Forward: the fault, then the end of the history; backward: the
        # fault again, then the write before it; forward again: the write,
        # the fault, the end, and past the end the recorded death.
        self.assertEqual(stops(out), [("break", "main")] + [("signal", "SIGSEGV")] * 3, out)
        util.expect(self, r"^Program received signal SIGSEGV, Segmentation fault\.\n"
                    r".* at \S*sigall\.c:%d\n" % lines["fault"], out, count=3)
        util.expect(self, r"^No more reverse-execution history\.", out, count=2)
        util.expect(self, r"^Hardware watchpoint \d+: delivered\[11\]\n\nOld value = 1\n"
                    r"New value = 0\n", out, count=1)
        util.expect(self, r"^Program terminated with signal SIGSEGV, Segmentation fault\.", out,
                    count=1)


@unittest.skipUnless(PLUGIN, "run with --plugin libbackstep_lldb.so")
class SigallLldbTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if "libasan" in util.run(["ldd", PLUGIN], check=False):
            # As example_session_lldb: stock lldb-19 crashes loading the
            # sanitizer build's plugin, and hangs in setlocale() with libasan
            # preloaded; the normal build runs these tests.
            raise unittest.SkipTest("the sanitizer build's plugin cannot load into lldb-19")
        cls.env = util.Env.from_argv()
        cls.program = os.path.join(PROGRAMS, "sigall_O0_static")
        cls.path = os.path.join(cls.env.dir, "sigall_lldb.ucir")
        out = util.run([cls.env.backstep, "record", "-o", cls.path, "--", cls.program])
        assert "delivered %d" % len(SIGNALS) in out, out

    def lldb(self, commands):
        path = os.path.join(self.env.dir, "sigall-%d.lldb" % len(os.listdir(self.env.dir)))
        with open(path, "w") as f:
            f.write("plugin load %s\n" % PLUGIN)
            f.write("backstep open %s %s\n" % (self.program, self.path))
            for c in commands:
                f.write(c + "\n")
        return util.run(["lldb-19", "--batch", "-o", "command source -e false " + path],
                        check=False)

    def quiet(self, keep):
        """`process handle` keeping only `keep` stopping."""
        others = " ".join("SIG" + s for s in SIGNALS if s not in keep)
        commands = ["process handle -s false -n false -p true " + others]
        if keep:  # without names, `process handle` changes every signal
            commands.append("process handle -s true -n true -p true " +
                            " ".join("SIG" + s for s in keep))
        return commands

    def test_lldb_stops_honour_process_handle(self):
        out = self.lldb(self.quiet(["USR1", "TSTP"]) + [
            "continue", "continue", "backstep reverse-continue", "continue", "continue"])
        # SIGTRAP: the stop at the start (`backstep open`) and LLDB 19's
        # history boundary.
        reasons = [r for r in re.findall(r"stop reason = signal (SIG\w+)", out) if r != "SIGTRAP"]
        self.assertEqual(reasons, ["SIGUSR1", "SIGTSTP", "SIGUSR1", "SIGTSTP"], out)

    def test_lldb_reverse_finish_out_of_a_handler(self):
        out = self.lldb(self.quiet([]) + [
            "breakpoint set -n handle_USR1", "continue", "backstep reverse-finish",
            "thread backtrace"])
        util.expect(self, r"stop reason = breakpoint 1\.1", out)
        self.assertNotIn("error:", out)
        # Back where the signal interrupted the program: in kill(), called
        # by gen_USR1.
        util.expect(self, r"frame #0: 0x[0-9a-f]+ sigall_O0_static`(__)?kill", out)
        util.expect(self, r"frame #1: .*`gen_USR1 ", out)


if __name__ == "__main__":
    util.main()
