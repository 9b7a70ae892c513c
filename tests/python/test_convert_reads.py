"""`backstep convert --to usercorn` of a recording keeps its recorded reads:
the converted trace declares that reads are recorded and holds every read
of the source at the same position, address and size, with the same value
(the memory at that position)."""

import os

import backstep
from conftest import run, symbols


def accesses(trace, address):
    return [(a.position, a.address, a.data) for a in trace.reads(address, 8)]


def test_usercorn_conversion_keeps_recorded_reads(dataflow_static, workdir, backstep_bin):
    out = os.path.join(workdir, "dataflow_converted.ucir")
    run([backstep_bin, "convert", dataflow_static.path, "-o", out, "--to", "usercorn"])
    src, dst = backstep.open(dataflow_static.path), backstep.open(out)
    assert src.records_reads
    assert dst.records_reads
    assert len(dst) == len(src)
    sym = symbols(dataflow_static.program)
    for name in ("source_value", "hop_memory", "arg_sink", "copy_src"):
        want = accesses(src, sym[name])
        assert want, name
        assert accesses(dst, sym[name]) == want, name
