"""gdb 13.1 `target tfile` on files written by `backstep export`.

Exports a generated REVEN trace and a recorded C program (with -g), opens
them in stock gdb (`gdb -nx -batch`), walks them with tfind and checks that
gdb's registers and memory equal `backstep dump` at the same positions.

Run by ctest:
  /usr/bin/python3 test_tfile.py --backstep BIN --make-example BIN --program PROG
PROG: a recorder test program built with -g (loop_O0_static).
"""

import argparse
import os
import re
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import util  # noqa: E402

GPRS = ["rax", "rbx", "rcx", "rdx", "rsi", "rdi", "rbp", "rsp", "r8", "r9", "r10", "r11", "r12",
        "r13", "r14", "r15", "rip", "eflags", "cs", "ss", "ds", "es", "fs", "gs"]
FRAME = r"^Found trace frame (\d+), tracepoint \d+$"
FRAME_TP = r"^Found trace frame (\d+), tracepoint (\d+)$"
POSITION = 'printf "POS=%d\\n", $backstep_position'
PC = 'printf "PC=0x%lx\\n", $pc'
WALK = ("while ($trace_frame >= 0)\n"
        'printf "WALK %d %d 0x%lx\\n", $trace_frame, $backstep_position, $pc\n'
        "tfind\n"
        "end")


def gdb_tfile(env, tfile, commands, exe=None):
    """gdb -nx -batch on `tfile`; each command is one -ex (an error does not
    stop the next), multi-line ones go through a command file."""
    argv = ["gdb", "-q", "-nx", "-batch", "-ex", "set pagination off", "-ex", "set width 0"]
    argv += ["-ex", "file " + exe] if exe else ["-ex", "set architecture i386:x86-64"]
    argv += ["-ex", "target tfile " + tfile]
    for i, c in enumerate(commands):
        if "\n" in c:
            path = os.path.join(env.dir, "cmd-%d-%d.gdb" % (os.getpid(), i))
            with open(path, "w") as f:
                f.write(c + "\n")
            argv += ["-x", path]
        else:
            argv += ["-ex", c]
    return util.run(argv, timeout=300, check=False)


def dump(env, trace, position, mems=()):
    """Registers {name: int} and known memory {address: byte} per `backstep dump`."""
    argv = [env.backstep, "dump", trace, "--at", str(position), "--regs"]
    for address, length in mems:
        argv += ["--mem", hex(address), str(length)]
    out = util.run(argv)
    regs = {}
    for name, value in re.findall(r"^(\w+)\s+(0x[0-9a-f]+)$", out, re.M):
        regs[name] = int(value, 16)
    memory = {}
    for line in re.findall(r"^(0x[0-9a-f]+):((?: (?:[0-9a-f]{2}|\?\?))+)", out, re.M):
        base = int(line[0], 16)
        for i, b in enumerate(line[1].split()):
            if b != "??":
                memory[base + i] = int(b, 16)
    return regs, memory


def gdb_registers(text):
    """Every `info registers` line's raw value, in order of appearance."""
    return re.findall(r"^(\w+)\s+(0x[0-9a-f]+)\s", text, re.M)


def gdb_memory(text):
    """{address: byte} of every x/Nxb line."""
    memory = {}
    for base, rest in re.findall(r"^(0x[0-9a-f]+)(?: <[^>]*>)?:((?:\s+0x[0-9a-f]{2})+)$", text,
                                 re.M):
        for i, b in enumerate(rest.split()):
            memory[int(base, 16) + i] = int(b, 16)
    return memory


def sections(text, marker="=== "):
    """Splits gdb's output at lines echoed by `echo === name\\n`."""
    parts = {}
    name = None
    for line in text.splitlines():
        if line.startswith(marker):
            name = line[len(marker):]
            parts[name] = ""
        elif name is not None:
            parts[name] += line + "\n"
    return parts


class TfileTest(unittest.TestCase):
    program = None

    @classmethod
    def setUpClass(cls):
        cls.env = util.Env.from_argv()
        cls.reven = cls.env.trace().path
        cls.from_pos, cls.to_pos = 1000, 1600
        cls.reven_tf = os.path.join(cls.env.dir, "reven.tf")
        cls.user_range = (0x100ff000, 64)  # unknown virtual range: left out, <unavailable>
        util.run([cls.env.backstep, "export", cls.reven, "-o", cls.reven_tf, "--from",
                  str(cls.from_pos), "--to", str(cls.to_pos)])
        # Every frame: its number, position and pc, as gdb reads them.
        out = gdb_tfile(cls.env, cls.reven_tf, ["tfind start", WALK])
        cls.walk = [tuple(int(v, 0) for v in m)
                    for m in re.findall(r"^WALK (\d+) (\d+) (0x[0-9a-f]+)$", out, re.M)]

    def check_frame(self, trace, text, position, mems=(), exe_regs=GPRS):
        """gdb's registers and memory in `text` equal backstep dump at `position`."""
        regs, memory = dump(self.env, trace, position, mems)
        got = dict(gdb_registers(text))
        for name in exe_regs:
            self.assertIn(name, got, text)
            self.assertEqual(int(got[name], 16), regs[name],
                             "%s at position %d:\n%s" % (name, position, text))
        gdb_mem = gdb_memory(text)
        self.assertTrue(gdb_mem, text)
        for address, byte in gdb_mem.items():
            self.assertIn(address, memory, "gdb shows 0x%x, unknown to dump" % address)
            self.assertEqual(byte, memory[address], "byte at 0x%x, position %d" % (address, position))
        return gdb_mem

    def test_walk_covers_every_position_in_order(self):
        self.assertEqual(len(self.walk), self.to_pos - self.from_pos + 1)
        for frame, position, _ in self.walk:
            self.assertEqual(position, self.from_pos + frame)

    def test_tfind_start_n_next_previous_match_dump(self):
        cmds = []
        for name, cmd in [("start", "tfind start"), ("n", "tfind 37"), ("next", "tfind"),
                          ("prev", "tfind -"), ("prev2", "tfind -")]:
            cmds += ["echo === %s\\n" % name, cmd, POSITION, "info registers",
                     "x/32xb $rsp - 16", "x/8xb $rsp + 200"]
        out = gdb_tfile(self.env, self.reven_tf, cmds)
        parts = sections(out)
        expected = {"start": 0, "n": 37, "next": 38, "prev": 37, "prev2": 36}
        for name, frame in expected.items():
            text = parts[name]
            self.assertEqual(util.values(FRAME, text), [frame], text)
            self.assertEqual(util.values(r"^POS=(\d+)$", text), [self.from_pos + frame])
            mem = self.check_frame(self.reven, text, self.from_pos + frame,
                                   mems=[(self.walk_rsp(frame) - 16, 32),
                                         (self.walk_rsp(frame) + 200, 8)])
            self.assertEqual(len(mem), 40, text)

    def walk_rsp(self, frame):
        regs, _ = dump(self.env, self.reven, self.from_pos + frame)
        return regs["rsp"]

    def test_uncollected_memory_is_unavailable(self):
        out = gdb_tfile(self.env, self.reven_tf, ["tfind 3", "x/4xb 0x10", "print $rsp"])
        util.expect(self, r"unavailable", out)

    def pcs_by_frame(self):
        return [pc for _, _, pc in self.walk]

    def test_tfind_pc_finds_every_hit_in_order(self):
        pcs = self.pcs_by_frame()
        # A pc hit several times, not at frame 0.
        target = max(set(pcs[1:]), key=lambda pc: (pcs.count(pc), pc))
        hits = [i for i, pc in enumerate(pcs) if pc == target and i > 0]
        self.assertGreaterEqual(len(hits), 3)
        cmds = ["tfind start"]
        for _ in hits:
            cmds += ["tfind pc 0x%x" % target, POSITION, PC]
        out = gdb_tfile(self.env, self.reven_tf, cmds)
        frames = util.values(FRAME, out)[1:]
        self.assertEqual(frames, hits, out)
        self.assertEqual(util.values(r"^POS=(\d+)$", out), [self.from_pos + h for h in hits])
        self.assertEqual(util.values(r"^PC=(0x[0-9a-f]+)$", out), [target] * len(hits))

    def test_tfind_pc_right_after_open(self):
        # No frame selected yet: gdb 13.1 seeks to offset 0 + frame size,
        # where the export planted a decoy header (docs/formats/tfile.md).
        pcs = self.pcs_by_frame()
        target = pcs[7]
        hits = [i for i, pc in enumerate(pcs) if pc == target][:3]
        cmds = []
        for _ in hits:
            cmds += ["tfind pc 0x%x" % target, POSITION]
        out = gdb_tfile(self.env, self.reven_tf, cmds)
        self.assertEqual(util.values(FRAME, out), hits, out)
        self.assertEqual(util.values(r"^POS=(\d+)$", out), [self.from_pos + h for h in hits])

    def test_tfind_range_and_outside(self):
        pcs = self.pcs_by_frame()
        lo = pcs[5]
        hi = lo + 8

        def inside(pc):
            return lo <= pc <= hi

        # Three successive range hits, then the next frame outside the range.
        in_range = [i for i, pc in enumerate(pcs) if i > 0 and inside(pc)][:3]
        self.assertEqual(len(in_range), 3)
        outside = next(i for i, pc in enumerate(pcs) if i > in_range[-1] and not inside(pc))
        cmds = ["tfind start"] + ["tfind range 0x%x, 0x%x" % (lo, hi)] * 3
        cmds += ["tfind outside 0x%x, 0x%x" % (lo, hi), POSITION]
        out = gdb_tfile(self.env, self.reven_tf, cmds)
        self.assertEqual(util.values(FRAME, out), [0] + in_range + [outside], out)
        self.assertEqual(util.values(r"^POS=(\d+)$", out), [self.from_pos + outside])

    def test_tfind_tracepoint_and_tdump(self):
        pcs = self.pcs_by_frame()
        first_seen = []
        for pc in pcs:
            if pc not in first_seen:
                first_seen.append(pc)
        # Tracepoint n is the n-th distinct pc; `tfind tracepoint` is exact.
        number = min(5, len(first_seen))
        pc = first_seen[number - 1]
        frames = [i for i, p in enumerate(pcs) if p == pc]
        out = gdb_tfile(self.env, self.reven_tf, [
            "tfind start", "tfind tracepoint %d" % number, POSITION, "tdump",
            "info tracepoints %d" % number])
        found = re.findall(FRAME_TP, out, re.M)
        want = frames[1] if frames[0] == 0 else frames[0]
        self.assertEqual([int(f) for f, _ in found], [0, want], out)
        self.assertEqual(int(found[1][1]), number, out)
        util.expect(self, r"^Data collected at tracepoint %d, trace frame %d:$" % (number, want),
                    out)
        tdump = out.split("Data collected at")[1]
        regs, _ = dump(self.env, self.reven, self.from_pos + want)
        got = dict(gdb_registers(tdump))
        for name in GPRS:
            self.assertEqual(int(got[name], 16), regs[name], name)
        util.expect(self, r"^\d+\s+tracepoint\s+keep y\s+0x0*%x" % pc, out)

    def test_recorded_program_line_locals_and_mem(self):
        if not self.program:
            self.fail("--program not given")
        env = self.env
        trace = os.path.join(env.dir, "loop.ucir")
        util.run([env.backstep, "record", "-o", trace, "--", self.program], timeout=300)
        syms = util.run(["nm", self.program])
        counter = int(re.search(r"^([0-9a-f]+) B counter$", syms, re.M).group(1), 16)
        table = int(re.search(r"^([0-9a-f]+) B table$", syms, re.M).group(1), 16)
        source = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "programs",
                              "loop.c")
        with open(source) as f:
            line = next(n for n, text in enumerate(f, 1) if "+= square(i)" in text)
        tf = os.path.join(env.dir, "loop.tf")
        util.run([env.backstep, "export", trace, "-o", tf, "--from", "60%", "--to", "61%",
                  "--mem", "0x%x:8" % counter, "--mem", "0x%x:512" % table])
        out = gdb_tfile(env, tf, [
            "info line loop.c:%d" % line, "tfind start", POSITION,
            "echo === line\\n", "tfind line loop.c:%d" % line, POSITION, PC, "info registers",
            "x/8xb &counter", "x/16xb &table[3]", "x/16xb $rsp", "print i", "bt",
            "echo === end\\n"], exe=self.program)
        m = re.search(r'starts at address (0x[0-9a-f]+) <[^>]*> and ends at (0x[0-9a-f]+)', out)
        self.assertTrue(m, out)
        lo, hi = int(m.group(1), 16), int(m.group(2), 16)
        parts = sections(out)
        start = util.values(r"^POS=(\d+)$", out)[0]
        text = parts["line"]
        position = util.values(r"^POS=(\d+)$", text)[0]
        pc = util.values(r"^PC=(0x[0-9a-f]+)$", text)[0]
        self.assertTrue(lo <= pc < hi, text)
        # The first position after `start` whose pc is on that line.
        for p in range(start + 1, position):
            regs, _ = dump(env, trace, p)
            self.assertFalse(lo <= regs["rip"] < hi, "position %d is on the line" % p)
        mem = self.check_frame(trace, text, position,
                               mems=[(counter, 8), (table + 24, 16),
                                     (dump(env, trace, position)[0]["rsp"], 16)])
        self.assertEqual(len(mem), 40, text)
        util.expect(self, r"^\$\d+ = \d+$", text)  # print i: a local from the stack window
        util.expect(self, r"^#1\s+0x[0-9a-f]+ in main \(\) at .*loop\.c:\d+$", text)


def main():
    env = util.Env.from_argv()
    parser = argparse.ArgumentParser()
    parser.add_argument("--program")
    args, rest = parser.parse_known_args()
    sys.argv[1:] = rest
    TfileTest.program = args.program
    try:
        unittest.main(verbosity=2)
    finally:
        env.cleanup()


if __name__ == "__main__":
    main()
