"""backstep: script questions over recorded execution traces.

    import backstep
    t = backstep.open("run.ucir")          # any format; reuses or builds the index
    c = t.at("50%")                        # a Cursor: registers and memory there
    c.regs["rax"], c.read(c.regs["rsp"], 8)
    for w in t.writes(addr, 8):            # every write, from the index, lazily
        print(w.position, w.old, w.new)
    for step in t.origin(addr, 8, at=c.position):
        print(step)                        # where the value came from

Positions are states: 0 is before the first event, len(t) after the last;
event p turns state p into p + 1. Unknown values are None (registers) or
raise Unknown (memory); backstep never makes a value up. Errors of the
trace or of a query raise TraceError (attributes file, offset, position,
code). Long operations (index build, run, origin) release the GIL and stop
on Ctrl-C (KeyboardInterrupt).
"""

from __future__ import annotations

import builtins
import os
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Optional, Union

from . import _core
from ._core import TraceError

__all__ = [
    "open", "Trace", "Cursor", "Registers", "Access", "Stop", "Location", "OriginStep",
    "PositionsAtPc", "TraceError", "Unknown",
]

#: One recorded access: unpacks as (position, old, new); also .thread,
#: .address and .data (the whole access) and .is_write.
Access = _core.Access

Where = Union[int, str]

#: Longest range whose bytes before and after an access (Access.old/.new)
#: are given; longer ranges give None there, so that a query costs what it
#: finds rather than its length.
MAX_VALUE_BYTES = _core.MAX_VALUE_BYTES


class Unknown(LookupError):
    """Memory that the trace does not know at this position.

    ``ranges`` lists the unknown bytes as (address, length) pairs.
    """

    def __init__(self, position: int, ranges: list[tuple[int, int]]):
        self.position = position
        self.ranges = ranges
        text = ", ".join(f"{a:#x}+{n}" for a, n in ranges)
        super().__init__(f"unknown memory at position {position}: {text}")


def open(path: Union[str, os.PathLike], *,
         cache_dir: Optional[Union[str, os.PathLike]] = None,
         progress: Optional[bool] = None) -> "Trace":
    """Opens a trace (REVEN, usercorn, gdb tfile, ...), reusing its index or
    building it (with a progress line on a terminal; progress=True/False
    forces it). Paths are str or os.PathLike (pathlib.Path). Ctrl-C
    interrupts a build (KeyboardInterrupt)."""
    return Trace(_core.open(os.fspath(path), None if cache_dir is None else os.fspath(cache_dir),
                            progress))


def _unknown_ranges(address: int, mask: bytes) -> list[tuple[int, int]]:
    ranges: list[tuple[int, int]] = []
    start = None
    for i, k in enumerate(mask):
        if not k and start is None:
            start = i
        elif k and start is not None:
            ranges.append((address + start, i - start))
            start = None
    if start is not None:
        ranges.append((address + start, len(mask) - start))
    return ranges


@dataclass(frozen=True)
class Stop:
    """Why Cursor.run stopped: reason is "breakpoint", "watch", "begin"
    (start of the trace), "end", "fence" or "interrupted"; address is the
    pc (breakpoint) or the accessed address (watch); kind "w"/"r"/"a" and
    event (the accessing event) for a watch."""
    reason: str
    position: int
    thread: int
    address: int
    kind: str
    event: int


@dataclass(frozen=True)
class Location:
    """A register (``register`` set) or memory (``address`` set) of
    ``length`` bytes."""
    register: Optional[str]
    address: Optional[int]
    length: int

    def __str__(self) -> str:
        if self.register is not None:
            return self.register
        return f"mem {self.address:#x}+{self.length}"


@dataclass(frozen=True)
class OriginStep:
    """One step of a provenance chain (Trace.origin): the event at
    ``position`` (None: the initial state) wrote ``location``, leaving
    ``value`` (None if any byte is unknown); ``instruction`` is the writer's
    disassembly; ``end`` is "" when the next step continues the chain, else
    why it stops ("immediate 0x2a", "computed by add", "initial image",
    "written by syscall", "depth", ...)."""
    position: Optional[int]
    pc: Optional[int]
    thread: int
    location: Location
    instruction: str
    value: Optional[bytes]
    end: str

    def __str__(self) -> str:
        pos = "-" if self.position is None else str(self.position)
        pc = "-" if self.pc is None else f"{self.pc:#x}"
        value = "??" if self.value is None else self.value.hex(" ")
        text = f"pos {pos} pc {pc} {self.location} = {value}"
        if self.instruction:
            text += f"  <- {self.instruction}"
        if self.end:
            text += f"  ({self.end})"
        return text


class PositionsAtPc(Iterable[int]):
    """The positions whose next instruction is at ``pc``, in [start, end).

    Lazy: iterating asks the pc index for one position at a time, and len()
    counts them from the index without listing them."""

    def __init__(self, trace: "Trace", pc: int, start: int, end: int):
        self._trace, self.pc, self.start, self.end = trace, pc, start, end

    def __iter__(self) -> Iterator[int]:
        return self._trace._t.positions_at_pc(self.pc, self.start, self.end)

    def __len__(self) -> int:
        return self._trace._t.count_at_pc(self.pc, self.start, self.end)

    def __bool__(self) -> bool:
        return next(iter(self), None) is not None

    def first(self) -> Optional[int]:
        """The first position, or None."""
        return next(iter(self), None)

    def last(self) -> Optional[int]:
        """The last position, or None."""
        p = self._trace._t.prev_at_pc(self.pc, self.end)
        return p if p is not None and p >= self.start else None


class Trace:
    """An opened trace. len(trace) is its number of events."""

    def __init__(self, core_trace: "_core.Trace"):
        self._t = core_trace

    def __repr__(self) -> str:
        return f"<backstep.Trace {self.path!r} {self.format} {len(self)} events>"

    def __len__(self) -> int:
        return self._t.event_count

    @property
    def path(self) -> str:
        return self._t.path

    @property
    def format(self) -> str:
        """Format name: "reven", "usercorn", "tfile", ..."""
        return self._t.format

    @property
    def arch(self) -> str:
        """Architecture, as gdb names it ("i386:x86-64")."""
        return self._t.arch

    @property
    def physical(self) -> bool:
        """True if the trace's memory is physical (REVEN); addresses given
        to the queries are virtual and translated."""
        return self._t.physical

    @property
    def records_reads(self) -> bool:
        """True if events record the memory they read (reads() works)."""
        return self._t.records_reads

    @property
    def threads(self) -> list[int]:
        return self._t.threads

    @property
    def index_path(self) -> str:
        return self._t.index_path

    def position(self, where: Where) -> int:
        """A position from an int, "end", "P%" or a decimal/hex string."""
        n = len(self)
        if isinstance(where, int):
            p = where
        elif where == "end":
            p = n
        elif isinstance(where, str) and where.endswith("%"):
            p = int(float(where[:-1]) * n / 100)
        elif isinstance(where, str):
            p = int(where, 0)
        else:
            raise TypeError("position must be an int, 'end' or 'P%'")
        if not 0 <= p <= n:
            raise ValueError(f"position {p} outside 0..{n}")
        return p

    def cursor(self, position: Where = 0) -> "Cursor":
        """A new Cursor at ``position`` (each cursor moves independently)."""
        c = Cursor(self, self._t.cursor())
        c.goto(position)
        return c

    at = cursor

    def _end(self, end: Optional[int]) -> int:
        return len(self) if end is None else end

    def writes(self, address: int, length: int = 1, start: int = 0,
               end: Optional[int] = None) -> Iterator[Access]:
        """Every write overlapping [address, address+length) by events in
        [start, end), oldest first, from the memory index: Access items
        (position, old, new) where old/new are the range's bytes before and
        after (None where any byte is unknown, and for ranges longer than
        MAX_VALUE_BYTES: use .address/.data, or a cursor's read). Lazy:
        batches of 4096; the cost follows the writes found, not the length
        (a range past the address space raises ValueError)."""
        return self._t.accesses(address, length, start, self._end(end), True)

    def reads(self, address: int, length: int = 1, start: int = 0,
              end: Optional[int] = None) -> Iterator[Access]:
        """Every recorded read of the range (traces that record reads;
        TraceError otherwise); old = new = the range's bytes then."""
        return self._t.accesses(address, length, start, self._end(end), False)

    def positions_at_pc(self, pc: int, start: int = 0,
                        end: Optional[int] = None) -> PositionsAtPc:
        """The positions at ``pc`` in [start, end): lazy, with a cheap len()."""
        return PositionsAtPc(self, pc, start, self._end(end))

    def _access(self, hit, address: int, length: int) -> Optional[Access]:
        if hit is None:
            return None
        event, thread, is_write, where, data = hit
        if length > MAX_VALUE_BYTES:
            return Access((event, None, None, thread, where, data, is_write))
        c = self._t.cursor()
        c.seek(event)
        old = self._known(c.read(address, length))
        if is_write:
            c.seek(event + 1)
            new = self._known(c.read(address, length))
        else:
            new = old
        return Access((event, old, new, thread, where, data, is_write))

    @staticmethod
    def _known(read: tuple[bytes, bytes]) -> Optional[bytes]:
        data, mask = read
        return data if all(mask) else None

    def last_write(self, address: int, length: int = 1,
                   before: Optional[int] = None) -> Optional[Access]:
        """The last write overlapping the range by an event < before
        (default: the end), or None."""
        before = self._end(before)
        return self._access(self._t.last_write(address, length, before), address, length)

    def next_write(self, address: int, length: int = 1, start: int = 0) -> Optional[Access]:
        """The first write overlapping the range by an event >= start."""
        return self._access(self._t.next_write(address, length, start), address, length)

    def last_read(self, address: int, length: int = 1,
                  before: Optional[int] = None) -> Optional[Access]:
        before = self._end(before)
        return self._access(self._t.last_read(address, length, before), address, length)

    def next_read(self, address: int, length: int = 1, start: int = 0) -> Optional[Access]:
        return self._access(self._t.next_read(address, length, start), address, length)

    def origin(self, address: int, length: int = 1, at: Optional[Where] = None,
               depth: int = 8) -> list[OriginStep]:
        """The provenance chain of [address, address+length) in state ``at``
        (default: the end): the write that produced the bytes, the
        instruction, the register or memory it copied them from, and so on
        for at most ``depth`` steps (see OriginStep)."""
        pos = len(self) if at is None else self.position(at)
        steps = []
        for (position, pc, thread, (reg, addr, n), insn, value, known,
             end) in self._t.origin(address, length, pos, depth):
            steps.append(OriginStep(position, pc, thread, Location(reg, addr, n), insn,
                                    value if all(known) else None, end))
        return steps


class Registers(Mapping[str, Optional[int]]):
    """A cursor's registers by name: an int (little-endian value) or None
    when unknown; KeyError for a name the architecture does not have.
    Iterates over every register name; bytes(name) gives the raw bytes."""

    def __init__(self, cursor: "Cursor", thread: Optional[int] = None):
        self._c, self._thread = cursor, thread

    def __getitem__(self, name: str) -> Optional[int]:
        raw = self._c._c.reg(name, self._thread)
        return None if raw is None else int.from_bytes(raw, "little")

    def bytes(self, name: str) -> Optional[builtins.bytes]:
        return self._c._c.reg(name, self._thread)

    def __iter__(self) -> Iterator[str]:
        return iter(self._c._trace._t.register_names)

    def __len__(self) -> int:
        return len(self._c._trace._t.register_names)

    def thread(self, thread: int) -> "Registers":
        """The registers of another thread at the same position."""
        return Registers(self._c, thread)


class Cursor:
    """The state of a trace at one position: registers, memory, moves."""

    def __init__(self, trace: Trace, core_cursor: "_core.Cursor"):
        self._trace, self._c = trace, core_cursor

    def __repr__(self) -> str:
        return f"<backstep.Cursor position={self.position}>"

    @property
    def trace(self) -> Trace:
        return self._trace

    @property
    def position(self) -> int:
        return self._c.position

    @property
    def thread(self) -> int:
        """The thread that executes the next event."""
        return self._c.thread

    @property
    def threads(self) -> list[int]:
        return self._c.threads

    @property
    def pc(self) -> Optional[int]:
        """The current thread's pc, or None when unknown."""
        return self._c.pc()

    @property
    def regs(self) -> Registers:
        return Registers(self)

    @property
    def event_kind(self) -> Optional[str]:
        """Kind of the next event ("instruction", "syscall", ...); None at the end."""
        return self._c.event_kind()

    def read_known(self, address: int, length: int,
                   physical: bool = False) -> tuple[bytes, bytes]:
        """(data, mask): mask[i] is 1 where data[i] is known (0 bytes elsewhere)."""
        return self._c.read(address, length, physical)

    def read(self, address: int, length: int, physical: bool = False) -> bytes:
        """The bytes at [address, address+length); raises Unknown listing the
        unknown ranges if any byte is unknown."""
        data, mask = self._c.read(address, length, physical)
        if not all(mask):
            raise Unknown(self.position, _unknown_ranges(address, mask))
        return data

    def goto(self, where: Where) -> "Cursor":
        """Moves to a position (int, "end" or "P%")."""
        self._c.seek(self._trace.position(where))
        return self

    def step(self, n: int = 1) -> int:
        """Moves n events forward (negative: backward), stopping at the ends;
        returns how many it moved."""
        return self._c.step(n)

    def run(self, forward: bool = True, breakpoints: Iterable[int] = (),
            watch: Iterable[tuple] = (), thread: Optional[int] = None,
            fence: Optional[tuple[Optional[int], Optional[int]]] = None) -> Stop:
        """Runs forward or backward until a breakpoint (pcs), a watched
        access ([(address, length, "w"|"r"|"a")]), a fence (low, high) or an
        end of the trace, with gdb's rules (a backward watch stops before
        the access). With ``thread``, only that thread's breakpoint hits
        and watched accesses stop. Answered from the indexes; moves the cursor there."""
        low, high = fence if fence is not None else (None, None)
        return Stop(*self._c.run(forward, list(breakpoints), [tuple(w) for w in watch],
                                 thread, low, high))
