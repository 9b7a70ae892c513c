"""Live `tfind` through `target remote` on `backstep serve` (real gdb 13).

Frame n is position n (0..end). Each scenario drives gdb in batch mode and
checks the frames it lands on against an independent walk: the same window
exported with `backstep export` and walked by gdb's `target tfile` (every
position with its pc), and `backstep dump --at P` for registers and memory.

Run by ctest:
  /usr/bin/python3 test_gdb_tfind.py --backstep BIN --make-example BIN --programs DIR
"""

import os
import re
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import recorded  # noqa: E402
import util  # noqa: E402
from test_tfile import (GPRS, WALK, dump, gdb_memory, gdb_registers, gdb_tfile,  # noqa: E402
                        sections)

PROGRAMS = recorded.programs_dir_from_argv()
FOUND = r"^Found trace frame (\d+), tracepoint (\d+)$"
FAILED = r"^Target failed to find requested trace frame\.$"
WHEN = "monitor when"
AT_FRAME = r"^trace frame at position (\d+) "
RIP = 'printf "RIP=0x%lx\\n", $rip'


def typed(command):
    """`command` as if typed at the prompt (from_tty): gdb -batch -ex runs
    commands as a script, where a failed tfind leaves tfind mode instead of
    raising "Target failed to find requested trace frame."."""
    return ('python exec("try:\\n  gdb.execute(%r, True)\\n'
            'except gdb.error as e:\\n  print(e)")' % command)


def frames(text):
    return [int(f) for f, _ in re.findall(FOUND, text, re.M)]


def export_walk(env, trace, lo, hi, exe=None):
    """[(position, pc)] of positions lo..hi via `backstep export` + gdb tfile."""
    tf = os.path.join(env.dir, "walk-%d-%d.tf" % (lo, hi))
    util.run([env.backstep, "export", trace, "-o", tf, "--from", str(lo), "--to", str(hi)],
             timeout=300)
    out = gdb_tfile(env, tf, ["tfind start", WALK], exe=exe)
    walk = [(int(p), int(pc, 16))
            for _, p, pc in re.findall(r"^WALK (\d+) (\d+) (0x[0-9a-f]+)$", out, re.M)]
    assert [p for p, _ in walk] == list(range(lo, hi + 1)), out
    return walk


class Live:
    """Helpers shared by both traces."""

    def check_state(self, text, position, trace):
        """gdb's `info registers` and x/ bytes in `text` equal backstep dump at `position`."""
        got = dict(gdb_registers(text))
        gdb_mem = gdb_memory(text)
        regs, memory = dump(self.env, trace, position, mems=[(a, 1) for a in gdb_mem])
        for name in GPRS:
            self.assertIn(name, got, text)
            self.assertEqual(int(got[name], 16), regs[name],
                             "%s at position %d:\n%s" % (name, position, text))
        self.assertTrue(gdb_mem, text)
        for address, byte in gdb_mem.items():
            self.assertEqual(byte, memory.get(address),
                             "0x%x at %d:\n%s" % (address, position, text))


class TfindRevenTest(Live, unittest.TestCase):
    """A generated REVEN trace (20,000 events, an "other" event every 997)."""

    @classmethod
    def setUpClass(cls):
        cls.env = util.Env.from_argv()
        cls.trace = cls.env.trace()
        cls.events = cls.trace.events
        # A window holding the non-instruction event 1993 (pc kept across it).
        cls.lo, cls.hi = 1900, 2100
        cls.walk = export_walk(cls.env, cls.trace.path, cls.lo, cls.hi)

    def gdb(self, commands):
        with util.Server(self.env, self.trace) as server:
            return util.gdb(server, commands)

    def test_number_next_previous_match_dump(self):
        cmds = []
        steps = [("start", "tfind start"), ("n", "tfind 1993"), ("next", "tfind"),
                 ("prev", "tfind -"), ("prev2", "tfind -"), ("end", "tfind %d" % self.events)]
        for name, cmd in steps:
            cmds += ["echo === %s\\n" % name, cmd, WHEN, "info registers",
                     "x/32xb $rsp - 16", "x/16xb $rsp + 200"]
        parts = sections(self.gdb(cmds))
        want = {"start": 0, "n": 1993, "next": 1994, "prev": 1993, "prev2": 1992,
                "end": self.events}
        for name, frame in want.items():
            text = parts[name]
            self.assertEqual(re.findall(FOUND, text, re.M), [(str(frame), "1")], text)
            self.assertEqual(util.values(AT_FRAME, text), [frame], text)
            self.assertEqual(util.values(r"^position (\d+) of", text), [0], text)  # live: still 0
            self.check_state(text, frame, self.trace.path)

    def test_pc_every_hit_in_order_agrees_with_export(self):
        # The pc of position 1993, before a non-instruction event that keeps it:
        # positions 1993 and 1994 both have it (the export has both frames).
        pcs = dict(self.walk)
        target = pcs[1993]
        self.assertEqual(pcs[1994], target)
        hits = [p for p, pc in self.walk if pc == target and p > self.lo]
        self.assertGreaterEqual(len(hits), 3)
        cmds = ["tfind %d" % self.lo]
        for _ in hits:
            cmds += ["tfind pc 0x%x" % target, RIP]
        out = self.gdb(cmds)
        self.assertEqual(frames(out), [self.lo] + hits, out)
        self.assertEqual(util.values(r"^RIP=(0x[0-9a-f]+)$", out), [target] * len(hits), out)

    def test_range_outside_agree_with_export(self):
        lo = self.walk[5][1]
        hi = lo + 8
        inside = [p for p, pc in self.walk if p > self.lo and lo <= pc <= hi][:4]
        self.assertEqual(len(inside), 4)
        outside = next(p for p, pc in self.walk if p > inside[-1] and not lo <= pc <= hi)
        cmds = ["tfind %d" % self.lo] + ["tfind range 0x%x, 0x%x" % (lo, hi)] * 4
        cmds += ["tfind outside 0x%x, 0x%x" % (lo, hi), RIP]
        out = self.gdb(cmds)
        self.assertEqual(frames(out), [self.lo] + inside + [outside], out)
        self.assertEqual(util.values(r"^RIP=(0x[0-9a-f]+)$", out), [dict(self.walk)[outside]])

    def test_past_the_last_hit_typed(self):
        # Typed (from_tty): gdb's error, and gdb stays on the frame it was on.
        t = self.trace
        out = self.gdb(["tfind pc 0x%x" % t.far_pc, typed("tfind pc 0x%x" % t.far_pc), WHEN, RIP,
                        "tfind", RIP, "tfind %d" % self.events, typed("tfind"), WHEN,
                        typed("tfind %d" % (self.events + 1)), WHEN, typed("tfind -"), WHEN])
        self.assertEqual(frames(out), [t.far_pc_event, t.far_pc_event + 1, self.events,
                                       self.events - 1], out)
        util.expect(self, FAILED, out, count=3)
        self.assertEqual(util.values(AT_FRAME, out),
                         [t.far_pc_event, self.events, self.events, self.events - 1], out)
        self.assertEqual(util.values(r"^RIP=(0x[0-9a-f]+)$", out),
                         [t.far_pc, self.env.dump_rip(t, t.far_pc_event + 1)], out)

    def test_past_the_last_hit_in_a_script(self):
        # In a script (gdb -batch -ex): "No trace frame found", and gdb leaves
        # tfind mode, back at the live position, as with `tfind none`.
        t = self.trace
        out = self.gdb(["stepi", "stepi", "tfind pc 0x%x" % t.far_pc, "tfind pc 0x%x" % t.far_pc,
                        WHEN, RIP, "stepi", WHEN, "tfind %d" % self.events, "tfind", WHEN, RIP])
        self.assertEqual(frames(out), [t.far_pc_event, self.events], out)
        util.expect(self, r"^No trace frame found$", out, count=2)
        self.assertEqual(util.values(AT_FRAME, out), [], out)
        self.assertEqual(util.values(r"^position (\d+) of", out), [2, 3, 3], out)
        self.assertEqual(util.values(r"^RIP=(0x[0-9a-f]+)$", out),
                         [self.env.dump_rip(t, 2), self.env.dump_rip(t, 3)], out)

    def test_tracepoint_tstatus_tdump(self):
        out = self.gdb(["tstatus", "tfind 5", "tfind tracepoint 1", "tfind tracepoint 1", WHEN,
                        "tdump", "tstatus", typed("tfind tracepoint 2"), WHEN])
        util.expect(self, r"^Collected %d trace frames\.$" % (self.events + 1), out, count=2)
        util.expect(self, r"^Looking at trace frame 7, tracepoint 1\.$", out)
        self.assertEqual(frames(out), [5, 6, 7], out)
        util.expect(self, FAILED, out, count=1)
        self.assertEqual(util.values(AT_FRAME, out), [7, 7])
        # No tracepoint definitions are uploaded: gdb has nothing to dump.
        util.expect(self, r"^No known tracepoint matches 'current' tracepoint #1\.$", out)

    def test_none_returns_to_the_live_position(self):
        out = self.gdb(["stepi", "stepi", "stepi", "tfind 500", "stepi", "reverse-stepi",
                        "tfind none", WHEN, RIP, "stepi", WHEN, RIP, "reverse-stepi",
                        "reverse-stepi", WHEN, RIP, "continue", WHEN])
        util.expect(self, r"Cannot execute this command while looking at trace frames", out,
                    count=2)
        util.expect(self, r"^No longer looking at any trace frame$", out)
        self.assertEqual(util.values(r"^position (\d+) of", out), [3, 4, 2, self.events])
        self.assertEqual(util.values(AT_FRAME, out), [])
        self.assertEqual(util.values(r"^RIP=(0x[0-9a-f]+)$", out),
                         [self.env.dump_rip(self.trace, p) for p in (3, 4, 2)])


class Recorded(Live):
    """scenario.c recorded by `backstep record` (-O0 -g): source lines and locals.
    Subclasses name the build (VARIANT)."""

    VARIANT = None

    @classmethod
    def setUpClass(cls):
        cls.env = util.Env.from_argv()
        cls.rec = recorded.record(cls.env, PROGRAMS, cls.VARIANT)
        cls.line = recorded.LINES["counter-add"]
        # Where the line first runs (a breakpoint, the stub's other search).
        with util.Server(cls.env, cls.rec.trace) as server:
            out = util.gdb(server, ["break scenario.c:%d" % cls.line, "continue", WHEN,
                                    "info line scenario.c:%d" % cls.line])
        cls.first = util.values(r"^position (\d+) of", out)[0]
        m = re.search(r"starts at address (0x[0-9a-f]+) <[^>]*> and ends at (0x[0-9a-f]+)", out)
        assert m, out
        cls.line_lo, cls.line_hi = int(m.group(1), 16), int(m.group(2), 16)
        cls.lo, cls.hi = cls.first - 50, cls.first + 400
        cls.walk = export_walk(cls.env, cls.rec.trace.path, cls.lo, cls.hi, exe=cls.rec.program)

    def gdb(self, commands):
        with util.Server(self.env, self.rec.trace) as server:
            argv = ["gdb", "-q", "-batch", "-nx", "-ex", "set pagination off",
                    "-ex", "set width 0", "-ex", "file " + self.rec.program,
                    "-ex", "target remote " + server.address()]
            for c in commands:
                argv += ["-ex", c]
            return util.run(argv, check=False)

    def in_line(self, pc):
        return self.line_lo <= pc < self.line_hi

    def test_line_every_hit_with_locals_and_state(self):
        # Every position of the line in accumulate(0), then its first in accumulate(1).
        pcs = dict(self.walk)
        hits = []
        p = self.first
        while self.in_line(pcs[p]):
            hits.append(p)
            p += 1
        hits.append(next(q for q in range(p, self.hi + 1) if self.in_line(pcs[q])))
        self.assertGreaterEqual(len(hits), 3)
        cmds = ["tfind %d" % self.lo]
        for i, _ in enumerate(hits):
            cmds += ["echo === %d\\n" % i, "tfind line scenario.c:%d" % self.line, WHEN,
                     "print i", "print counter", "bt", "info registers", "x/8xb &counter",
                     "x/16xb $rsp"]
        out = self.gdb(cmds)
        self.assertEqual(frames(out), [self.lo] + hits, out)
        parts = sections(out)
        for n, position in enumerate(hits):
            text = parts[str(n)]
            call = 0 if n < len(hits) - 1 else 1
            self.assertEqual(util.values(AT_FRAME, text), [position], text)
            # print i, print counter: before this call's `counter += local`.
            self.assertEqual(util.values(r"^\$\d+ = (\d+)$", text), [call, 100 + call], text)
            util.expect(self, r"^#0\s+(0x[0-9a-f]+ in )?accumulate \(i=%d\) at .*scenario\.c:%d$"
                        % (call, self.line), text)
            util.expect(self, r"^#1\s+0x[0-9a-f]+ in main \(\) at .*scenario\.c:%d$"
                        % recorded.LINES["loop-call"], text)
            self.check_state(text, position, self.rec.trace.path)

    def test_pc_of_the_line_start_every_call(self):
        hits = [p for p, pc in self.walk if p > self.lo and pc == self.line_lo]
        self.assertGreaterEqual(len(hits), 2)
        cmds = ["tfind %d" % self.lo]
        for _ in hits:
            cmds += ["tfind pc 0x%x" % self.line_lo, "print i"]
        out = self.gdb(cmds)
        self.assertEqual(frames(out), [self.lo] + hits, out)
        self.assertEqual(util.values(r"^\$\d+ = (\d+)$", out), list(range(len(hits))), out)


class TfindRecordedStaticTest(Recorded, unittest.TestCase):
    VARIANT = "O0_static"


class TfindRecordedPieTest(Recorded, unittest.TestCase):
    VARIANT = "O0_pie"  # relocated through the served auxv


if __name__ == "__main__":
    util.main()
