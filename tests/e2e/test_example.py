"""The built-in example (scripts/demo) end to end: record examples/inventory.c
with `backstep record`, then run the demo's gdb session (examples/inventory.gdb)
in real gdb against `backstep serve --stdio` and check every claim the session
makes in its comments.

Run by ctest:  /usr/bin/python3 test_example.py --backstep BIN --program BIN --session GDB
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
        cls.dir = tempfile.mkdtemp(prefix="backstep-example-")
        cls.trace = os.path.join(cls.dir, "inventory.ucir")
        rec = subprocess.run([ARGS.backstep, "record", "-o", cls.trace, "--", ARGS.program],
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                             timeout=TIMEOUT)
        cls.record_output = rec.stdout
        assert rec.returncode == 0, rec.stdout
        gdb = subprocess.run(
            ["gdb", "-nx", "-batch", "-ex", "file " + ARGS.program,
             "-ex", "target remote | %s serve --stdio %s" % (ARGS.backstep, cls.trace),
             "-x", ARGS.session],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=TIMEOUT)
        cls.out = gdb.stdout

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, ignore_errors=True)

    def find(self, pattern):
        match = re.search(pattern, self.out, re.M)
        self.assertTrue(match, "%r not found in gdb's output:\n%s" % (pattern, self.out))
        return match

    def test_the_program_ran_under_the_recorder(self):
        self.assertIn("114 items in stock", self.record_output)
        self.assertIn("program exited, status 0", self.record_output)

    def test_end_of_history_and_the_broken_count(self):
        self.find(r"^No more reverse-execution history\.\n.* in _exit \(\)")
        self.find(r"name = \"greengag\", count = 101\}")

    def test_reverse_watch_stops_in_strcpy_called_by_rename_item(self):
        stop = self.find(r"Old value = 101\nNew value = 10\n0x[0-9a-f]+ in __strcpy\w* \(\)\n"
                         r"\(gdb\) backtrace\n#0 .*strcpy.*\n"
                         r"#1 .* in rename_item \(.*name=0x[0-9a-f]+ \"greengage\"\) at .*inventory\.c:25\n"
                         r"#2 .* in main \(\) at .*inventory\.c:33\n")
        self.assertTrue(stop)

    def test_reverse_finish_lands_on_the_call(self):
        self.find(r"\(gdb\) reverse-finish\n0x[0-9a-f]+ in rename_item .*inventory\.c:25\n25\t.*strcpy")

    def test_previous_write_is_the_restock(self):
        self.find(r"Old value = 10\nNew value = 7\n0x[0-9a-f]+ in restock \(i=2, amount=3\) at "
                  r".*inventory\.c:23\n")

    def test_history_lists_both_writes_and_when_matches(self):
        when = int(self.find(r"^position (\d+) of \d+ \(thread 1\)").group(1))
        writes = re.findall(r"^event (\d+) \(thread 1\) wrote (\d+) bytes at (0x[0-9a-f]+): ([0-9a-f ]+)$",
                            self.out, re.M)
        self.assertEqual(len(writes), 2, self.out)
        # The restock's write is the event the reverse watch stopped before.
        self.assertEqual(int(writes[0][0]), when)
        self.assertEqual(writes[0][3].split()[0], "0a")
        # strcpy's write covers count's first two bytes with "e\0".
        start, size = int(writes[1][2], 16), int(writes[1][1])
        data = writes[1][3].split()
        count_address = int(writes[0][2], 16)
        self.assertEqual(data[count_address - start:count_address - start + 2], ["65", "00"])
        self.assertLessEqual(start + size, count_address + 4)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--backstep", required=True)
    parser.add_argument("--program", required=True)
    parser.add_argument("--session", required=True)
    ARGS, rest = parser.parse_known_args()
    sys.argv[1:] = rest
    unittest.main(verbosity=2)
