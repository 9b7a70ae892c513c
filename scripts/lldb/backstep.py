"""backstep convenience commands for LLDB (connected to `backstep serve`
with gdb-remote).

    (lldb) command script import scripts/lldb/backstep.py
    (lldb) bs-history counter             # every write to a variable (address, size)
    (lldb) bs-history 0x4c6f30 8 --max 10
    (lldb) bs-origin copy_dst             # where its bytes came from, step by step
    (lldb) bs-origin &buf[4] 4 12         # ADDR-EXPR [LEN] [DEPTH]
    (lldb) bs-goto 50%                    # N, P% or end

They run the stub's monitor commands (`process plugin packet monitor ...`);
bs-goto also performs the armed move with `thread step-inst`. An expression
that names an object stands for its address and size; a pointer or an
integer is an address (LEN defaults to 1 then).
"""

import shlex

import lldb


def _run(debugger, command, result):
    out = lldb.SBCommandReturnObject()
    debugger.GetCommandInterpreter().HandleCommand(command, out)
    result.AppendMessage((out.GetOutput() or "") + (out.GetError() or ""))
    return out.Succeeded()


def _address_and_size(debugger, expr):
    try:
        return int(expr, 0), None
    except ValueError:
        pass
    frame = debugger.GetSelectedTarget().GetProcess().GetSelectedThread().GetSelectedFrame()
    # A variable path (copy_dst, buf[4], s.field) is an lvalue: its address
    # and size. Expression results are copies, so only pointers or integers
    # are taken from EvaluateExpression.
    value = frame.GetValueForVariablePath(expr)
    if not value.IsValid() or not value.GetError().Success():
        target = debugger.GetSelectedTarget()
        value = target.FindFirstGlobalVariable(expr)
    if value.IsValid() and value.GetError().Success():
        address = value.GetLoadAddress()
        if address != lldb.LLDB_INVALID_ADDRESS:
            return address, value.GetByteSize()
    value = frame.EvaluateExpression(expr)
    if not value.GetError().Success():
        raise ValueError("cannot evaluate %r: %s" % (expr, value.GetError().GetCString()))
    return value.GetValueAsUnsigned(), None


def _range_args(debugger, command):
    argv = shlex.split(command)
    if not argv:
        raise ValueError("missing expression")
    address, size = _address_and_size(debugger, argv[0])
    rest = argv[1:]
    if rest and not rest[0].startswith("--"):
        size = int(rest[0], 0)
        rest = rest[1:]
    return address, size or 1, rest


def bs_history(debugger, command, result, internal_dict):
    """bs-history EXPR [LEN] [--max N]: every recorded access, oldest first."""
    try:
        address, size, rest = _range_args(debugger, command)
    except ValueError as e:
        result.SetError("usage: bs-history EXPR [LEN] [--max N] (%s)" % e)
        return
    _run(debugger, ("process plugin packet monitor history %#x %d %s" %
                    (address, size, " ".join(rest))).rstrip(), result)


def bs_origin(debugger, command, result, internal_dict):
    """bs-origin EXPR [LEN] [DEPTH]: where the bytes came from, recursively."""
    try:
        address, size, rest = _range_args(debugger, command)
    except ValueError as e:
        result.SetError("usage: bs-origin EXPR [LEN] [DEPTH] (%s)" % e)
        return
    depth = rest[0] if rest else ""
    _run(debugger, ("process plugin packet monitor origin %#x %d %s" %
                    (address, size, depth)).rstrip(), result)


def bs_goto(debugger, command, result, internal_dict):
    """bs-goto N|P%|end: move to a trace position."""
    where = command.strip()
    if not where:
        result.SetError("usage: bs-goto N|P%|end")
        return
    if _run(debugger, "process plugin packet monitor goto " + where, result):
        _run(debugger, "thread step-inst", result)
        _run(debugger, "process plugin packet monitor when", result)


def __lldb_init_module(debugger, internal_dict):
    for name, function in (("bs-history", "bs_history"), ("bs-origin", "bs_origin"),
                           ("bs-goto", "bs_goto")):
        debugger.HandleCommand("command script add -o -f %s.%s %s" % (__name__, function, name))
