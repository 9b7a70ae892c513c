"""Read watchpoints on recordings: gdb 13 and lldb-19 against `backstep serve`
on tests/programs/readlate.c (-O0, static and PIE) recorded with `backstep
record` (reads on by default; --no-reads for the refusal).

`secret` is set at the start of main and read once, long after (a loop of
~20k instructions in between). From the end of the recording, a read
watchpoint in reverse must stop at that read (line MARK:read, value 42), an
access watchpoint at the read and then at the write (MARK:set); a recording
made with --no-reads refuses both.

Run by ctest:
  /usr/bin/python3 test_recorded_reads.py --backstep BIN --make-example BIN --programs DIR
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
SOURCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "programs", "readlate.c")
NO_HISTORY = r"^No more reverse-execution history\."
MONITOR_LLDB = "process plugin packet monitor "


def marks():
    lines = {}
    with open(SOURCE) as f:
        for number, text in enumerate(f, 1):
            match = re.search(r"MARK:([a-z-]+)", text)
            if match and number > 5:
                lines[match.group(1)] = number
    return lines


L = marks()


def cpu_has_avx512():
    """Whether this CPU runs AVX-512 (glibc's EVEX string functions)."""
    with open("/proc/cpuinfo") as f:
        return re.search(r"^flags\s*:.*\bavx512f\b", f.read(), re.M) is not None


def gdb_lines(text):
    """Source line numbers gdb printed for its stops, in order."""
    return [int(n) for n in re.findall(r"^(\d+)\t", text, re.M)]


class Recording:
    VARIANT = None

    @classmethod
    def setUpClass(cls):
        cls.env = util.Env.from_argv()
        cls.program = os.path.join(PROGRAMS, "readlate_" + cls.VARIANT)
        cls.traces = {}
        for reads in (True, False):
            path = os.path.join(cls.env.dir, "readlate_%s_%s.ucir" % (cls.VARIANT, reads))
            argv = [cls.env.backstep, "record", "-o", path]
            if not reads:
                argv.append("--no-reads")
            out = util.run(argv + ["--", cls.program])
            assert "seen 42" in out, out
            util.run([cls.env.backstep, "index", path])
            cls.traces[reads] = util.Trace(path, {})

    @contextlib.contextmanager
    def gdb(self, commands, reads=True):
        with util.Server(self.env, self.traces[reads]) as server:
            argv = ["gdb", "-q", "-batch", "-nx", "-ex", "set pagination off",
                    "-ex", "set confirm off", "-ex", "target remote " + server.address()]
            for c in commands:
                argv += ["-ex", c]
            yield util.run(argv, check=False)

    @contextlib.contextmanager
    def lldb(self, commands, reads=True):
        with util.Server(self.env, self.traces[reads]) as server:
            yield util.lldb(self.env, server, commands, program=self.program)

    def test_gdb_rwatch_reverse_finds_the_read(self):
        with self.gdb(["break %d" % L["print"], "continue", "delete", "rwatch secret",
                       "reverse-continue", "print seen", "reverse-continue"]) as out:
            util.expect(self, r"^Hardware read watchpoint 2: secret$", out)
            util.expect(self, r"^Value = 42$", out, count=1)
            # The read is the only one: before it, the beginning of history.
            util.expect(self, NO_HISTORY, out, count=1)
            lines = gdb_lines(out)
            self.assertEqual(lines[0], L["print"])
            self.assertEqual(lines[1], L["read"], out)
            # Stopped at the read, before `seen` is stored: not 42 yet.
            self.assertNotRegex(out, r"^\$1 = 42$")

    def test_gdb_awatch_reverse_finds_read_then_write(self):
        with self.gdb(["break %d" % L["print"], "continue", "delete", "awatch secret",
                       "reverse-continue", "reverse-continue", "print secret"]) as out:
            # Set, then the two stops.
            util.expect(self, r"^Hardware access \(read/write\) watchpoint 2: secret$", out,
                        count=3)
            util.expect(self, r"^Value = 42$", out, count=1)
            util.expect(self, r"^Old value = 42\nNew value = 0$", out, count=1)
            lines = gdb_lines(out)
            self.assertEqual(lines[1:3], [L["read"], L["set"]], out)
            # Before the write (reverse): secret is 0 again.
            util.expect(self, r"^\$1 = 0$", out)

    def test_gdb_no_reads_refused(self):
        with self.gdb(["rwatch secret", "continue", "monitor info"], reads=False) as out:
            util.expect(self, r"^Could not insert hardware watchpoint 1\.$", out)
            util.expect(self, r"^reads:\s+not recorded", out)

    def test_lldb_read_watchpoint_in_reverse(self):
        with self.lldb(["breakpoint set -f readlate.c -l %d" % L["print"], "continue",
                        "breakpoint delete 1", "watchpoint set variable -w read secret",
                        MONITOR_LLDB + "direction reverse", "continue",
                        "frame variable seen", MONITOR_LLDB + "direction forward"]) as out:
            util.expect(self, r"^Watchpoint created: Watchpoint 1: addr = 0x[0-9a-f]+ size = 8 "
                        r"state = enabled type = r$", out)
            util.expect(self, r"stop reason = watchpoint 1", out, count=1)
            stops = [int(n) for n in re.findall(r"^\s+frame #0: .* at readlate\.c:(\d+)", out,
                                                re.M)]
            self.assertEqual(stops, [L["print"], L["read"]], out)

    def test_avx512_registers_in_both_debuggers(self):
        # glibc's EVEX string functions (printf) leave k0-7 and xmm16-31
        # set: the recorder records them, the stub serves gdb's avx512
        # feature, and both debuggers show what `backstep dump` says.
        dump = util.run([self.env.backstep, "dump", self.traces[True].path, "--at", "end",
                         "--regs"])
        facts = dict(re.findall(r"^(k\d|xmm16|xmm17)\s+(0x[0-9a-f]+)$", dump, re.M))
        if not cpu_has_avx512():
            # glibc picks its AVX2/SSE functions: the recording holds no
            # AVX-512 state, and the stub must not serve gdb's avx512 feature
            # (served AVX-512 state: test_lldb_plugin.py's Avx512, from a trace
            # written with it).
            self.assertEqual(facts, {}, dump)
            with self.gdb(["monitor goto end", "p $k0", "p $xmm16"]) as out:
                util.expect(self, r"^\$1 = void$", out)
                util.expect(self, r"^\$2 = void$", out)
            return
        self.assertEqual(len(facts), 10, dump)
        self.assertTrue(any(int(facts["k%d" % i], 16) for i in range(8)), dump)
        with self.gdb(["monitor goto end", "stepi", "p/x $k0", "p/x $k1", "p/x $k2",
                       "p/x $xmm16.uint128", "p/x $zmm16.v4_int128[0]"]) as out:
            got = util.values(r"^\$\d+ = (0x[0-9a-f]+)$", out)
            self.assertEqual(got[:5], [int(facts["k0"], 16), int(facts["k1"], 16),
                                       int(facts["k2"], 16), int(facts["xmm16"], 16),
                                       int(facts["xmm16"], 16)], out)
        with self.lldb(["breakpoint set -f readlate.c -l %d" % L["print"], "continue",
                        "breakpoint delete 1", "continue", "register read k0 k1 xmm17"]) as out:
            # LLDB prints a value that is a code address with its symbol after it
            # ("k1 = 0x0000000000402010  readlate_O0_static`get_common_cache_info...").
            for k in ("k0", "k1"):
                self.assertEqual(util.values(r"^\s+%s = (0x[0-9a-f]+)(?:\s.*)?$" % k, out),
                                 [int(facts[k], 16)], out)
            util.expect(self, r"^\s+xmm17 = \{", out)

    def test_lldb_no_reads_refused(self):
        with self.lldb(["breakpoint set -n main", "continue",
                        "watchpoint set variable -w read secret"], reads=False) as out:
            util.expect(self, r"^error: Watchpoint creation failed", out)


class StaticTest(Recording, unittest.TestCase):
    VARIANT = "O0_static"


class PieTest(Recording, unittest.TestCase):
    VARIANT = "O0_pie"


if __name__ == "__main__":
    util.main()
