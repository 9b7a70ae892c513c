"""gdb 13 reads the recorded process's files through host I/O (vFile).

tests/programs/mappings.c (-O0, dynamic PIE) loads libm with dlopen, maps
anonymous memory and grows its heap before checkpoint(), then copies its own
/proc/self/maps to $MAPS_OUT. The test records it with `backstep record`
(which turns ASLR off) and runs it again live under `setarch -R`, then
serves the recording:
  - gdb connects without a warning (it finds the vDSO through
    /proc/PID/task/TID/maps and reads the program and libraries with vFile);
  - `info proc mappings` at checkpoint equals the live program's map there;
  - `remote get /proc/1/exe` gives the program's bytes; a path the trace
    does not name is refused;
  - a hostile vFile sequence (10^4 opens, bad descriptors, huge counts,
    writes) gets errno replies and leaves the stub serving;
  - the loaded libraries (qXfer:libraries-svr4) are right after a jump:
    gdb's `info sharedlibrary` and lldb-19's `image list` and `bt`, after
    `monitor goto` to after the dlopen and back to before the dynamic
    linker's list exists.

Run by ctest:
  /usr/bin/python3 test_process_files.py --backstep BIN --make-example BIN --programs DIR
"""

import os
import re
import socket
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import recorded  # noqa: E402
import util  # noqa: E402

PROGRAMS = recorded.programs_dir_from_argv()


def parse_proc_maps(text):
    """(start, end, perms, offset, name) of each /proc/PID/maps line."""
    rows = []
    for line in text.splitlines():
        fields = line.split(None, 5)
        start, end = (int(x, 16) for x in fields[0].split("-"))
        name = fields[5].strip() if len(fields) > 5 else ""
        rows.append((start, end, fields[1], int(fields[2], 16), name))
    return rows


def parse_info_proc_mappings(text):
    """The same tuples from gdb's `info proc mappings` table."""
    rows = []
    for match in re.finditer(r"^\s+(0x[0-9a-f]+)\s+(0x[0-9a-f]+)\s+0x[0-9a-f]+\s+(0x[0-9a-f]+)"
                             r"\s+([rwxsp-]{4})[ \t]*(.*)$", text, re.M):
        rows.append((int(match.group(1), 16), int(match.group(2), 16), match.group(4),
                     int(match.group(3), 16), match.group(5).strip()))
    return rows


class Rsp:
    """A bare remote-protocol client (acknowledged mode)."""

    def __init__(self, address):
        host, port = address.rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=util.STEP_TIMEOUT)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buffer = b""

    def _read_byte(self):
        while not self.buffer:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ConnectionError("the stub closed the connection")
            self.buffer += chunk
        byte, self.buffer = self.buffer[:1], self.buffer[1:]
        return byte

    def request(self, payload):
        data = payload.encode("latin-1") if isinstance(payload, str) else payload
        self.sock.sendall(b"$" + data + b"#%02x" % (sum(data) % 256))
        while self._read_byte() != b"$":
            pass
        body = b""
        while True:
            byte = self._read_byte()
            if byte == b"#":
                break
            body += byte
        self._read_byte()
        self._read_byte()
        self.sock.sendall(b"+")
        return body

    def send(self, payload):
        """A packet that has no reply: only the acknowledgement."""
        data = payload.encode("latin-1")
        self.sock.sendall(b"$" + data + b"#%02x" % (sum(data) % 256))
        self.assertAck()

    def assertAck(self):
        byte = self._read_byte()
        if byte != b"+":
            raise AssertionError("expected an acknowledgement, got %r" % byte)

    def close(self):
        self.sock.close()


def hexname(path):
    return path.encode().hex()


class ProcessFiles(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.env = util.Env.from_argv()
        cls.program = os.path.abspath(os.path.join(PROGRAMS, "mappings_O0_pie"))
        # Same-length paths: the environment (and so the stack) is the same size.
        cls.recorded_maps = os.path.join(cls.env.dir, "maps.rec")
        cls.live_maps = os.path.join(cls.env.dir, "maps.liv")
        cls.trace = os.path.join(cls.env.dir, "mappings.ucir")
        env = dict(os.environ, MAPS_OUT=cls.recorded_maps)
        subprocess.run([cls.env.backstep, "record", "-o", cls.trace, "--", cls.program],
                       env=env, check=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       timeout=util.STEP_TIMEOUT)
        util.run([cls.env.backstep, "index", cls.trace])
        env = dict(os.environ, MAPS_OUT=cls.live_maps)
        subprocess.run(["setarch", "-R", cls.program], env=env, check=False,
                       timeout=util.STEP_TIMEOUT)
        cls.served = util.Trace(cls.trace, {})

    def gdb(self, commands, extended=False):
        with util.Server(self.env, self.served) as server:
            connect = ("target extended-remote " if extended else "target remote ")
            argv = ["gdb", "-q", "-batch", "-nx", "-ex", "set pagination off",
                    "-ex", "set confirm off", "-ex", connect + server.address()]
            for c in commands:
                argv += ["-ex", c]
            return util.run(argv, check=False)

    def assertNoWarning(self, out):
        """No warning but gdb's own about reading files from any remote
        target with sysroot "target:" (gdbserver gets it too)."""
        warnings = [w for w in re.findall(r"(?m)^warning: .*$", out)
                    if not w.startswith("warning: File transfers from remote targets can be slow")]
        self.assertEqual(warnings, [], out)

    def test_info_proc_mappings_equals_the_live_map(self):
        out = self.gdb(["break checkpoint", "continue", "info proc mappings"])
        self.assertNoWarning(out)
        self.assertIn("Breakpoint 1, ", out)
        with open(self.live_maps) as f:
            live = parse_proc_maps(f.read())
        with open(self.recorded_maps) as f:
            during_recording = parse_proc_maps(f.read())
        served = parse_info_proc_mappings(out)
        # The live run and the recorded run see the same map (ASLR off)...
        self.assertEqual(live, during_recording)
        # ... and so does gdb, from the recording, at checkpoint: libm (dlopen),
        # the anonymous mapping and its protected page, the grown heap.
        self.assertEqual(served, live, out)
        names = [row[4] for row in served]
        self.assertTrue(any(n.endswith("/libm.so.6") for n in names), out)
        self.assertIn("[heap]", names)
        self.assertTrue(any(r[2] == "---p" and r[4] == "" for r in served), out)

    def test_connect_without_warning_and_remote_get(self):
        exe_copy = os.path.join(self.env.dir, "exe.copy")
        refused = os.path.join(self.env.dir, "passwd.copy")
        out = self.gdb(["remote get /proc/1/exe " + exe_copy,
                        "remote get /etc/passwd " + refused, "info proc"])
        self.assertNoWarning(out)
        with open(exe_copy, "rb") as copy, open(self.program, "rb") as original:
            self.assertEqual(copy.read(), original.read())
        self.assertFalse(os.path.exists(refused))
        util.expect(self, r"Remote I/O error: Permission denied|Permission denied", out)
        util.expect(self, r"^exe = '%s'" % re.escape(self.program), out)
        util.expect(self, r"^cmdline = '%s'" % re.escape(self.program), out)

    def test_extended_remote_run_restarts(self):
        out = self.gdb(["break checkpoint", "continue", "run", "info proc mappings", "continue",
                        "monitor when"], extended=True)
        # Two hits: the run restarted at the first position and went on.
        util.expect(self, r"^Breakpoint 1, (0x[0-9a-f]+ in )?checkpoint", out, count=2)
        self.assertNotIn("Remote connection closed", out)
        # At the restart the map is the initial one: no libm yet.
        restarted = parse_info_proc_mappings(out)
        self.assertTrue(restarted, out)
        self.assertFalse([row for row in restarted if "libm.so" in row[4]], out)

    def test_monitor_info_mem_and_gef_connect_sequence(self):
        # What GEF's `gef-remote` does on connect (remote get of /proc/PID/exe,
        # maps, environ, cmdline) and its vmmap sources (`info proc mappings`,
        # else `monitor info mem`), parsed as gef.py parses them.
        root = os.path.join(self.env.dir, "gefroot")
        gets = ["remote get /proc/1/%s %s/%s" % (name, root, name)
                for name in ("exe", "maps", "environ", "cmdline")]
        os.makedirs(root, exist_ok=True)
        out = self.gdb(["break checkpoint", "continue"] + gets +
                       ["info proc mappings", "monitor info mem"])
        self.assertNoWarning(out)
        with open(os.path.join(root, "maps")) as f:
            maps = parse_proc_maps(f.read())
        self.assertEqual(maps, parse_info_proc_mappings(out))
        with open(os.path.join(root, "cmdline"), "rb") as f:
            self.assertEqual(f.read(), self.program.encode() + b"\0")
        with open(os.path.join(root, "environ"), "rb") as f:
            self.assertIn(b"MAPS_OUT=" + self.recorded_maps.encode() + b"\0", f.read())
        info_mem = []
        for line in out.splitlines():
            fields = line.split()
            if len(fields) == 3 and re.fullmatch(r"[0-9a-f]{16}-[0-9a-f]{16}", fields[0]):
                start, end = (int(x, 16) for x in fields[0].split("-"))
                info_mem.append((start, end, fields[2][1] == "r", fields[2][2] == "w"))
        self.assertEqual(info_mem, [(m[0], m[1], m[2][0] == "r", m[2][1] == "w") for m in maps])

    def test_lldb_memory_region(self):
        with open(self.live_maps) as f:
            live = parse_proc_maps(f.read())
        heap = next(m for m in live if m[4] == "[heap]")
        libm = next(m for m in live if m[4].endswith("/libm.so.6"))
        stack = next(m for m in live if m[4] == "[stack]")
        with util.Server(self.env, self.served) as server:
            out = util.lldb(self.env, server, [
                "breakpoint set -n checkpoint", "continue",
                "memory region $rsp", "memory region 0x%x" % (heap[0] + 16),
                "memory region 0x%x" % libm[0], "memory region 0x1000"], program=self.program)
        regions = re.findall(r"^\[(0x[0-9a-f]+)-(0x[0-9a-f]+)\) ([rwx-]{3})(?: (\S+))?", out, re.M)
        self.assertEqual(len(regions), 4, out)
        expected = [stack, heap, libm]
        for (start, end, perms, name), row in zip(regions, expected):
            self.assertEqual((int(start, 16), int(end, 16), perms, name),
                             (row[0], row[1], row[2][:3], row[4]), out)
        # Below the first mapping: a gap, no permissions.
        self.assertEqual(int(regions[3][0], 16), 0, out)
        self.assertEqual(regions[3][2], "---", out)

    def test_munmap_makes_the_region_unreadable_in_both_directions(self):
        # mappings.c writes 0xab over `region`, unmaps it, calls unmapped(),
        # maps it again at the same address and calls remapped().
        def mark(name):
            return "echo @@%s\\n" % name
        out = self.gdb(["break unmapped", "break remapped", "continue",
                        mark("after"), "print/x region[4*4096]", "print/x region",
                        "info proc mappings", "monitor when",
                        "catch syscall munmap", "reverse-continue", "reverse-continue",
                        mark("entry"), "print/x region[4*4096]", "monitor when",
                        "continue", mark("return"), "print/x region[4*4096]",
                        "reverse-stepi", mark("reversed"), "print/x region[4*4096]",
                        "info proc mappings",
                        "delete 3", "continue", "continue",
                        mark("remapped"), "print/x region[4*4096]"])
        sections = dict(part.split("\n", 1) for part in out.split("@@")[1:])
        self.assertEqual(set(sections), {"after", "entry", "return", "reversed", "remapped"}, out)
        region = int(re.search(r"^\$\d+ = (0x[0-9a-f]{6,})", sections["after"], re.M).group(1), 16)
        probe = region + 4 * 4096
        unreadable = "Cannot access memory at address 0x%x" % probe
        # After the munmap: unreadable, and the map has no row over it.
        self.assertIn(unreadable, sections["after"])
        covering = [row for row in parse_info_proc_mappings(sections["after"])
                    if row[0] <= probe < row[1]]
        self.assertEqual(covering, [], out)
        # Back at the system call's entry, the bytes read again; at its
        # return they do not; one reverse-stepi before it, again.
        util.expect(self, r"^\$\d+ = 0xab$", sections["entry"])
        self.assertIn(unreadable, sections["return"])
        util.expect(self, r"^\$\d+ = 0xab$", sections["reversed"])
        covering = [row for row in parse_info_proc_mappings(sections["reversed"])
                    if row[0] <= probe < row[1]]
        self.assertEqual(len(covering), 1, out)
        # Mapped again: zeros, not the old bytes.
        util.expect(self, r"^\$\d+ = 0x0$", sections["remapped"])
        util.expect(self, r"^Breakpoint 2, remapped", out)

        # dump at the stop in unmapped(): "??" and the unmapped line.
        position = int(re.search(r"position (\d+)", sections["after"]).group(1))
        entry = int(re.search(r"position (\d+)", sections["entry"]).group(1)) - 1
        dump = util.run([self.env.backstep, "dump", self.trace, "--at", str(position),
                         "--mem", "0x%x" % probe, "16"])
        self.assertIn("0x%016x: %s" % (probe, " ".join(["??"] * 16)), dump)
        self.assertIn("# 0x%x-0x%x: unmapped at this position" % (probe, probe + 16), dump)

        # lldb-19: `memory read` fails there after the munmap, reads 0xab at
        # the system call's entry, and `memory region` shows a gap.
        with util.Server(self.env, self.served) as server:
            lldb = util.lldb(self.env, server, [
                "breakpoint set -n unmapped", "continue",
                "memory read -s1 -c1 -fx 0x%x" % probe, "memory region 0x%x" % probe,
                "process plugin packet monitor goto %d" % entry, "thread step-inst",
                "memory read -s1 -c1 -fx 0x%x" % probe], program=self.program)
        util.expect(self, r"^error: memory read failed for 0x%x" % probe, lldb)
        util.expect(self, r"^\[0x[0-9a-f]+-0x[0-9a-f]+\) ---$", lldb)
        util.expect(self, r"^0x%x: 0xab$" % probe, lldb)

    def test_extended_remote_R_restarts_without_a_reply(self):
        with util.Server(self.env, self.served) as server:
            rsp = Rsp(server.address())
            try:
                first = rsp.request("?")
                self.assertEqual(rsp.request("R00"), b"")  # not in extended mode
                self.assertEqual(rsp.request("!"), b"OK")
                self.assertRegex(rsp.request("c"), rb"^T05")
                self.assertNotEqual(rsp.request("?"), first)
                rsp.send("R00")
                # No reply to R: the next reply is the `?` one, at the start.
                self.assertEqual(rsp.request("?"), first)
                self.assertRegex(rsp.request("c"), rb"^T05")  # the session goes on
            finally:
                rsp.close()

    def checkpoint_position(self):
        out = self.gdb(["break checkpoint", "continue", "monitor when"])
        return util.values(r"^position (\d+) of", out)[0]

    def test_gdb_info_sharedlibrary_after_a_jump(self):
        later = self.checkpoint_position()
        with util.Server(self.env, self.served) as server:
            out = util.run(["gdb", "-q", "-batch", "-nx", "-ex", "set pagination off",
                            "-ex", "target remote " + server.address(),
                            "-ex", "monitor goto %d" % later, "-ex", "stepi",
                            "-ex", "info sharedlibrary",
                            "-ex", "monitor goto 100", "-ex", "stepi",
                            "-ex", "echo ---\\n", "-ex", "info sharedlibrary"], check=False)
            with open(server.log) as f:
                log = f.read()
        # gdb took the list from the stub, not from its own memory reads.
        self.assertTrue("qXfer:libraries-svr4:read::" in log, "gdb did not ask for the list")
        self.assertNotIn("warning: while parsing target library list", out)
        after, before = out.split("---\n")
        rows = re.compile(r"^0x[0-9a-f]+\s+0x[0-9a-f]+\s.*/([^/\s]+)$", re.M)
        self.assertEqual(sorted(rows.findall(after)),
                         ["ld-linux-x86-64.so.2", "libc.so.6", "libm.so.6"], out)
        # Position 100 is inside the dynamic linker's start: only itself.
        self.assertEqual(rows.findall(before), ["ld-linux-x86-64.so.2"], out)

    def test_lldb_image_list_after_a_jump(self):
        later = self.checkpoint_position()
        with util.Server(self.env, self.served) as server:
            out = util.lldb(self.env, server, [
                "process plugin packet monitor goto %d" % later, "thread step-inst",
                "image list", "bt",
                "process plugin packet monitor goto 100", "thread step-inst",
                "script print('---')", "image list", "bt"], program=self.program)
        after, before = out.split("\n---\n")

        def names(text):
            return sorted(os.path.basename(path) for path in
                          re.findall(r"^\[\s*\d+\] \S+ 0x[0-9a-f]+ (\S+)", text, re.M))
        self.assertEqual(names(after), ["[vdso]", "ld-linux-x86-64.so.2", "libc.so.6", "libm.so.6",
                                        "mappings_O0_pie"], out)
        # The stop in checkpoint, called from main: symbols from the program.
        util.expect(self, r"frame #0: 0x[0-9a-f]+ mappings_O0_pie`checkpoint", after)
        self.assertEqual(names(before), ["[vdso]", "ld-linux-x86-64.so.2", "mappings_O0_pie"], out)
        util.expect(self, r"frame #0: 0x[0-9a-f]+ ld-linux-x86-64\.so\.2`", before)

    def test_hostile_host_io_leaves_the_stub_serving(self):
        with util.Server(self.env, self.served) as server:
            rsp = Rsp(server.address())
            try:
                maps = "vFile:open:%s,0,0" % hexname("/proc/1/maps")
                replies = [rsp.request(maps) for _ in range(10000)]
                opened = [r for r in replies if re.fullmatch(rb"F[0-9a-f]+", r)]
                self.assertEqual(len(opened), 64)  # then EMFILE (0x18)
                self.assertEqual(set(replies) - set(opened), {b"F-1,18"})
                self.assertEqual(rsp.request("vFile:close:0"), b"F0")
                self.assertEqual(rsp.request("vFile:close:0"), b"F-1,9")
                self.assertEqual(rsp.request("vFile:pread:0,10,0"), b"F-1,9")
                self.assertEqual(rsp.request("vFile:pread:ffffffffffff,10,0"), b"F-1,16")
                self.assertEqual(rsp.request("vFile:fstat:12345"), b"F-1,9")
                # A huge count is cut to what fits in a packet.
                reply = rsp.request("vFile:pread:1,ffffffffffffffff,0")
                self.assertRegex(reply, rb"^F[0-9a-f]+;")
                self.assertLessEqual(len(reply), 0x4000)
                self.assertEqual(rsp.request("vFile:pread:1,10,ffffffffffffffff"), b"F0;")
                self.assertEqual(rsp.request("vFile:open:%s,0,0" % hexname("/etc/passwd")),
                                 b"F-1,d")
                self.assertEqual(rsp.request("vFile:open:%s,0,0" % hexname("/proc/2/maps")),
                                 b"F-1,2")
                self.assertEqual(rsp.request("vFile:open:%s,0,0" % hexname("/" + "x" * 5000)),
                                 b"F-1,5b")
                self.assertEqual(rsp.request("vFile:open:%s,241,1a4" % hexname(self.program)),
                                 b"F-1,1e")
                self.assertEqual(rsp.request("vFile:pwrite:1,0,abc"), b"F-1,1e")
                self.assertEqual(rsp.request("vFile:unlink:%s" % hexname(self.program)),
                                 b"F-1,1e")
                self.assertEqual(rsp.request("vFile:open:zz"), b"F-1,16")
                for fd in range(1, 64):
                    self.assertEqual(rsp.request("vFile:close:%x" % fd), b"F0")
                # Still serving: the program opens and reads.
                fd = rsp.request("vFile:open:%s,0,0" % hexname("/proc/1/exe"))
                self.assertEqual(fd, b"F0")
                self.assertTrue(rsp.request("vFile:pread:0,4,0").endswith(b";\x7fELF"))
                self.assertEqual(rsp.request("?")[:1], b"T")
            finally:
                rsp.close()


if __name__ == "__main__":
    util.main()
