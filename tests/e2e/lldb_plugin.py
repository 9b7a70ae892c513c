"""What the LLDB plugin's e2e tests share: their arguments, lldb-19's Python
module, and `Lldb`, one SB debugger with the plugin loaded.

Imported by test_lldb_plugin.py and test_lldb_plugin_formats.py; it parses
--plugin and --make-avx512 and leaves the other arguments to util/recorded.
"""

import argparse
import os
import re
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import recorded  # noqa: E402
import util  # noqa: E402

_parser = argparse.ArgumentParser()
_parser.add_argument("--plugin", required=True)
_parser.add_argument("--make-avx512", required=True)
_args, _rest = _parser.parse_known_args()
sys.argv[1:] = _rest
PLUGIN = os.path.abspath(_args.plugin)
MAKE_AVX512 = _args.make_avx512
PROGRAMS = recorded.programs_dir_from_argv()
L = recorded.LINES

# The sanitizer build runs this script with the ASan runtime preloaded (an
# ASan-built plugin needs it first in the process). Children (gdb, backstep,
# lldb-19) must not inherit it: lldb-19 itself hangs in setlocale() at
# start-up with libasan preloaded.
ASAN_PRELOADED = "libasan" in os.environ.pop("LD_PRELOAD", "")
sys.path.insert(0, subprocess.run(["lldb-19", "-P"], stdout=subprocess.PIPE, text=True,
                                  check=True).stdout.strip())
import lldb  # noqa: E402


def position(text):
    match = re.search(r"^position (\d+) of", text, re.M)
    assert match, text
    return int(match.group(1))


class Lldb:
    """One SB debugger with the plugin loaded."""

    def __init__(self):
        self.debugger = lldb.SBDebugger.Create(False)
        self.debugger.SetAsync(False)
        # What LLDB prints outside command results (a watchpoint's old/new values).
        env = util.Env.from_argv()
        self.console_path = os.path.join(env.dir, "console-%d.txt" % id(self))
        self.console = open(self.console_path, "w")
        self.debugger.SetOutputFileHandle(self.console, False)
        self.console_read = 0
        self.interpreter = self.debugger.GetCommandInterpreter()
        self.run("plugin load " + PLUGIN)

    def run(self, command, ok=True):
        result = lldb.SBCommandReturnObject()
        self.interpreter.HandleCommand(command, result)
        out = (result.GetOutput() or "") + (result.GetError() or "")
        if ok is not None:
            assert result.Succeeded() == ok, "%r: succeeded=%s\n%s" % (command, result.Succeeded(),
                                                                      out)
        return out

    def when(self):
        return position(self.run("backstep when"))

    def console_text(self):
        """The console output since the last call."""
        self.debugger.GetOutputFile().Flush()
        self.console.flush()
        with open(self.console_path) as f:
            text = f.read()
        new, self.console_read = text[self.console_read:], len(text)
        return new

    def frame(self):
        thread = self.debugger.GetSelectedTarget().GetProcess().GetSelectedThread()
        return thread.GetFrameAtIndex(0)

    def close(self):
        lldb.SBDebugger.Destroy(self.debugger)
        self.console.close()


class LldbTestCase(unittest.TestCase):
    """A test with its own `Lldb` per test method (self.lldb) and the
    scratch environment per class (cls.env)."""

    @classmethod
    def setUpClass(cls):
        cls.env = util.Env.from_argv()

    def setUp(self):
        self.lldb = Lldb()

    def tearDown(self):
        self.lldb.close()
