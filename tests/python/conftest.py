"""Fixtures of the Python module's tests (run by ctest: tests/CMakeLists.txt).

Environment (set by the ctest entry): BACKSTEP_BIN (the CLI),
BACKSTEP_MAKE_EXAMPLE (writes generated REVEN traces), BACKSTEP_PROGRAMS
(the directory of the built tests/programs/*.c), BACKSTEP_PYTHONPATH (where
`import backstep` is found: build/python). Traces are made once per session
in a temporary directory: a generated REVEN trace, `backstep record`
recordings of test programs, and a tfile exported from one of them.
"""

import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile

import pytest

PYTHONPATH = os.environ.get("BACKSTEP_PYTHONPATH")
if PYTHONPATH:
    sys.path.insert(0, PYTHONPATH)

import backstep  # noqa: E402

TIMEOUT = 120


def env_path(name):
    value = os.environ.get(name)
    if not value:
        pytest.fail(f"{name} is not set (run through ctest)")
    return value


def run(argv, check=True, timeout=TIMEOUT, **kw):
    p = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, **kw)
    if check and p.returncode != 0:
        raise AssertionError(f"{argv} exited {p.returncode}: {p.stderr}")
    return p


class Fixture:
    """A trace file and what its maker knows about it."""

    def __init__(self, name, path, facts=None, program=None):
        self.name, self.path, self.facts, self.program = name, path, facts or {}, program

    def __repr__(self):
        return self.name


@pytest.fixture(scope="session")
def workdir():
    d = tempfile.mkdtemp(prefix="backstep-pytest-")
    yield d
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture(scope="session")
def backstep_bin():
    return env_path("BACKSTEP_BIN")


def make_reven(workdir, name, events, seed):
    path = os.path.join(workdir, name, "trace.bin")
    os.makedirs(os.path.dirname(path))
    out = run([env_path("BACKSTEP_MAKE_EXAMPLE"), path, "--events", str(events), "--seed",
               str(seed), "--info"]).stdout
    facts = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 2:
            try:
                facts[parts[0]] = int(parts[1], 0)
            except ValueError:
                pass
    return Fixture("reven", path, facts)


def record(workdir, backstep_bin, program):
    exe = os.path.join(env_path("BACKSTEP_PROGRAMS"), program)
    out = os.path.join(workdir, program + ".ucir")
    run([backstep_bin, "record", "-o", out, "--", exe])
    return Fixture("ucir:" + program, out, program=exe)


@pytest.fixture(scope="session")
def reven(workdir):
    return make_reven(workdir, "reven", 20000, 3)


@pytest.fixture(scope="session")
def tfile(workdir, backstep_bin, dataflow_static):
    """A tfile exported from a recording (`convert --to tfile` refuses it: a
    tfile frame cannot carry the state of the positions before it): every
    50th position as a frame of registers, stack window and accessed bytes."""
    out = os.path.join(workdir, "dataflow.tf")
    run([backstep_bin, "export", dataflow_static.path, "-o", out, "--every", "50"])
    return Fixture("tfile", out, program=dataflow_static.program)


@pytest.fixture(scope="session")
def loop_ucir(workdir, backstep_bin):
    return record(workdir, backstep_bin, "loop_O0_static")


@pytest.fixture(scope="session")
def dataflow_static(workdir, backstep_bin):
    return record(workdir, backstep_bin, "dataflow_O2_static")


@pytest.fixture(scope="session")
def dataflow_pie(workdir, backstep_bin):
    return record(workdir, backstep_bin, "dataflow_O0_pie")


def make_partial(workdir, name, maker, file_name):
    """A multi-thread partial-state trace with recorded reads, written by one
    of our writers from a hand-made program (tests/tools/make_{x64dbg,bap}.cc)."""
    path = os.path.join(workdir, file_name)
    run([env_path(maker), path])
    return Fixture(name, path)


@pytest.fixture(scope="session")
def x64dbg(workdir):
    return make_partial(workdir, "x64dbg", "BACKSTEP_MAKE_X64DBG", "program.trace64")


@pytest.fixture(scope="session")
def bap(workdir):
    return make_partial(workdir, "bap", "BACKSTEP_MAKE_BAP", "two_threads.frames")


@pytest.fixture(scope="session",
                params=["reven", "tfile", "loop_ucir", "dataflow_static", "x64dbg", "bap"])
def any_trace(request):
    return request.getfixturevalue(request.param)


class Stub:
    """`backstep serve` on a free port and a minimal GDB remote protocol
    client: enough to run monitor commands (qRcmd) and read their output."""

    def __init__(self, backstep_bin, trace):
        self.proc = subprocess.Popen([backstep_bin, "serve", trace, "--port", "0"],
                                     stderr=subprocess.PIPE, text=True)
        port = None
        for line in self.proc.stderr:
            m = re.search(r"listening on 127\.0\.0\.1:(\d+)", line)
            if m:
                port = int(m.group(1))
                break
        assert port, "backstep serve did not say where it listens"
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT)
        self.buf = b""
        self.sock.sendall(b"+")

    def close(self):
        self.sock.close()
        self.proc.terminate()
        self.proc.wait(timeout=30)

    def _recv_packet(self):
        while True:
            start = self.buf.find(b"$")
            end = self.buf.find(b"#", start + 1) if start >= 0 else -1
            if start >= 0 and end >= 0 and len(self.buf) >= end + 3:
                body = self.buf[start + 1:end]
                self.buf = self.buf[end + 3:]
                self.sock.sendall(b"+")
                return body
            chunk = self.sock.recv(65536)
            if not chunk:
                raise EOFError("stub closed the connection")
            self.buf += chunk

    def packet(self, body):
        data = body.encode()
        self.sock.sendall(b"$%s#%02x" % (data, sum(data) & 0xFF))

    def monitor(self, command):
        """The console output of `monitor COMMAND`; raises on an E reply."""
        self.packet("qRcmd," + command.encode().hex())
        out = b""
        while True:
            reply = self._recv_packet()
            if reply.startswith(b"O") and reply != b"OK":
                out += bytes.fromhex(reply[1:].decode())
            elif reply == b"OK":
                return out.decode()
            else:
                raise AssertionError(f"monitor {command}: {reply!r} after {out!r}")


@pytest.fixture
def stub_for(backstep_bin):
    stubs = []

    def make(trace):
        s = Stub(backstep_bin, trace)
        stubs.append(s)
        return s

    yield make
    for s in stubs:
        s.close()


def check_chain_against_state(t, steps, value, text=""):
    """Every step of an origin chain holds `value`, and the state agrees: the
    writer's pc at its position, the value in the location right after the
    write and still when the next (later) step read it; positions strictly
    decrease along the chain."""
    c = t.cursor()
    later = len(t)
    for step in steps:
        assert step.value == value, text
        if step.position is None:
            continue
        assert step.position < later, text
        c.goto(step.position)
        assert c.pc == step.pc, text
        for p in (step.position + 1, later):
            c.goto(p)
            if step.location.register:
                got = c.regs.bytes(step.location.register)[:len(value)]
            else:
                got = c.read(step.location.address, len(value))
            assert got == value, text
        later = step.position


def symbols(program):
    """name -> address of the program's symbols (nm)."""
    out = run(["nm", program]).stdout
    table = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 3:
            table[parts[2]] = int(parts[0], 16)
    return table
