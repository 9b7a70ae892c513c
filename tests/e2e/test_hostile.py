"""`backstep serve` against hostile clients and files: each test does what an
attacker or an unlucky user would (huge ranges, many connections, a trace
truncated under the server), over 127.0.0.1, then checks that the server
still answers a well-behaved gdb and that its resident memory stayed bounded
(/proc/PID/status VmRSS).

Run by ctest (e2e_hostile) with util's arguments and --programs DIR.
"""

import os
import re
import resource
import shutil
import socket
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import recorded  # noqa: E402
import rsp  # noqa: E402
import util  # noqa: E402

PROGRAMS = recorded.programs_dir_from_argv()
ENV = util.Env.from_argv()

# Growth of the server's resident memory that any test may cause; the
# sanitizer build keeps freed memory in quarantine and shadows what it maps,
# so its bound is four times larger (still far below the gigabytes an
# unbounded range query takes).
SANITIZED = "libasan" in util.run(["ldd", ENV.backstep], check=False)
RSS_BOUND_KIB = 128 * 1024 * (4 if SANITIZED else 1)
LENGTHS = [0, 1, 1 << 20, 1 << 40, (1 << 64) - 1]


def recording():
    """A recorded program's trace (virtual addresses), recorded once."""
    return recorded.record(ENV, PROGRAMS, "O0_static").trace


def well_behaved_gdb(test, server):
    """A normal gdb session still works: connect, step, read rip."""
    out = util.gdb(server, ["stepi", 'printf "RIP=%lx\\n", $rip'])
    util.expect(test, r"^RIP=[0-9a-f]+$", out)


class HugeRanges(unittest.TestCase):
    """Range queries cost what the trace holds, never the length asked."""

    def check_server(self, trace, address):
        with util.Server(ENV, trace) as server:
            before = rsp.rss_kib(server.proc.pid)
            with rsp.Client(server.host, server.port) as c:
                for command in ("history", "last-write", "next-write"):
                    for length in LENGTHS:
                        ok, text = c.monitor("%s %#x %#x" % (command, address, length))
                        if ok:
                            self.assertTrue(text.strip(), (command, length))
                        else:
                            # Refused with a reason: zero length (usage) or
                            # past the address space.
                            self.assertRegex(text, r"usage|address space|at most", text)
                # gdb users swap ADDR and LEN: an answer (or, for a physical
                # trace, the translation limit), not 12 GB.
                ok, text = c.monitor("history 0x7fffffffe6b8 0x7fffffffe6b8")
                if not ok:
                    self.assertRegex(text, r"at most 0x40000000 bytes")
                # Watchpoints of any length, then continue: a stop reply.
                for kind in (2, 3, 4):
                    for length in (1 << 40, (1 << 63) - 1):
                        reply = c.ask("Z%d,%x,%x" % (kind, address, length))
                        if reply != "OK":
                            # Refused, or read watchpoints on a trace
                            # without recorded reads (unsupported: empty).
                            self.assertRegex(reply, r"^(E|$)", reply)
                            continue
                        # A stop, or an error (a physical trace refuses to
                        # translate more than 1 GiB).
                        self.assertRegex(c.ask("vCont;c"), r"^[STE]", (kind, length))
                        self.assertEqual(c.ask("z%d,%x,%x" % (kind, address, length)), "OK")
                        self.assertRegex(c.ask("bs"), r"^[ST]")  # back to the start
                # Past the end of the address space: refused at insertion.
                self.assertRegex(c.ask("Z2,%x,%x" % (address, (1 << 64) - 1)), r"^E")
            grown = rsp.rss_kib(server.proc.pid) - before
            self.assertLess(grown, RSS_BOUND_KIB, "resident memory grew by %d KiB" % grown)
            well_behaved_gdb(self, server)

    def test_recorded_program(self):
        # A trace of virtual addresses: only the pages the index lists count.
        self.check_server(recording(), 0x1000)

    def test_physical_trace(self):
        # REVEN: virtual ranges are translated page by page, so a long one
        # is refused with its limit.
        self.check_server(ENV.trace(), 0x1000)


def vm_size_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmSize:"):
                return int(line.split()[1])
    raise AssertionError("no VmSize for pid %d" % pid)


def wait_for_stderr(test, server, pattern, timeout=rsp.TIMEOUT):
    """Waits until the server has printed a line matching `pattern`."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if any(re.search(pattern, line) for line in list(server.stderr_lines)):
            return
        time.sleep(0.1)
    util.expect(test, pattern, "".join(server.stderr_lines))  # fails, showing stderr


def closed_by_server(sock, timeout=rsp.TIMEOUT):
    """True if the server closes `sock` (EOF or reset) within `timeout`."""
    sock.settimeout(timeout)
    try:
        return sock.recv(1) == b""
    except ConnectionResetError:
        return True
    except socket.timeout:
        return False


class Connections(unittest.TestCase):
    """Connection limit, failed thread creation, rapid connect/close."""

    def test_limit(self):
        with util.Server(ENV, recording(), ["--max-connections", "8"]) as server:
            idle = [socket.create_connection((server.host, server.port)) for _ in range(8)]
            for s in idle:  # each is served (answers a packet)
                s.sendall(b"$?#3f")
                self.assertTrue(s.recv(64))
            extra = socket.create_connection((server.host, server.port))
            self.assertTrue(closed_by_server(extra), "a 9th connection was served")
            extra.close()
            wait_for_stderr(self, server, r"connections already \(the limit")
            for s in idle:
                s.close()
            time.sleep(0.5)  # the server sees them close
            well_behaved_gdb(self, server)

    def test_out_of_threads(self):
        if "libasan" in util.run(["ldd", ENV.backstep], check=False):
            self.skipTest("AddressSanitizer aborts on any failed mmap: an address-space limit "
                          "cannot model running out of threads in the sanitizer build")
        with util.Server(ENV, recording()) as server:
            pid = server.proc.pid
            # Room for a few more thread stacks (8 MiB each), not for 40.
            limit = (vm_size_kib(pid) + 48 * 1024) * 1024
            soft, hard = resource.prlimit(pid, resource.RLIMIT_AS)
            resource.prlimit(pid, resource.RLIMIT_AS, (limit, hard))  # soft only: undone below
            clients = []
            for _ in range(40):
                s = socket.create_connection((server.host, server.port))
                clients.append(s)
            time.sleep(1)
            self.assertIsNone(server.proc.poll(), "the server died")
            wait_for_stderr(self, server, r"cannot start a thread")
            for s in clients:
                s.close()
            time.sleep(1)
            resource.prlimit(pid, resource.RLIMIT_AS, (soft, hard))
            well_behaved_gdb(self, server)

    def test_rapid_connect_close(self):
        with util.Server(ENV, recording()) as server:
            before = rsp.rss_kib(server.proc.pid)
            for _ in range(500):
                socket.create_connection((server.host, server.port)).close()
            with rsp.Client(server.host, server.port) as c:
                self.assertRegex(c.ask("?"), r"^[ST]")
            grown = rsp.rss_kib(server.proc.pid) - before
            self.assertLess(grown, RSS_BOUND_KIB)
            well_behaved_gdb(self, server)

    def test_stderr_nobody_reads(self):
        # Two notices per client that spoke: 300 clients write 25 KiB into a
        # pipe that holds 4. The server must not block on its stderr.
        with util.Server(ENV, recording(), read_stderr=False) as server:
            for _ in range(300):
                with socket.create_connection((server.host, server.port)) as s:
                    s.sendall(b"$?#3f")
                    s.settimeout(rsp.TIMEOUT)
                    self.assertTrue(s.recv(64), "the server stopped answering")
            with rsp.Client(server.host, server.port) as c:
                self.assertRegex(c.ask("?"), r"^[ST]")


def cpu_seconds(pid):
    """User + system CPU time of process `pid` (/proc/PID/stat)."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class BusyWait(unittest.TestCase):
    """`serve --busy-wait US`: awake waits for a stepping client, bounded."""

    def test_an_idle_client_costs_no_cpu(self):
        # The longest budget: each wait may stay awake 0.1 s after a reply,
        # then sleeps (and the next ones too, the client being slow).
        with util.Server(ENV, recording(), ["--busy-wait", "100000"]) as server:
            with rsp.Client(server.host, server.port) as c:
                for _ in range(20):
                    self.assertRegex(c.ask("?"), r"^[ST]")
                before = cpu_seconds(server.proc.pid)
                time.sleep(2)
                used = cpu_seconds(server.proc.pid) - before
                self.assertLess(used, 0.5, "the server spun while its client was idle")
                self.assertRegex(c.ask("?"), r"^[ST]")
            well_behaved_gdb(self, server)

    def test_off_and_bad_values(self):
        with util.Server(ENV, recording(), ["--busy-wait", "0"]) as server:
            well_behaved_gdb(self, server)
        for bad in ["-1", "100001", "soon"]:
            out = util.run([ENV.backstep, "serve", recording().path, "--port", "0",
                            "--busy-wait", bad], check=False)
            self.assertIn("--busy-wait takes microseconds from 0 to 100000", out)


class TraceChangedUnderTheServer(unittest.TestCase):
    def test_truncated_trace_ends_sessions_not_the_server(self):
        # A copy of the trace (and its index), truncated while a client is
        # stepping through it.
        path = os.path.join(ENV.dir, "truncated.ucir")
        shutil.copy(recording().path, path)
        util.run([ENV.backstep, "index", path])
        with util.Server(ENV, util.Trace(path, {})) as server:
            with rsp.Client(server.host, server.port) as c:
                self.assertRegex(c.ask("?"), r"^[ST]")
                self.assertRegex(c.ask("vCont;s"), r"^[ST]")
                os.truncate(path, 0)
                closed = False
                try:
                    for packet in ["vCont;s", "bs", "vCont;c", "bc", "g", "vCont;s"] * 5:
                        c.ask(packet)
                except (EOFError, ConnectionResetError):
                    closed = True
                self.assertTrue(closed, "the session went on over a truncated trace")
            self.assertIsNone(server.proc.poll(), "the server died")
            wait_for_stderr(self, server, r"shrank while served")
            # New clients are told no (closed), the server still runs.
            again = socket.create_connection((server.host, server.port))
            self.assertTrue(closed_by_server(again))
            again.close()
            self.assertIsNone(server.proc.poll())


if __name__ == "__main__":
    util.main()
