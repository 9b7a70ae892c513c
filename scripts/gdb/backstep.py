"""backstep convenience commands for gdb (connected to `backstep serve`).

    (gdb) source scripts/gdb/backstep.py
    (gdb) bs-history counter              # every write to a variable (address, sizeof)
    (gdb) bs-history 0x4c6f30 8 --max 10
    (gdb) bs-origin copy_dst              # where its bytes came from, step by step
    (gdb) bs-origin &buf[4] 4 12          # ADDR-EXPR [LEN] [DEPTH]
    (gdb) bs-goto 50%                     # N, P% or end; the view moves there at once

The commands run the stub's monitor commands (`monitor history`, `monitor
origin`, `monitor goto` + stepi), so they work wherever `target remote`
reaches backstep. An expression that names an object (a variable, an
array element) stands for its address and size; a pointer or an integer is
an address (LEN defaults to 1 then).
"""

import gdb


def _address_and_size(expr):
    value = gdb.parse_and_eval(expr)
    code = value.type.strip_typedefs().code
    if code == gdb.TYPE_CODE_PTR:
        return int(value), None
    if value.address is not None:
        return int(value.address), value.type.sizeof
    return int(value), None


def _range_args(arg, usage):
    argv = gdb.string_to_argv(arg)
    if not argv:
        raise gdb.GdbError("usage: " + usage)
    address, size = _address_and_size(argv[0])
    rest = argv[1:]
    if rest and not rest[0].startswith("--"):
        size = int(gdb.parse_and_eval(rest[0]))
        rest = rest[1:]
    return address, size or 1, rest


class BsHistory(gdb.Command):
    """bs-history EXPR [LEN] [--max N]: every recorded access to the bytes,
    oldest first (monitor history)."""

    def __init__(self):
        super().__init__("bs-history", gdb.COMMAND_DATA)

    def invoke(self, arg, from_tty):
        address, size, rest = _range_args(arg, "bs-history EXPR [LEN] [--max N]")
        gdb.execute(("monitor history %#x %d %s" % (address, size, " ".join(rest))).rstrip())


class BsOrigin(gdb.Command):
    """bs-origin EXPR [LEN] [DEPTH]: where the bytes at the current position
    came from: the write, its instruction, the register or memory it copied,
    recursively (monitor origin)."""

    def __init__(self):
        super().__init__("bs-origin", gdb.COMMAND_DATA)

    def invoke(self, arg, from_tty):
        address, size, rest = _range_args(arg, "bs-origin EXPR [LEN] [DEPTH]")
        depth = rest[0] if rest else ""
        gdb.execute(("monitor origin %#x %d %s" % (address, size, depth)).rstrip())


class BsGoto(gdb.Command):
    """bs-goto N|P%|end: move to a trace position (monitor goto, then the
    stepi that performs it, so gdb refreshes its view)."""

    def __init__(self):
        super().__init__("bs-goto", gdb.COMMAND_RUNNING)

    def invoke(self, arg, from_tty):
        where = arg.strip()
        if not where:
            raise gdb.GdbError("usage: bs-goto N|P%|end")
        gdb.execute("monitor goto " + where)
        gdb.execute("stepi", to_string=not from_tty)
        gdb.execute("monitor when")


BsHistory()
BsOrigin()
BsGoto()
