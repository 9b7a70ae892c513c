"""gdb 13 and lldb-19 on a BAP frames trace (tests/tools/make_bap.cc): a
hand-made two-thread x86-64 program written by backstep's BAP writer and
served by `backstep serve`.

Checked: both threads listed with their own pcs; registers no frame touched
are <unavailable>; memory known from the recorded reads (value inference
back to position 0); instruction bytes disassembled; `rwatch` hit in
reverse in thread 2 with the value read; a write watchpoint hit in reverse
in the other thread; `backstep info` (threads, TOC, declared frames).
"""

import argparse
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import util  # noqa: E402

MAKE_BAP = None


class Trace:
    def __init__(self, path):
        self.path = path


def bap_trace(env):
    path = os.path.join(env.dir, "two_threads.frames")
    if not os.path.exists(path):
        util.run([MAKE_BAP, path])
        util.run([env.backstep, "index", path])
    return Trace(path)


class BapGdb(unittest.TestCase):
    def test_threads_registers_memory_rwatch(self):
        env = util.Env.from_argv()
        trace = bap_trace(env)
        with util.Server(env, trace) as server:
            out = util.gdb(server, [
                "info threads", "info registers rip rsp rax", "x/i $pc", "x/2gx 0x404000",
                "thread 2", "info registers rip rbx",
                "monitor goto end", "stepi",
                "rwatch *(long *)0x404008", "reverse-continue",
                "printf \"THREAD=%d PC=%lx\\n\", $_thread, $pc",
                # (Thread 1 has run its last frame by then: its pc is not in
                # the legacy trace, so the watch is set from thread 2.)
                "delete", "watch *(long *)0x404000", "reverse-continue",
                "printf \"THREAD=%d PC=%lx\\n\", $_thread, $pc"])
        # Both threads, each at its first instruction.
        util.expect(self, r"^\*? +1 +Thread 1\.1 +0x0000000000401000 in \?\? \(\)$", out)
        util.expect(self, r"^\*? +2 +Thread 1\.2 +0x0000000000402000 in \?\? \(\)$", out)
        # Only the pc is known at position 0; rsp is never touched.
        util.expect(self, r"^rip +0x401000 +0x401000$", out)
        util.expect(self, r"^rsp +<unavailable>$", out)
        util.expect(self, r"^rax +<unavailable>$", out)
        util.expect(self, r"^rbx +<unavailable>$", out)
        util.expect(self, r"=> 0x401000:\s+mov\s+0x404000,%rax", out)
        # counter = 10 and flag = 0x1234, known from the first reads.
        util.expect(self, r"^0x404000:\s+0x000000000000000a\s+0x0000000000001234$", out)
        # Reverse from the end: thread 2's last read of flag.
        util.expect(self, r"Thread 2 hit Hardware read watchpoint 1: \*\(long \*\)0x404008", out)
        util.expect(self, r"^Value = 4660$", out)
        util.expect(self, r"^THREAD=2 PC=402000$", out)
        # The last write of counter, in thread 1: 14 -> 15 (5 iterations);
        # in reverse gdb shows the later value as the old one.
        util.expect(self, r"Thread 1 hit Hardware watchpoint 2: \*\(long \*\)0x404000", out)
        util.expect(self, r"^Old value = 15$", out)
        util.expect(self, r"^New value = 14$", out)
        util.expect(self, r"^THREAD=1 PC=40100c$", out)


class BapLldb(unittest.TestCase):
    def test_threads_memory_disassembly(self):
        env = util.Env.from_argv()
        trace = bap_trace(env)
        with util.Server(env, trace) as server:
            out = util.lldb(env, server, [
                "thread list", "register read rip", "memory read -s8 -fx -c2 0x404000",
                "disassemble -s 0x402000 -c 2",
                # An armed goto to the end and one step: one stop (the step
                # reply used to name another thread, and LLDB stepped again
                # for ever).
                "process plugin packet monitor goto end", "thread step-inst",
                "register read rip"])
        # LLDB prints tids in hex or decimal.
        util.expect(self, r"thread #1: tid = (0x0001|1), 0x0000000000401000", out)
        util.expect(self, r"thread #2: tid = (0x0002|2), 0x0000000000402000", out)
        util.expect(self, r"rip = 0x0000000000401000", out)
        # At the end: one stop; each thread where its last jmp went (the
        # writer lists a thread's registers in its last frame's post-list,
        # which is all a BAP reader knows after it).
        util.expect(self, r"thread #1, stop reason = moved to position 40\n"
                    r"\s+frame #0: 0x0000000000401000", out)
        util.expect(self, r"thread #2, stop reason = moved to position 40\n"
                    r"\s+frame #0: 0x0000000000402000", out)
        self.assertNotIn("rip = 0x0000000000401014", out)
        util.expect(self, r"0x00404000: 0x000000000000000a 0x0000000000001234", out)
        util.expect(self, r"0x402000: movq\s+0x404008, %rbx", out)
        util.expect(self, r"0x402008: incq\s+%rbx", out)


class BapInfo(unittest.TestCase):
    def test_info(self):
        env = util.Env.from_argv()
        trace = bap_trace(env)
        out = util.run([env.backstep, "info", trace.path])
        util.expect(self, r"^format: +bap$", out)
        util.expect(self, r"^events: +40 \(positions 0\.\.40\)$", out)
        util.expect(self, r"^threads: +2$", out)
        util.expect(self, r"^  thread 1: events 0\.\.35$", out)
        util.expect(self, r"^  thread 2: events 4\.\.39$", out)
        util.expect(self, r"^reads: +recorded \(rwatch/awatch available\)$", out)
        util.expect(self, r"^coverage: +registers \d+ of \d+ known", out)
        util.expect(self, r"^frames: +40 declared$", out)
        util.expect(self, r"^first pcs: +1: 0x401000, 2: 0x402000$", out)


class BapProtoc(unittest.TestCase):
    def test_protoc_decodes_our_frames(self):
        """protoc (independent of our reader) decodes the writer's first
        frame as docs/formats/bap.md says it must be: thread 1's load of counter."""
        import struct
        import subprocess
        env = util.Env.from_argv()
        trace = bap_trace(env)
        with open(trace.path, "rb") as f:
            data = f.read()
        magic, version, arch, machine = struct.unpack_from("<QQQQ", data, 0)
        self.assertEqual((magic, version, arch, machine), (0x677c28828aaf6025, 3, 9, 64))
        meta_size = struct.unpack_from("<Q", data, 48)[0]
        at = 56 + meta_size
        size = struct.unpack_from("<Q", data, at)[0]
        proto = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "core",
                             "src", "formats", "bap")
        out = subprocess.run(["protoc", "--decode=backstep.core.bap_proto.frame",
                              "-I", proto, "bap_frames.proto"], input=data[at + 8:at + 8 + size],
                             stdout=subprocess.PIPE, timeout=60, check=True).stdout.decode()
        util.expect(self, r"^  address: 4198400$", out)          # 0x401000
        util.expect(self, r"^  thread_id: 0$", out)
        util.expect(self, r"^          address: 4210688$", out)  # mem operand 0x404000
        util.expect(self, r'^      value: "\\n\\000\\000', out)  # 10, little-endian
        util.expect(self, r'^          name: "rax"$', out)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--make-bap", required=True)
    args, rest = parser.parse_known_args()
    MAKE_BAP = args.make_bap
    sys.argv[1:] = rest
    util.main()
