"""Debugger-neutral helpers for the end-to-end tests of `backstep serve`.

Every step runs with a timeout; when a test fails, the server's packet log
(`--log`) and stderr are printed so the failure can be read packet by packet.

Usage from a test module:
    env = util.Env.from_argv()          # --backstep BIN --make-example BIN
    trace = env.trace()                 # generated once per process
    with util.Server(env, trace) as server:
        out = util.gdb(env, server, ["stepi", "printf \\"RIP=%lx\\\\n\\", $rip"])
"""

import argparse
import fcntl
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import unittest

STEP_TIMEOUT = 60  # seconds for any one debugger run or server start


class Env:
    """Paths of the binaries under test and a scratch directory."""

    _instance = None

    def __init__(self, backstep, make_example):
        self.backstep = backstep
        self.make_example = make_example
        self.dir = tempfile.mkdtemp(prefix="backstep-e2e-")
        self._trace = None

    @classmethod
    def from_argv(cls):
        if cls._instance is None:
            parser = argparse.ArgumentParser()
            parser.add_argument("--backstep", required=True)
            parser.add_argument("--make-example", required=True)
            args, rest = parser.parse_known_args()
            sys.argv[1:] = rest
            cls._instance = cls(args.backstep, args.make_example)
        return cls._instance

    def trace(self, events=20000):
        """The generated REVEN trace and its facts (far_pc, once_address...)."""
        if self._trace is None:
            path = os.path.join(self.dir, "trace.bin")
            out = run([self.make_example, path, "--events", str(events), "--seed", "3", "--info"])
            facts = {}
            for line in out.splitlines()[1:]:
                key, value = line.split()
                facts[key] = int(value, 0)
            # Build the index once, outside any debugger timeout.
            run([self.backstep, "index", path])
            self._trace = Trace(path, facts)
        return self._trace

    def big_trace(self):
        """A 600,000-event generated REVEN trace (~22 MB, larger than a page-cache
        folio, so that one fault cannot map all of it), indexed."""
        path = os.path.join(self.dir, "big.bin")
        if not os.path.exists(path + ".bsidx"):
            run([self.make_example, path, "--events", "600000", "--seed", "4"])
            run([self.backstep, "index", path])
        assert os.path.getsize(path) > 16 << 20, "the generator wrote a smaller trace"
        return Trace(path, {})

    def dump_rip(self, trace, position):
        """rip at `position` according to `backstep dump`."""
        out = run([self.backstep, "dump", trace.path, "--at", str(position), "--regs"])
        match = re.search(r"^rip\s+(0x[0-9a-f]+)", out, re.M)
        assert match, out
        return int(match.group(1), 16)

    def cleanup(self):
        shutil.rmtree(self.dir, ignore_errors=True)


class Trace:
    def __init__(self, path, facts):
        self.path = path
        self.facts = facts

    def __getattr__(self, name):
        try:
            return self.facts[name]
        except KeyError:
            raise AttributeError(name)


def resident_bytes(pid, path):
    """The resident bytes (smaps "Rss:") of process pid's mappings of path."""
    real, total, in_path = os.path.realpath(path), 0, False
    with open("/proc/%d/smaps" % pid) as f:
        for line in f:
            first = line.split(None, 1)[0]
            if "-" in first and not first.endswith(":"):
                in_path = line.rstrip("\n").endswith(real)
            elif in_path and first == "Rss:":
                total += int(line.split()[1]) * 1024
    return total


def run(argv, timeout=STEP_TIMEOUT, check=True, stdin=None):
    proc = subprocess.run(argv, stdin=stdin, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          timeout=timeout, text=True)
    if check and proc.returncode != 0:
        raise AssertionError("%s exited %d:\n%s" % (argv, proc.returncode, proc.stdout))
    return proc.stdout


class Server:
    """`backstep serve TRACE --port 0 --log LOG` for the duration of a `with`."""

    def __init__(self, env, trace, extra=(), read_stderr=True):
        """`read_stderr=False`: stop reading the server's stderr once it has
        said where it listens, as a script that only wanted the port."""
        self.env = env
        self.read_stderr = read_stderr
        self.log = os.path.join(env.dir, "packets-%d.log" % id(self))
        self.argv = [env.backstep, "serve", trace.path, "--port", "0", "--log", self.log]
        self.argv += list(extra)
        self.stderr_lines = []

    def __enter__(self):
        self.proc = subprocess.Popen(self.argv, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE, text=True)
        if not self.read_stderr:  # the smallest pipe (a page): it fills sooner
            fcntl.fcntl(self.proc.stderr.fileno(), fcntl.F_SETPIPE_SZ, 4096)
        ready = threading.Event()

        def pump():
            for line in self.proc.stderr:
                self.stderr_lines.append(line)
                match = re.match(r"listening on (\S+):(\d+)", line)
                if match:
                    self.host, self.port = match.group(1), int(match.group(2))
                    ready.set()
                    if not self.read_stderr:
                        return
        self.pump = threading.Thread(target=pump, daemon=True)
        self.pump.start()
        if not ready.wait(STEP_TIMEOUT):
            self.proc.kill()
            raise AssertionError("server did not start:\n" + "".join(self.stderr_lines))
        return self

    def __exit__(self, exc_type, exc, tb):
        # Ctrl-C is the clean way out; it must exit 0.
        self.proc.send_signal(signal.SIGINT)
        try:
            code = self.proc.wait(STEP_TIMEOUT)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            code = "killed after SIGINT timed out"
        self.pump.join(STEP_TIMEOUT)
        self.proc.stderr.close()
        if exc_type is not None or code != 0:
            self.dump()
        if exc_type is None and code != 0:
            raise AssertionError("server exit status after SIGINT: %s" % code)
        return False

    def address(self):
        return "%s:%d" % (self.host, self.port)

    def dump(self):
        sys.stderr.write("---- server stderr\n" + "".join(self.stderr_lines))
        if os.path.exists(self.log):
            with open(self.log) as f:
                lines = f.readlines()
            sys.stderr.write("---- packet log (last 200 of %d lines)\n" % len(lines))
            sys.stderr.write("".join(lines[-200:]))


def gdb_argv(commands, connect):
    argv = ["gdb", "-q", "-batch", "-nx", "-ex", "set architecture i386:x86-64",
            "-ex", "set pagination off"]
    if "--stdio" in connect:
        # gdb waits `remotetimeout` (2 s) for the first reply, which comes
        # once the trace is open: on a loaded 2-core machine that can take
        # longer, and gdb then resends qSupported and takes the second reply
        # for the next packet's ("Remote replied unexpectedly").
        argv += ["-ex", "set remotetimeout 30"]
    argv += ["-ex", connect]
    for c in commands:
        argv += ["-ex", c]
    return argv


def gdb(server, commands, timeout=STEP_TIMEOUT):
    """Runs gdb in batch mode against `server`; returns its output."""
    return run(gdb_argv(commands, "target remote " + server.address()), timeout, check=False)


def lldb(env, server, commands, timeout=STEP_TIMEOUT, program=None):
    """Runs lldb-19 on a command file (docs/lldb.md §4: `-o` lists are cut
    short by signal and history-boundary stops); `program`: `target create`
    it before connecting (LLDB does not fetch a recorded program itself)."""
    path = os.path.join(env.dir, "cmds-%d.lldb" % time.monotonic_ns())
    with open(path, "w") as f:
        if program:
            f.write("target create %s\n" % program)
        f.write("gdb-remote %s\n" % server.address())
        for c in commands:
            f.write(c + "\n")
    return run(["lldb-19", "-b", "-o", "command source -e false " + path], timeout, check=False)


def expect(test, pattern, text, count=None):
    """Asserts that `pattern` (a regex) occurs in `text` (`count` times)."""
    found = re.findall(pattern, text, re.M)
    if count is None:
        test.assertTrue(found, "%r not found in:\n%s" % (pattern, text))
    else:
        test.assertEqual(len(found), count, "%r x%d expected in:\n%s" % (pattern, count, text))
    return found


def values(pattern, text):
    """Every hex or decimal number captured by `pattern`'s first group."""
    return [int(v, 0) for v in re.findall(pattern, text, re.M)]


def main():
    env = Env.from_argv()
    try:
        unittest.main(verbosity=2)
    finally:
        env.cleanup()
