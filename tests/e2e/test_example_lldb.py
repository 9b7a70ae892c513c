"""The built-in example's LLDB session (examples/inventory.lldb, run by
scripts/demo) end to end: record examples/inventory.c with `backstep record`,
run the session in real lldb-19 with the backstep plugin, and check every
claim its comments make (the gdb twin is test_example.py).

Run by ctest:
  /usr/bin/python3 test_example_lldb.py --backstep BIN --program BIN --session LLDB --plugin SO
"""

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

TIMEOUT = 120


class ExampleSession(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="backstep-example-lldb-")
        cls.trace = os.path.join(cls.dir, "inventory.ucir")
        rec = subprocess.run([ARGS.backstep, "record", "-o", cls.trace, "--", ARGS.program],
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                             timeout=TIMEOUT)
        assert rec.returncode == 0, rec.stdout
        run = subprocess.run(
            ["lldb-19", "--batch", "-o", "plugin load " + ARGS.plugin,
             "-o", "backstep open %s %s" % (ARGS.program, cls.trace),
             "-o", "command source -e false " + ARGS.session],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=TIMEOUT)
        cls.out = run.stdout
        cls.status = run.returncode

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, ignore_errors=True)

    def find(self, pattern):
        match = re.search(pattern, self.out, re.M)
        self.assertTrue(match, "%r not found in LLDB's output:\n%s" % (pattern, self.out))
        return match

    def test_the_session_ran_without_errors(self):
        self.assertEqual(self.status, 0, self.out)
        self.assertNotIn("error:", self.out)

    def test_end_of_the_recording_and_the_broken_count(self):
        self.find(r"\(lldb\) continue\n(?:.*\n){0,3}\* thread #1, stop reason = end of the recorded "
                  r"history\n"
                  r"\s+frame #0: 0x[0-9a-f]+ inventory`_exit")
        self.find(r"^\s+\[2\] = \(name = \"greengag\", count = 101\)$")

    def test_reverse_watch_stops_in_strcpy_called_by_rename_item(self):
        self.find(r"\(lldb\) backstep reverse-continue\n\nWatchpoint 1 hit:\nold value: 101\n"
                  r"new value: 10\n\* thread #1, stop reason = watchpoint 1\n"
                  r"\s+frame #0: 0x[0-9a-f]+ inventory`__strcpy\w*")
        self.find(r"^\s+frame #1: 0x[0-9a-f]+ inventory`rename_item\(.*name=\"greengage\"\) at "
                  r"inventory\.c:25")
        self.find(r"^\s+frame #2: 0x[0-9a-f]+ inventory`main at inventory\.c:33")

    def test_reverse_finish_lands_on_the_call(self):
        self.find(r"\(lldb\) backstep reverse-finish\n\* thread #1, .*\n"
                  r"\s+frame #0: 0x[0-9a-f]+ inventory`rename_item\(.*\) at inventory\.c:25:\d+\n"
                  r"(?:.*\n){3}-> 25\s.*strcpy")

    def test_previous_write_is_the_restock(self):
        self.find(r"Watchpoint 1 hit:\nold value: 10\nnew value: 7\n.*\n"
                  r"\s+frame #0: 0x[0-9a-f]+ inventory`restock\(i=2, amount=3\) at "
                  r"inventory\.c:23")

    def test_history_lists_both_writes_and_when_matches(self):
        when = int(self.find(r"^position (\d+) of \d+ \(thread 1\)").group(1))
        writes = re.findall(r"^event (\d+) \(thread 1\) wrote (\d+) bytes at (0x[0-9a-f]+): "
                            r"([0-9a-f ]+)$", self.out, re.M)
        self.assertEqual(len(writes), 2, self.out)
        self.assertEqual(int(writes[0][0]), when)
        self.assertEqual(writes[0][3].split()[0], "0a")
        start, count_address = int(writes[1][2], 16), int(writes[0][2], 16)
        data = writes[1][3].split()
        self.assertEqual(data[count_address - start:count_address - start + 2], ["65", "00"])


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--backstep", required=True)
    parser.add_argument("--program", required=True)
    parser.add_argument("--session", required=True)
    parser.add_argument("--plugin", required=True)
    ARGS, rest = parser.parse_known_args()
    sys.argv[1:] = rest
    unittest.main(verbosity=2)
