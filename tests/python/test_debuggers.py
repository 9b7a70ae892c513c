"""The same module file imports and works inside gdb 13's Python and
lldb-19's Python; the front-end scripts (scripts/gdb/backstep.py,
scripts/lldb/backstep.py) run bs-goto, bs-origin and bs-history against
`backstep serve`."""

import os
import re
import subprocess

import backstep
from conftest import PYTHONPATH, TIMEOUT, run, symbols

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SMOKE = ("import sys; sys.path.insert(0, {path!r}); import backstep; "
         "t = backstep.open({trace!r}); c = t.at('end'); "
         "print('SMOKE', backstep._core.__file__, len(t), c.position, hex(c.regs['rip']), "
         "len(t.positions_at_pc(c.regs['rip'])), len(list(t.writes({addr}, 8))))")


def expected(trace, addr):
    t = backstep.open(trace)
    c = t.at("end")
    return (f"{len(t)} {len(t)} {hex(c.regs['rip'])} {len(t.positions_at_pc(c.regs['rip']))} "
            f"{len(list(t.writes(addr, 8)))}")


def test_module_in_gdb_python(dataflow_static):
    addr = symbols(dataflow_static.program)["copy_dst"]
    code = SMOKE.format(path=PYTHONPATH, trace=dataflow_static.path, addr=addr)
    out = run(["gdb", "-nx", "-batch", "-ex", "python " + code]).stdout
    m = re.search(r"SMOKE (\S+) (.*)", out)
    assert m, out
    assert m.group(1).endswith("_core.abi3.so")
    assert m.group(2) == expected(dataflow_static.path, addr)


def test_module_in_lldb_python(dataflow_static):
    addr = symbols(dataflow_static.program)["copy_dst"]
    code = SMOKE.format(path=PYTHONPATH, trace=dataflow_static.path, addr=addr)
    out = run(["lldb-19", "--batch", "-o", "script " + code]).stdout
    m = re.search(r"SMOKE (\S+) (.*)", out)
    assert m, out
    assert m.group(1).endswith("_core.abi3.so")
    assert m.group(2) == expected(dataflow_static.path, addr)


def chain_head(trace, addr):
    t = backstep.open(trace)
    steps = t.origin(addr, 8, depth=8)
    return f"#0 pos {steps[0].position} pc {steps[0].pc:#x} mem {addr:#x}+8 ="


def test_gdb_script(dataflow_static, backstep_bin):
    addr = symbols(dataflow_static.program)["copy_dst"]
    p = run(["gdb", "-nx", "-batch", "-ex", "file " + dataflow_static.program,
               "-ex", "source " + os.path.join(ROOT, "scripts/gdb/backstep.py"),
               "-ex", f"target remote | {backstep_bin} serve --stdio {dataflow_static.path}",
               "-ex", "bs-goto end", "-ex", "bs-origin copy_dst",
               "-ex", "bs-history copy_dst", "-ex", "bs-goto 0",
               "-ex", "bs-origin &copy_dst 8"])
    out = p.stdout + p.stderr  # gdb -batch prints monitor output on stderr
    t = backstep.open(dataflow_static.path)
    assert f"position {len(t)} of {len(t)}" in out, out
    assert chain_head(dataflow_static.path, addr) in out, out
    assert "(initial image)" in out
    writes = list(t.writes(addr, 8))
    for w in writes:
        assert f"event {w.position} (thread {w.thread}) wrote" in out, out
    assert f"position 0 of {len(t)}" in out, out
    assert f"#0 pos - pc - mem {addr:#x}+8 =" in out, out


def test_lldb_script(dataflow_static, backstep_bin):
    addr = symbols(dataflow_static.program)["copy_dst"]
    proc = subprocess.Popen([backstep_bin, "serve", dataflow_static.path, "--port", "0"],
                            stderr=subprocess.PIPE, text=True)
    try:
        port = None
        for line in proc.stderr:
            m = re.search(r"listening on 127\.0\.0\.1:(\d+)", line)
            if m:
                port = int(m.group(1))
                break
        assert port
        out = run(["lldb-19", "--batch", "-o", "target create " + dataflow_static.program,
                   "-o", f"gdb-remote 127.0.0.1:{port}",
                   "-o", "command script import " + os.path.join(ROOT, "scripts/lldb/backstep.py"),
                   "-o", "bs-goto end", "-o", "bs-origin copy_dst 8 12",
                   "-o", "bs-history copy_dst",
                   "-o", f"bs-origin {addr:#x} 8 2"], timeout=TIMEOUT).stdout
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    t = backstep.open(dataflow_static.path)
    assert f"position {len(t)} of {len(t)}" in out, out
    assert chain_head(dataflow_static.path, addr) in out, out
    assert "(initial image)" in out, out
    assert "(depth)" in out, out
    for w in t.writes(addr, 8):
        assert f"event {w.position} (thread {w.thread}) wrote" in out, out
