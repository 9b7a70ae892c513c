"""gdb 13 and lldb-19 on a two-thread i386 trace with partial state.

The trace is the usercorn "x86" file written by backstep_make_threads_trace
(core/testing/include/backstep/testing/i386_threads_trace.h): thread 1 loops reading and writing
`counter`, thread 2 sets eax and esp, writes `flag`, then reads `counter`.
eflags, selectors and the x87/SSE registers are never recorded, thread 2's
registers are unknown until it sets them, and memory is known only inside
the mappings (`data` is 0x100 bytes long). usercorn's MEM_READ holds no
value, so this trace records no reads: rwatch/awatch must be refused.
Expected values come from the writer's facts and from `backstep dump`.

Read watchpoints are checked on backstep_serve_reads_trace, a two-thread
x86-64 trace in core/src/testing's fake format that records read values
(no real format on this branch does), served by the same stub.

Run by ctest:  /usr/bin/python3 test_threads_reads.py --backstep BIN
                   --make-example BIN --make-threads BIN --serve-reads BIN
"""

import argparse
import contextlib
import os
import re
import signal
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import util  # noqa: E402

MAKE_THREADS = None
SERVE_READS = None
MONITOR_LLDB = "process plugin packet monitor "


def gdb(server, commands):
    """gdb without `set architecture`: the target.xml must say i386."""
    argv = ["gdb", "-q", "-batch", "-nx", "-ex", "set pagination off",
            "-ex", "target remote " + server.address()]
    for c in commands:
        argv += ["-ex", c]
    return util.run(argv, check=False)


class ReadsServer:
    """backstep_serve_reads_trace for the duration of a `with`: its facts
    and the address it listens on."""

    def __enter__(self):
        self.dir = tempfile.mkdtemp(prefix="backstep-reads-")
        self.proc = subprocess.Popen([SERVE_READS, self.dir], stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, text=True)
        self.facts = {}
        for line in self.proc.stdout:
            match = re.match(r"listening on (\S+):(\d+)", line)
            if match:
                self.host, self.port = match.group(1), int(match.group(2))
                return self
            key, value = line.split()
            self.facts[key] = int(value, 0)
        raise AssertionError("backstep_serve_reads_trace did not start: %s" % self.facts)

    def __exit__(self, *exc):
        self.proc.send_signal(signal.SIGINT)
        self.proc.wait(util.STEP_TIMEOUT)
        self.proc.stdout.close()
        subprocess.run(["rm", "-rf", self.dir], check=False)
        return False

    def address(self):
        return "%s:%d" % (self.host, self.port)


def signed32(v):
    return v - (1 << 32) if v & 0x80000000 else v


class ThreadsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.env = util.Env.from_argv()
        path = os.path.join(cls.env.dir, "threads.ucir")
        out = util.run([MAKE_THREADS, path])
        facts = {k: int(v, 0) for k, v in (line.split() for line in out.splitlines())}
        util.run([cls.env.backstep, "index", path])
        cls.trace = util.Trace(path, facts)

    @contextlib.contextmanager
    def served(self):
        with util.Server(self.env, self.trace) as server:
            yield server

    def dump_reg(self, position, thread, name):
        out = util.run([self.env.backstep, "dump", self.trace.path, "--at", str(position),
                        "--thread", str(thread), "--regs"])
        match = re.search(r"^%s\s+(0x[0-9a-f]+|<unknown>)" % name, out, re.M)
        self.assertTrue(match, out)
        return None if match.group(1) == "<unknown>" else int(match.group(1), 16)

    def test_gdb_threads_partial_state(self):
        t = self.trace
        with self.served() as server:
            out = gdb(server, [
                "show architecture", "info threads", "p/x $eip", "p $eflags", "x/i $pc",
                "x/8xb 0x%x" % (t.data + 0xfc),
                "thread 2", "p $eip", "info registers eax",
                "thread 1", "monitor info"])
        util.expect(self, r'\(currently "i386"\)', out)
        # Both threads at position 0; thread 2 has not run: <unavailable>.
        util.expect(self, r"^\* 1\s+Thread 1\.1\s+0x0*%x in" % t.code, out, 1)
        util.expect(self, r"^  2\s+Thread 1\.2\s+<unavailable> in", out, 1)
        self.assertEqual(util.values(r"^\$1 = (0x[0-9a-f]+)", out), [t.code])
        util.expect(self, r"^\$2 = <unavailable>", out, 1)  # eflags: never recorded
        util.expect(self, r"0x%x:\s+mov\s+0x%x,%%eax" % (t.code, t.counter), out, 1)
        # Partial memory: the known prefix, then gdb's error for the rest.
        util.expect(self, r"0x%x:\s+0x00\s+0x00\s+0x00\s+0x00\s+Cannot access memory at "
                    r"address 0x%x" % (t.data + 0xfc, t.data + 0x100), out, 1)
        util.expect(self, r"^\$3 = <unavailable>", out, 1)
        util.expect(self, r"^eax\s+<unavailable>", out, 1)
        util.expect(self, r"^  thread 1: events 0\.\.%d$" % (t.events - 1), out, 1)
        util.expect(self, r"^  thread 2: events \d+\.\.%d$" % t.thread2_read_event, out, 1)
        util.expect(self, r"^reads:\s+not recorded \(rwatch/awatch are refused\)", out, 1)

    def test_gdb_watchpoint_in_other_thread_both_ways(self):
        t = self.trace
        hit = t.flag_write_event + 1
        with self.served() as server:
            out = gdb(server, [
                "watch *(int*)0x%x" % t.flag, "continue", "info threads", "monitor when",
                "p/x $eax", "p $ebx", "p/x $esp",
                "thread 1", "p/x $eax", "p/x $ebx",
                "continue", "reverse-continue", "monitor when", "info threads"])
        util.expect(self, r"^Thread 2 hit Hardware watchpoint 1: \*\(int\*\)0x%x" % t.flag, out, 2)
        util.expect(self, r"^New value = %d$" % signed32(t.flag_value), out, 1)
        util.expect(self, r"^\* 2\s+Thread 1\.2\s", out, 2)
        self.assertEqual(util.values(r"^position (\d+) of", out), [hit, hit - 1])
        # Thread 2's registers: its state after its own last event.
        self.assertEqual(util.values(r"^\$1 = (0x[0-9a-f]+)", out), [t.thread2_eax])
        util.expect(self, r"^\$2 = <unavailable>", out, 1)
        self.assertEqual(util.values(r"^\$3 = (0x[0-9a-f]+)", out), [t.thread2_esp])
        # Thread 1's, at the same position.
        self.assertEqual(util.values(r"^\$4 = (0x[0-9a-f]+)", out),
                         [self.dump_reg(hit, 1, "eax")])
        self.assertEqual(util.values(r"^\$5 = (0x[0-9a-f]+)", out), [0x1111])
        # Forward past the last write: the end of the trace.
        util.expect(self, r"No more reverse-execution history", out, 1)

    def test_gdb_breakpoint_in_other_thread_and_scoped(self):
        t = self.trace
        flag_store = t.code + 0x10a  # thread 2's `mov dword [flag], ...`
        with self.served() as server:
            out = gdb(server, [
                "break *0x%x" % flag_store, "continue", "monitor when",
                "delete", "monitor goto 0", "stepi", "thread 1",
                "break *0x%x thread 1" % flag_store, "continue", "monitor when"])
        util.expect(self, r"^Thread 2 hit Breakpoint 1, 0x0*%x in" % flag_store, out, 1)
        # Scoped to thread 1, the same address never stops: gdb resumes past
        # thread 2's hit to the end of the trace.
        util.expect(self, r"hit Breakpoint 2", out, 0)
        util.expect(self, r"No more reverse-execution history", out, 1)
        self.assertEqual(util.values(r"^position (\d+) of", out), [t.flag_write_event, t.events])

    def test_gdb_rwatch_refused_without_recorded_reads(self):
        t = self.trace
        with self.served() as server:
            out = gdb(server, ["rwatch *(int*)0x%x" % t.counter, "continue", "monitor when"])
        util.expect(self, r"Could not insert hardware watchpoint 1", out)
        self.assertEqual(util.values(r"^position (\d+) of", out), [0])

    def test_gdb_rwatch_awatch_both_ways_across_threads(self):
        with ReadsServer() as server:
            f = server.facts
            out = gdb(server, [
                "rwatch *(int*)0x%x" % f["var"],
                "continue", "monitor when", "continue", "monitor when",
                "continue", "monitor when", "continue",
                "reverse-continue", "monitor when", "reverse-continue", "monitor when",
                "delete", "awatch *(int*)0x%x" % f["var"], "reverse-continue", "monitor when"])
        # A read stops after the reading instruction going forward, before it
        # going backward; each stop names the reading thread.
        self.assertEqual(util.values(r"^position (\d+) of", out),
                         [f["read1"] + 1, f["read2"] + 1, f["read3"] + 1, f["read3"], f["read2"],
                          f["write"]])
        self.assertEqual(re.findall(r"^Thread (\d) hit Hardware read watchpoint 1", out, re.M),
                         ["1", "2", "1", "1", "2"])
        self.assertEqual(util.values(r"^Value = (\d+)", out), [5, 7, 7, 7, 7])
        util.expect(self, r"^Thread 2 hit Hardware access \(read/write\) watchpoint 2", out, 1)
        util.expect(self, r"No more reverse-execution history", out, 1)

    def test_lldb_read_watchpoint_in_both_threads(self):
        with ReadsServer() as server:
            f = server.facts
            out = util.lldb(self.env, server, [
                "watchpoint set expression -w read -s 4 -- 0x%x" % f["var"],
                "continue", MONITOR_LLDB + "when", "continue", MONITOR_LLDB + "when"])
        self.assertEqual(util.values(r"position (\d+) of", out), [f["read1"] + 1, f["read2"] + 1])
        self.assertEqual(re.findall(r"^\* thread #(\d), stop reason = watchpoint 1", out, re.M),
                         ["1", "2"])

    def test_lldb_threads_registers_watchpoint(self):
        t = self.trace
        with self.served() as server:
            out = util.lldb(self.env, server, [
                "target list", "thread list",
                "memory read --size 1 --count 8 0x%x" % (t.data + 0xfc),
                "watchpoint set expression -w write -s 4 -- 0x%x" % t.flag,
                "continue", "thread list", "register read eax esp",
                "thread select 1", "register read ebx", MONITOR_LLDB + "when"])
        util.expect(self, r"arch=i386-pc-linux-gnu", out, 1)
        util.expect(self, r"^\s+thread #2: tid = 2", out)
        util.expect(self, r"Not all bytes \(4/8\) were able to be read from 0x%x" %
                    (t.data + 0xfc), out, 1)
        util.expect(self, r"^\* thread #2: tid = 2, 0x0*%x, stop reason = watchpoint 1" %
                    (t.code + 0x114), out, 1)
        self.assertEqual(util.values(r"^\s+eax = (0x[0-9a-f]+)", out), [t.thread2_eax])
        self.assertEqual(util.values(r"^\s+esp = (0x[0-9a-f]+)", out), [t.thread2_esp])
        self.assertEqual(util.values(r"^\s+ebx = (0x[0-9a-f]+)", out), [0x1111])
        self.assertEqual(util.values(r"position (\d+) of", out), [t.flag_write_event + 1])


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--make-threads", required=True)
    parser.add_argument("--serve-reads", required=True)
    args, rest = parser.parse_known_args()
    MAKE_THREADS = args.make_threads
    SERVE_READS = args.serve_reads
    sys.argv[1:] = rest
    util.main()
