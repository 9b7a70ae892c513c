"""The LLDB plugin (libbackstep_lldb.so) in real lldb-19 on traces that are
not recordings: a generated REVEN trace, a trace with AVX-512 state (the same
registers as over gdb-remote), a long generated trace interrupted with
SendAsyncInterrupt, and gdb's own tfile sample. The recordings' tests are in
test_lldb_plugin.py.

Run by ctest:
  /usr/bin/python3 test_lldb_plugin_formats.py --backstep BIN --make-example BIN --programs DIR
                                               --plugin libbackstep_lldb.so --make-avx512 BIN
"""

import os
import re
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import util  # noqa: E402
from lldb_plugin import MAKE_AVX512, Lldb, LldbTestCase  # noqa: E402


class RevenTrace(LldbTestCase):
    """A generated REVEN trace: no program, no symbols."""

    def test_reven_trace(self):
        trace = self.env.trace()
        out = self.lldb.run("backstep open %s" % trace.path)
        self.assertIn("no program", out)
        self.lldb.run("breakpoint set -a 0x%x" % trace.far_pc)
        self.lldb.run("continue")
        hit = self.lldb.when()
        self.assertEqual(self.lldb.frame().GetPC(), trace.far_pc)
        self.lldb.run("thread step-inst")
        self.lldb.run("rsi")
        self.assertEqual(self.lldb.when(), hit)
        self.lldb.run("rsi")
        self.assertEqual(self.lldb.when(), hit - 1)
        self.assertEqual(self.lldb.frame().GetPC(), self.env.dump_rip(trace, hit - 1))
        self.lldb.run("backstep goto end")
        self.lldb.run("rc")
        self.assertEqual(self.lldb.when(), hit)
        history = self.lldb.run("backstep history 0x%x %d" % (trace.once_address,
                                                              trace.once_size))
        self.assertRegex(history, r"^event %d \(thread \d+\) wrote" % trace.once_event)
        self.assertIn("format:     reven", self.lldb.run("backstep info"))


class Avx512(unittest.TestCase):
    """The served register set is the same in every front end: a trace with
    AVX-512 state has k0-7 and xmm16-31 in the plugin as in `backstep serve`."""

    def test_avx512_registers_in_the_plugin_and_over_gdb_remote(self):
        env = util.Env.from_argv()
        path = os.path.join(env.dir, "avx512.ucir")
        facts = dict(line.split() for line in util.run([MAKE_AVX512, path]).splitlines())
        expected_k1 = int(facts["k1"], 16)
        xmm17 = int(facts["xmm17"], 16).to_bytes(16, "little")
        expected_xmm17 = "{%s}" % " ".join("0x%02x" % b for b in xmm17)
        debugger = Lldb()
        try:
            debugger.run("backstep open " + path)
            plugin = debugger.run("register read k1 xmm17")
        finally:
            debugger.close()
        with util.Server(env, util.Trace(path, {})) as server:
            remote = util.lldb(env, server, ["register read k1 xmm17"])
        for out in (plugin, remote):
            # (a value that is a code address is followed by its symbol)
            self.assertEqual(util.values(r"^\s+k1 = (0x[0-9a-f]+)(?:\s.*)?$", out),
                             [expected_k1], out)
            util.expect(self, r"^\s+xmm17 = %s$" % re.escape(expected_xmm17), out, count=1)


class Interrupt(unittest.TestCase):
    """SBProcess.SendAsyncInterrupt (Ctrl-C in lldb-19) stops a long move at
    once, and the session goes on from there."""

    def test_interrupt_a_long_step_loop(self):
        env = util.Env.from_argv()
        path = os.path.join(env.dir, "long.bin")
        util.run([env.make_example, path, "--events", "200000", "--seed", "5"])
        util.run([env.backstep, "index", path])
        debugger = Lldb()
        try:
            debugger.run("backstep open " + path)
            # 190,000 instruction steps, one stop each: minutes without
            # the interrupt.
            done = threading.Event()
            outcome = {}

            def steps():
                outcome["out"] = debugger.run("thread step-inst -c 190000", ok=None)
                done.set()
            worker = threading.Thread(target=steps, daemon=True)
            worker.start()
            time.sleep(1)
            debugger.debugger.GetSelectedTarget().GetProcess().SendAsyncInterrupt()
            self.assertTrue(done.wait(util.STEP_TIMEOUT), "the interrupt did not stop the steps")
            stopped = debugger.when()
            self.assertGreater(stopped, 0, outcome["out"])
            self.assertLess(stopped, 190000, outcome["out"])
            debugger.run("backstep rsi")
            self.assertEqual(debugger.when(), stopped - 1)
        finally:
            debugger.close()


class GdbSampleTfile(unittest.TestCase):
    """gdb's own trace file sample (../shared/samples/gdb_tfile), no program."""

    SAMPLE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "shared",
                          "samples", "gdb_tfile", "stepping_amd64.tf")

    def test_sample(self):
        if not os.path.exists(self.SAMPLE):
            self.fail("sample missing: " + self.SAMPLE)
        env = util.Env.from_argv()
        path = os.path.join(env.dir, "stepping_amd64.tf")  # the index goes next to it
        with open(self.SAMPLE, "rb") as src, open(path, "wb") as dst:
            dst.write(src.read())
        debugger = Lldb()
        try:
            out = debugger.run("backstep open " + path)
            events = int(re.search(r": (\d+) events", out).group(1))
            self.assertIn("format:     tfile", debugger.run("backstep info"))
            debugger.run("backstep goto end")
            self.assertEqual(debugger.when(), events)
            debugger.run("rsi")
            self.assertEqual(debugger.when(), events - 1)
            self.assertEqual(debugger.frame().GetPC(),
                             env.dump_rip(util.Trace(path, {}), events - 1))
        finally:
            debugger.close()


if __name__ == "__main__":
    util.main()
