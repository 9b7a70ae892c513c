"""gdb 13 against `backstep serve` on a generated REVEN trace (no debug info).

Run by ctest:  /usr/bin/python3 test_gdb.py --backstep BIN --make-example BIN
"""

import contextlib
import os
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import util  # noqa: E402

RIP = 'printf "RIP=0x%lx\\n", $rip'
WHEN = "monitor when"
NO_HISTORY = r"No more reverse-execution history\."


def positions(text):
    return util.values(r"^position (\d+) of", text)


class GdbTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.env = util.Env.from_argv()
        cls.trace = cls.env.trace()

    @contextlib.contextmanager
    def gdb(self, commands):
        """gdb's output; a failed assertion in the `with` body dumps the log."""
        with util.Server(self.env, self.trace) as server:
            yield util.gdb(server, commands)

    def test_connect_registers_memory(self):
        with self.gdb([RIP, "info registers rip", "x/8xb $rsp"]) as out:
            self.assertEqual(util.values(r"RIP=(0x[0-9a-f]+)", out), [self.env.dump_rip(self.trace, 0)])
            util.expect(self, r"^rip\s+0x[0-9a-f]+", out)
            util.expect(self, r"^0x[0-9a-f]+:(\s+0x[0-9a-f]{2}){8}$", out)

    def test_stepi_and_reverse_stepi(self):
        with self.gdb(["stepi", "stepi", "stepi", RIP, WHEN, "reverse-stepi", RIP, WHEN]) as out:
            rips = util.values(r"RIP=(0x[0-9a-f]+)", out)
            self.assertEqual(rips, [self.env.dump_rip(self.trace, 3), self.env.dump_rip(self.trace, 2)])
            self.assertEqual(positions(out), [3, 2])

    def test_breakpoint_both_ways(self):
        far = self.trace.far_pc
        with self.gdb(["break *0x%x" % far, "continue", RIP, WHEN, "continue", WHEN,
                       "reverse-continue", RIP, WHEN, "reverse-continue", WHEN]) as out:
            util.expect(self, r"^Breakpoint 1, 0x0*%x in" % far, out, count=2)
            self.assertEqual(util.values(r"RIP=(0x[0-9a-f]+)", out), [far, far])
            events = self.trace.events
            self.assertEqual(positions(out),
                             [self.trace.far_pc_event, events, self.trace.far_pc_event, 0])
            util.expect(self, NO_HISTORY, out, count=2)

    def test_watchpoint_reverse_continue(self):
        t = self.trace
        watch = "watch *(char(*)[%d])0x%x" % (t.once_size, t.once_address)
        with self.gdb(["monitor goto end", "stepi", WHEN, watch, "reverse-continue", WHEN,
                       "continue", WHEN]) as out:
            util.expect(self, r"^Hardware watchpoint \d+: ", out)
            util.expect(self, r"^Old value = ", out, count=2)
            util.expect(self, r"^New value = ", out, count=2)
            # Backwards: stopped before the write; forwards: just after it.
            self.assertEqual(positions(out), [t.events, t.once_event, t.once_event + 1])

    def test_history_ends(self):
        with self.gdb(["reverse-stepi", WHEN, "continue", WHEN, "stepi", WHEN]) as out:
            util.expect(self, NO_HISTORY, out, count=3)
            self.assertEqual(positions(out), [0, self.trace.events, self.trace.events])

    def test_info_threads(self):
        with self.gdb(["info threads"]) as out:
            util.expect(self, r"^\* 1\s+Thread 1\.1", out)

    def test_monitor_commands(self):
        t = self.trace
        addr = "0x%x %d" % (t.once_address, t.once_size)
        with self.gdb([
            "monitor help", "monitor info", WHEN,
            "monitor goto 100", "stepi", WHEN,
            "monitor reverse-stepi", "stepi", WHEN,
            "monitor direction reverse", "stepi", WHEN, "monitor direction forward",
            "monitor goto 50%", "stepi", WHEN,
            "monitor next-write " + addr, "monitor goto end", "stepi",
            "monitor last-write " + addr, "monitor history " + addr + " --max 5",
            "monitor watch-filter all", "monitor watch-filter changes", "monitor frobnicate",
        ]) as out:
            for name in ["info", "when", "goto", "reverse-stepi", "direction", "last-write",
                         "next-write", "history", "watch-filter"]:
                util.expect(self, r"^  %s\b" % name, out)
            util.expect(self, r"^events:\s+%d" % t.events, out)
            self.assertEqual(positions(out), [0, 100, 99, 98, t.events // 2])
            util.expect(self, r"^event %d \(thread \d+\) wrote" % t.once_event, out, count=3)
            util.expect(self, r"^watch-filter: all", out)
            util.expect(self, r"unknown monitor command 'frobnicate'|Protocol error", out)

    def test_two_clients_at_once(self):
        with util.Server(self.env, self.trace) as server:
            def start(steps):
                cmds = ["stepi"] * steps + ["shell sleep 1", WHEN]
                return subprocess.Popen(util.gdb_argv(cmds, "target remote " + server.address()),
                                        stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                        text=True)
            a, b = start(5), start(2)
            out_a, _ = a.communicate(timeout=util.STEP_TIMEOUT)
            out_b, _ = b.communicate(timeout=util.STEP_TIMEOUT)
            self.assertEqual(positions(out_a), [5], out_a)
            self.assertEqual(positions(out_b), [2], out_b)
            util.expect(self, r"client 2 connected", "".join(server.stderr_lines))

    def test_tfind(self):
        t = self.trace
        with self.gdb(["tfind 3", RIP, "tfind pc 0x%x" % t.far_pc, RIP, "tfind none", RIP, WHEN]) as out:
            util.expect(self, r"^Found trace frame 3, tracepoint 1", out)
            util.expect(self, r"^Found trace frame %d, tracepoint 1" % t.far_pc_event, out)
            self.assertEqual(util.values(r"RIP=(0x[0-9a-f]+)", out),
                             [self.env.dump_rip(self.trace, 3), t.far_pc,
                              self.env.dump_rip(self.trace, 0)])
            self.assertEqual(positions(out), [0])

    def test_serve_maps_in_the_cached_trace(self):
        # The server maps in the whole cached trace at open, so that its
        # sessions' random reads of the trace take no page fault.
        big = self.env.big_trace()
        size = os.path.getsize(big.path)
        with util.Server(self.env, big) as server:
            self.assertGreaterEqual(util.resident_bytes(server.proc.pid, big.path), size - 4096)
            out = util.gdb(server, ["stepi", RIP])
            self.assertEqual(util.values(r"RIP=(0x[0-9a-f]+)", out),
                             [self.env.dump_rip(big, 1)], out)

    def test_stdio(self):
        connect = "target remote | %s serve --stdio %s" % (self.env.backstep, self.trace.path)
        out = util.run(util.gdb_argv(["stepi", "stepi", RIP, WHEN], connect), check=False)
        self.assertEqual(util.values(r"RIP=(0x[0-9a-f]+)", out),
                         [self.env.dump_rip(self.trace, 2)], out)
        self.assertEqual(positions(out), [2], out)

    def test_stdio_keeps_gdb_waiting_while_the_trace_opens(self):
        # A trace whose index must be built first opens slowly: gdb, at its
        # default remotetimeout of 2 s, resends its first packet after 2 s
        # without an acknowledgement and then takes the late replies for the
        # next requests'. The server keeps it waiting (cli/stdio_keepalive.h);
        # the test hook makes the open last 5 s on every machine.
        connect = ("target remote | env BACKSTEP_TEST_SLOW_OPEN_MS=5000 %s serve --stdio %s" %
                   (self.env.backstep, self.trace.path))
        argv = util.gdb_argv(["stepi", RIP, WHEN], connect)
        argv[argv.index(connect) - 1:argv.index(connect) - 1] = ["-ex", "set remotetimeout 2"]
        out = util.run(argv, check=False)
        self.assertNotIn("Remote replied unexpectedly", out)
        self.assertEqual(util.values(r"RIP=(0x[0-9a-f]+)", out),
                         [self.env.dump_rip(self.trace, 1)], out)
        self.assertEqual(positions(out), [1], out)


if __name__ == "__main__":
    util.main()
