"""Type stub of backstep._core, the C++ extension (stable ABI) under the
`backstep` package. Use the package (`import backstep`); this layer takes
positions as ints only."""

from typing import Iterator, Optional

MAX_VALUE_BYTES: int

class TraceError(Exception):
    file: Optional[str]
    offset: Optional[int]
    position: Optional[int]
    code: str

class Access(tuple):
    position: int
    old: Optional[bytes]
    new: Optional[bytes]
    thread: int
    address: int
    data: bytes
    is_write: bool

_Hit = tuple[int, int, bool, int, bytes]  # (event, thread, is_write, address, data)
_Step = tuple[Optional[int], Optional[int], int, tuple[Optional[str], Optional[int], int], str,
              bytes, bytes, str]

class Trace:
    path: str
    format: str
    arch: str
    physical: bool
    records_reads: bool
    event_count: int
    threads: list[int]
    index_path: str
    index_reused: bool
    register_names: list[str]
    def cursor(self) -> Cursor: ...
    def last_write(self, address: int, length: int, before: int) -> Optional[_Hit]: ...
    def next_write(self, address: int, length: int, start: int) -> Optional[_Hit]: ...
    def last_read(self, address: int, length: int, before: int) -> Optional[_Hit]: ...
    def next_read(self, address: int, length: int, start: int) -> Optional[_Hit]: ...
    def accesses(self, address: int, length: int, start: int, end: int,
                 writes: bool) -> Iterator[Access]: ...
    def positions_at_pc(self, pc: int, start: int, end: int) -> Iterator[int]: ...
    def count_at_pc(self, pc: int, start: int, end: int) -> int: ...
    def prev_at_pc(self, pc: int, before: int) -> Optional[int]: ...
    def origin(self, address: int, length: int, at: int, depth: int) -> list[_Step]: ...

class Cursor:
    position: int
    thread: int
    threads: list[int]
    def seek(self, position: int) -> None: ...
    def step(self, n: int) -> int: ...
    def pc(self, thread: Optional[int] = None) -> Optional[int]: ...
    def reg(self, name: str, thread: Optional[int] = None) -> Optional[bytes]: ...
    def read(self, address: int, length: int, physical: bool = False) -> tuple[bytes, bytes]: ...
    def run(self, forward: bool, breakpoints: list[int], watches: list[tuple],
            thread: Optional[int], fence_low: Optional[int],
            fence_high: Optional[int]) -> tuple[str, int, int, int, str, int]: ...
    def event_kind(self) -> Optional[str]: ...

def open(path: str, cache_dir: Optional[str] = None, progress: Optional[bool] = None,
         build_index: bool = True) -> Trace: ...
