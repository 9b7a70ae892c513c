"""LLDB lands where gdb lands: the same scripted sessions in gdb 13 (through
`backstep serve --stdio`) and in lldb-19 (through the plugin, and through
gdb-remote to `backstep serve`), compared stop by stop.

A session is a list of abstract steps (stepi, next, step, finish, continue to
a breakpoint or a watchpoint, each both ways; goto; thread switches; both
ends of the history). Each debugger runs it with its own commands and after
every step reports the trace position, the selected thread, its pc and the
values of named globals; the lists must be equal. Recordings: the demo
(examples/inventory.c) and tests/programs/worker_signal.c (two threads, a
SIGUSR1 handler in each, a `rep stosb`), static and dynamic PIE.

What LLDB cannot do the same way is left out of a session and said in
docs: LLDB has no reverse source-level command of its own (the plugin has
reverse-next/finish; the plain gdb-remote client reverses only with the
monitor's armed moves), and after `thread step-inst` the LLDB command line
selects the thread it stepped, even when the move ended in another one
(gdb and the plugin select the thread the stub stopped in).

Run by ctest:
  /usr/bin/python3 test_lldb_differential.py --backstep BIN --make-example BIN
      --programs DIR --plugin libbackstep_lldb.so --inventory PROG
"""

import argparse
import os
import re
import subprocess
import sys
import threading
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import util  # noqa: E402

_parser = argparse.ArgumentParser()
_parser.add_argument("--plugin", required=True)
_parser.add_argument("--programs", required=True)
_parser.add_argument("--inventory", required=True)
_parser.add_argument("--make-x64dbg", required=True)
_parser.add_argument("--make-bap", required=True)
_args, _rest = _parser.parse_known_args()
sys.argv[1:] = _rest
PLUGIN = os.path.abspath(_args.plugin)
PROGRAMS = _args.programs
INVENTORY = os.path.abspath(_args.inventory)
MAKE_X64DBG = _args.make_x64dbg
MAKE_BAP = _args.make_bap
SAMPLE_TFILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "shared",
                            "samples", "gdb_tfile", "stepping_amd64.tf")
sys.path.insert(0, subprocess.run(["lldb-19", "-P"], stdout=subprocess.PIPE, text=True,
                                  check=True).stdout.strip())
import lldb  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
COMMAND_TIMEOUT = 60  # seconds; a command that takes longer hangs


def marks(path):
    lines = {}
    with open(path) as f:
        for number, text in enumerate(f, 1):
            match = re.search(r"MARK:([a-z0-9-]+)", text)
            if match and number > 8:
                lines[match.group(1)] = number
    return lines


WORKER = marks(os.path.join(HERE, "..", "programs", "worker_signal.c"))


def parse_position(text):
    match = re.search(r"^position (\d+) of \d+", text, re.M)
    assert match, text
    return int(match.group(1))


# ---- gdb

GDB_COMMANDS = {
    "stepi": ["stepi"], "rstepi": ["reverse-stepi"],
    "next": ["next"], "rnext": ["reverse-next"],
    "step": ["step"], "finish": ["finish"], "rfinish": ["reverse-finish"],
    "continue": ["continue"], "rcontinue": ["reverse-continue"],
}


def gdb_commands(step):
    kind, arg = step[0], step[1] if len(step) > 1 else None
    if kind in GDB_COMMANDS:
        return GDB_COMMANDS[kind]
    if kind == "break":
        return ["break %s" % arg]
    if kind == "watch":
        return ["watch %s" % arg]
    if kind == "delete":
        return ["delete"]
    if kind == "goto":
        return ["monitor goto %s" % arg, "stepi"]
    assert kind == "thread", step
    return ["thread %s" % arg]


def gdb_session(program, trace, session, names, backstep):
    """[(position, thread, pc, {name: value})] after each step."""
    argv = ["gdb", "-q", "-batch", "-nx", "-ex", "set pagination off", "-ex", "set confirm off",
            "-ex", "file " + program if program else "set architecture i386:x86-64",
            "-ex", "target remote | %s serve --stdio %s" % (backstep, trace),
            # Signal stops are e2e_recorded_sigall's: here both debuggers pass them.
            "-ex", "handle SIGUSR1 nostop noprint pass"]
    report = ["echo @@STOP\\n", "monitor when", "thread",
              "printf \"pc=0x%lx\\n\", $pc"]
    report += ["printf \"var %s=%%ld\\n\", (long)(%s)" % (n, n) for n in names]
    for step in session:
        for c in gdb_commands(step):
            argv += ["-ex", c]
        if step[0] not in ("break", "watch", "delete"):
            for c in report:
                argv += ["-ex", c]
    out = util.run(argv, timeout=COMMAND_TIMEOUT * 4, check=False)
    stops = []
    for chunk in out.split("@@STOP\n")[1:]:
        thread = re.search(r"^\[Current thread is \d+ \(Thread 1\.(\d+)\)\]", chunk, re.M)
        pc = re.search(r"^pc=(0x[0-9a-f]+)", chunk, re.M)
        assert thread and pc, out
        values = {m.group(1): int(m.group(2))
                  for m in re.finditer(r"^var (\S+)=(-?\d+)$", chunk, re.M)}
        stops.append((parse_position(chunk), int(thread.group(1)), int(pc.group(1), 16), values))
    return stops, out


# ---- lldb (SB API, one debugger per session)

class Lldb:
    def __init__(self):
        self.debugger = lldb.SBDebugger.Create(False)
        self.debugger.SetAsync(False)
        self.interpreter = self.debugger.GetCommandInterpreter()
        self.log = []

    def run(self, command):
        result = lldb.SBCommandReturnObject()
        done = threading.Event()

        def go():
            self.interpreter.HandleCommand(command, result)
            done.set()
        worker = threading.Thread(target=go, daemon=True)
        worker.start()
        if not done.wait(COMMAND_TIMEOUT):
            self.debugger.GetSelectedTarget().GetProcess().SendAsyncInterrupt()
            done.wait(10)
            raise AssertionError("lldb hangs in %r:\n%s" % (command, "\n".join(self.log[-40:])))
        out = (result.GetOutput() or "") + (result.GetError() or "")
        self.log.append("(lldb) %s\n%s" % (command, out))
        return out

    def stop(self, names, position):
        process = self.debugger.GetSelectedTarget().GetProcess()
        thread = process.GetSelectedThread()
        target = self.debugger.GetSelectedTarget()
        values = {}
        for n in names:
            value = thread.GetFrameAtIndex(0).EvaluateExpression("(long)(%s)" % n)
            values[n] = value.GetValueAsSigned() if value.GetError().Success() else None
        return (position, thread.GetThreadID(), thread.GetFrameAtIndex(0).GetPC(), values)

    def discard_step_plans(self):
        """LLDB keeps the plan of a `thread step-inst` that ended with the
        stub's `exception` stop (an armed move): a later `continue` would
        finish it first. `thread plan discard 1` on every thread, as the
        plugin does (docs)."""
        process = self.debugger.GetSelectedTarget().GetProcess()
        selected = process.GetSelectedThread()
        for thread in process:
            process.SetSelectedThread(thread)
            self.interpreter.HandleCommand("thread plan discard 1", lldb.SBCommandReturnObject())
        process.SetSelectedThread(selected)

    def close(self):
        lldb.SBDebugger.Destroy(self.debugger)


PLUGIN_COMMANDS = {
    "stepi": ["thread step-inst"], "rstepi": ["backstep rsi"],
    "next": ["next"], "rnext": ["backstep rn"],
    "step": ["step"], "finish": ["finish"], "rfinish": ["backstep reverse-finish"],
    "continue": ["continue"], "rcontinue": ["backstep rc"],
}
MONITOR = "process plugin packet monitor "
REMOTE_COMMANDS = {
    "stepi": ["thread step-inst"], "rstepi": [MONITOR + "reverse-stepi", "thread step-inst"],
    "next": ["next"], "step": ["step"], "finish": ["finish"], "continue": ["continue"],
    "rcontinue": [MONITOR + "direction reverse", "continue", MONITOR + "direction forward"],
}


def lldb_commands(step, table, plugin):
    kind, arg = step[0], step[1] if len(step) > 1 else None
    if kind in table:
        return table[kind]
    if kind == "break":
        if str(arg).startswith("worker_signal.c:"):
            return ["breakpoint set -f worker_signal.c -l %s" % arg.split(":")[1]]
        return ["breakpoint set -n %s" % arg]
    if kind == "watch":
        return ["watchpoint set variable %s" % arg]
    if kind == "delete":
        return ["breakpoint delete -f", "watchpoint delete -f"]
    if kind == "goto":
        return ["backstep goto %s" % arg] if plugin else [MONITOR + "goto %s" % arg,
                                                          "thread step-inst"]
    assert kind == "thread", step
    return ["thread select %s" % arg]


def lldb_session(program, trace, session, names, server=None):
    debugger = Lldb()
    try:
        if server is None:
            debugger.run("plugin load " + PLUGIN)
            debugger.run("backstep open %s %s" % (program or "", trace))
            when, table = "backstep when", PLUGIN_COMMANDS
        else:
            if program:
                debugger.run("target create " + program)
            debugger.run("gdb-remote " + server.address())
            when, table = MONITOR + "when", REMOTE_COMMANDS
        debugger.run("process handle SIGUSR1 --stop false --notify false --pass true")
        stops = []
        for step in session:
            for c in lldb_commands(step, table, server is None):
                debugger.run(c)
            if step[0] not in ("break", "watch", "delete"):
                out = debugger.run(when)
                if server is not None and step[0] == "goto":
                    # LLDB's rule: after `thread step-inst` its command line
                    # selects the thread it stepped, also when the goto
                    # ended in another one; a user selects the thread the
                    # monitor names (gdb and the plugin do it themselves).
                    thread = int(re.search(r"\(thread (\d+)\)", out).group(1))
                    debugger.debugger.GetSelectedTarget().GetProcess().SetSelectedThreadByID(
                        thread)
                if server is not None and step[0] in ("goto", "rstepi"):
                    debugger.discard_step_plans()
                stops.append(debugger.stop(names, parse_position(out)))
        return stops, "\n".join(debugger.log)
    finally:
        debugger.close()


def break_line(mark):
    return ("break", "worker_signal.c:%d" % WORKER[mark])


class Differential:
    PROGRAM = None     # path (None: the trace names no program)
    NAMES = []         # globals compared at every stop
    EXPECT = None      # what the program prints

    @classmethod
    def setUpClass(cls):
        cls.env = util.Env.from_argv()
        path = os.path.join(cls.env.dir, os.path.basename(cls.PROGRAM) + ".ucir")
        out = util.run([cls.env.backstep, "record", "-o", path, "--", cls.PROGRAM])
        assert cls.EXPECT in out, out
        util.run([cls.env.backstep, "index", path])
        cls.trace = path
        info = util.run([cls.env.backstep, "info", path])
        cls.events = int(re.search(r"^events:\s+(\d+)", info, re.M).group(1))

    def compare(self, session, remote=True):
        """Runs `session` in gdb, the plugin and (when `remote`) gdb-remote."""
        expected, gdb_out = gdb_session(self.PROGRAM, self.trace, session, self.NAMES,
                                        self.env.backstep)
        self.assertEqual(len(expected), sum(s[0] not in ("break", "watch", "delete")
                                            for s in session), gdb_out)
        plugin, plugin_out = lldb_session(self.PROGRAM, self.trace, session, self.NAMES)
        self.assertStops(session, expected, plugin, gdb_out, plugin_out)
        if remote:
            with util.Server(self.env, util.Trace(self.trace, {})) as server:
                got, remote_out = lldb_session(self.PROGRAM, self.trace, session, self.NAMES,
                                               server)
            self.assertStops(session, expected, got, gdb_out, remote_out)
        return expected

    def assertStops(self, session, expected, got, gdb_out, lldb_out):
        steps = [s for s in session if s[0] not in ("break", "watch", "delete")]
        for i, (e, g) in enumerate(zip(expected, got)):
            if e != g:
                self.fail("stop %d after %r: gdb %r, lldb %r\n---- gdb\n%s\n---- lldb\n%s"
                          % (i, steps[i], e, g, gdb_out[-6000:], lldb_out[-6000:]))
        self.assertEqual(len(expected), len(got))


class Demo(Differential, unittest.TestCase):
    PROGRAM = INVENTORY
    NAMES = ["total", "stock[2].count"]
    EXPECT = "114 items in stock"

    def test_both_ends(self):
        # Every command at the end and at the start of the history stops
        # there, with no hang; a reverse step from the end goes back one. (A
        # second `continue` at the end is the recorded exit, `W`, in both
        # debuggers, as a live process exits: e2e_recorded_sigall.)
        end = self.events
        stops = self.compare([("continue",), ("stepi",), ("next",), ("step",),
                              ("rstepi",), ("rstepi",), ("goto", "end"), ("goto", "end"),
                              ("goto", 0), ("rstepi",), ("rcontinue",), ("goto", 5), ("goto", 5),
                              ("stepi",)])
        self.assertEqual([s[0] for s in stops[:4]], [end] * 4)
        self.assertEqual([s[0] for s in stops[4:]], [end - 1, end - 2, end, end, 0, 0, 0, 5, 5, 6])

    def test_breakpoints_watchpoints_and_source_steps_both_ways(self):
        self.compare([("break", "sum_counts"), ("continue",), ("continue",), ("finish",),
                      ("next",), ("step",), ("next",), ("continue",), ("rfinish",), ("rnext",),
                      ("rstepi",),
                      ("rcontinue",), ("delete",), ("watch", "stock[2].count"), ("continue",),
                      ("continue",), ("rcontinue",), ("rcontinue",), ("stepi",), ("rstepi",)],
                     remote=False)  # reverse-next/finish: the plugin's commands

    def test_gdb_remote_without_the_plugin(self):
        self.compare([("break", "sum_counts"), ("continue",), ("finish",), ("next",),
                      ("rcontinue",), ("rstepi",), ("delete",), ("watch", "stock[2].count"),
                      ("continue",), ("rcontinue",), ("goto", 100), ("goto", 100)])


class WorkerSignal(Differential):
    NAMES = ["total", "hits"]
    EXPECT = "hits 2 total 2051"

    def test_goto_in_every_thread_and_thread_switches(self):
        info = util.run([self.env.backstep, "info", self.trace])
        first, last = map(int, re.search(r"^\s+thread 2: events (\d+)\.\.(\d+)", info,
                                          re.M).groups())
        middle = (first + last) // 2
        stops = self.compare([("goto", middle), ("stepi",), ("rstepi",), ("goto", first - 50),
                              ("goto", middle), ("goto", middle), ("thread", 1), ("goto", last + 5),
                              ("goto", first), ("rstepi",), ("goto", first + 3), ("rstepi",)],
                             remote=False)
        self.assertEqual(stops[0][0], middle)
        self.assertEqual(stops[0][1], 2)

    def test_breakpoints_and_watchpoints_in_both_threads(self):
        self.compare([break_line("handler-add"), ("continue",), ("continue",), ("rcontinue",),
                      ("delete",), break_line("work-add"), ("continue",), ("rcontinue",),
                      ("rcontinue",), ("delete",), ("watch", "total"),
                      ("continue",), ("continue",), ("continue",), ("rcontinue",),
                      ("rcontinue",), ("delete",), ("rstepi",), ("stepi",)])

    def test_finish_out_of_the_signal_handler(self):
        # The handler's caller is the signal frame (__restore_rt) on the
        # worker's 8 MiB stack: LLDB needs the stack's never-written bytes to
        # read as zero to unwind there (docs/protocol.md), as gdb does.
        stops = self.compare([break_line("handler-add"), ("continue",), ("delete",), ("finish",),
                              ("stepi",), ("rstepi",)])
        self.assertEqual(stops[1][0], stops[3][0])
        self.assertGreater(stops[1][0], stops[0][0])

    def test_rep_stos_and_the_end(self):
        self.compare([break_line("rep-stos"), ("continue",), ("delete",), ("stepi",),
                      ("stepi",), ("stepi",), ("rstepi",), ("rstepi",), ("continue",),
                      ("rstepi",), ("next",)], remote=True)


class WorkerSignalStatic(WorkerSignal, unittest.TestCase):
    PROGRAM = os.path.join(PROGRAMS, "worker_signal_O0_static")


class WorkerSignalPie(WorkerSignal, unittest.TestCase):
    PROGRAM = os.path.join(PROGRAMS, "worker_signal_O0_pie")


class OtherFormats(Differential, unittest.TestCase):
    """Traces of no recorded program: a two-thread x64dbg trace and a BAP
    trace (both written by our writers) and a tfile gdb wrote; positions,
    threads and pcs in both directions, in every thread, at both ends."""

    @classmethod
    def setUpClass(cls):
        cls.env = util.Env.from_argv()

    def run_session(self, path, continues=True):
        util.run([self.env.backstep, "index", path])
        self.trace = path
        info = util.run([self.env.backstep, "info", path])
        ranges = [tuple(map(int, r)) for r in
                  re.findall(r"^\s+thread \d+: events (\d+)\.\.(\d+)", info, re.M)]
        session = []
        for first, last in ranges:
            session += [("goto", (first + last) // 2), ("stepi",), ("rstepi",), ("rstepi",)]
        if continues:
            session += [("continue",), ("stepi",), ("rstepi",), ("rcontinue",), ("rstepi",)]
        session += [("goto", "end"), ("stepi",), ("goto", 0), ("rstepi",)]
        self.compare(session)

    def test_x64dbg_two_threads(self):
        path = os.path.join(self.env.dir, "program.trace64")
        util.run([MAKE_X64DBG, path])
        self.run_session(path)

    def test_bap(self):
        path = os.path.join(self.env.dir, "program.bap")
        util.run([MAKE_BAP, path])
        self.run_session(path)

    def test_gdb_tfile(self):
        path = os.path.join(self.env.dir, "stepping_amd64.tf")  # the index goes next to it
        with open(SAMPLE_TFILE, "rb") as src, open(path, "wb") as dst:
            dst.write(src.read())
        self.run_session(path)


if __name__ == "__main__":
    util.main()
