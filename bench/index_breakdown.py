#!/usr/bin/env python3
"""Prints where the bytes of a backstep index (.bsidx) go, section by section.

Usage: bench/index_breakdown.py INDEX [TRACE]

Reads the file as docs/formats/index-format.md describes it (versions 3
to 10), independently of the C++ reader: header, directory tables, the noted
events and plain system calls, keyframe ref arrays, register records, and per segment the pc index (records, skip
records, postings) and the three access lists (page records, block
records, entry bytes split into headers, inline data and references, page
snapshots). What no record points to (padding, the remainder) is reported
as such. With TRACE, prints every figure as a share of the trace's size
too. Used for the "index size" figures of docs/benchmarks.md.
"""

import os
import struct
import sys

HEADER = 112
FOOTER = 40
PAGE = 4096


def varint(buf, pos, end):
    value = shift = 0
    while pos < end:
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if not b & 0x80 or shift >= 63:
            break
        shift += 7
    return value, pos


class Breakdown:
    def __init__(self, data):
        self.data = data
        self.sizes = {}
        self.counts = {}

    def add(self, section, size, count=0):
        self.sizes[section] = self.sizes.get(section, 0) + size
        self.counts[section] = self.counts.get(section, 0) + count

    def u64s(self, offset, n):
        return struct.unpack_from("<%dQ" % n, self.data, offset)


def full_records(b, info, starts):
    """Adds the full register records that the chains from `starts` reach."""
    seen, full = set(), set()
    for offset in starts:
        while offset not in seen:
            seen.add(offset)
            kind, count = struct.unpack_from("<2I", b.data, offset)
            if kind == 0:
                full.add((offset, count))
                break
            offset = b.u64s(offset + 8, 1)[0]
    storage_words = (info["storage"] + 7) // 8
    size = 0
    for _, count in full:
        if info["version"] >= 10:  # the non-zero words and a bitmap
            size += 16 + 8 * ((storage_words + 63) // 64 + count + info["known_words"])
        else:
            size += 16 + 8 * (storage_words + info["known_words"])
    b.add("register records: full", size, len(full))


def directory(b):
    data = b.data
    dir_offset, dir_size, file_size = struct.unpack_from("<3Q", data, len(data) - FOOTER)
    version = struct.unpack_from("<I", data, 8)[0]
    d = b.u64s(dir_offset, 10)
    block_entries, snapshot_blocks = struct.unpack_from("<2I", data, dir_offset + 80)
    names = ("events threads runs keyframes memory_clears register_clears segments "
             "storage known_words flags").split()
    info = dict(zip(names, d))
    info.update(version=version, dir_offset=dir_offset, dir_size=dir_size,
                block_entries=block_entries, snapshot_blocks=snapshot_blocks)
    # Version 7: the noted events; version 9: the plain system calls, and a
    # directory record of 128 bytes instead of 112.
    note_count, note_text = b.u64s(dir_offset + 88, 2) if version >= 7 else (0, 0)
    plain_count, plain_stream = b.u64s(dir_offset + 104, 2) if version >= 9 else (0, 0)
    info.update(dir_record=128 if version >= 9 else 112, note_count=note_count,
                note_bytes=32 * note_count + (note_text + 7) // 8 * 8, plain_count=plain_count,
                plain_bytes=24 * ((plain_count + 255) // 256) + (plain_stream + 7) // 8 * 8)
    return info


def entries(b, list_name, start, end, first_event, count, version, without_data=False):
    """Splits one block's entry bytes into event deltas, heads, data, refs."""
    data = b.data
    pos = start
    heads = []  # version 6: (xor, u16 head) of each entry, for repeat forms
    for i in range(count):
        p0 = pos
        v, pos = varint(data, pos, end)
        xor = False
        same_data = False
        if version >= 6 and v & 1:
            r = v >> 1
            if r < 48:  # kRepeatWindow
                b.add(list_name + " entries: repeat forms (event delta + head)", pos - p0, 1)
                back = r + 1
                xor, head = heads[i - back] if back <= i else (False, 0)
            else:  # stride forms (kStrideForm, + 1: with the previous data)
                same_data = r == 49
                b.add(list_name + " entries: stride forms%s" %
                      (" with the previous data" if same_data else ""), pos - p0, 1)
                xor, last = heads[i - 1] if i >= 2 else (False, 0)
                before = heads[i - 2][1] if i >= 2 else 0
                head = (last & ~0xfff) | ((2 * (last & 0xfff) - (before & 0xfff)) & 0xfff)
            p1 = pos
        else:
            if version >= 6:
                xor = bool(v & 2)
            b.add(list_name + " entries: event deltas", pos - p0, 1)
            head = struct.unpack_from("<H", data, pos)[0]
            pos += 2
            p1 = pos - 2
        heads.append((xor, head))
        code = head >> 12
        if same_data:
            continue
        if xor and version >= 8:
            # 0-7: 8 bytes, 8-11: 4, 12-13: 2, 14: 16 bytes (k in the next byte)
            length = 8 if code <= 7 else 4 if code <= 11 else 2 if code <= 13 else 16
            stored = code if code <= 7 else code - 8 if code <= 11 else code - 12
            if length == 16:
                stored = data[pos]
                pos += 1
            b.add(list_name + " entries: heads", pos - p1)
            b.add(list_name + " entries: XOR data (%d-byte writes)" % length, stored, 1)
            pos += stored
            continue
        if xor:
            length = 8 if code <= 8 else 4 if code <= 13 else 2
            stored = code if code <= 8 else code - 9 if code <= 13 else code - 14
            b.add(list_name + " entries: heads", pos - p1)
            b.add(list_name + " entries: XOR data (%d-byte writes)" % length, stored, 1)
            pos += stored
            continue
        if code == 0:
            x, pos = varint(data, pos, end)
            shift = 3 if version >= 4 else 2
            length, ref, split = x >> shift, x & 1, x & 2
            event = version >= 4 and x & 4
            if split:
                _, pos = varint(data, pos, end)
                _, pos = varint(data, pos, end)
        else:
            ref = code > 11
            length = (4, 8, 16, 32)[code - 12] if ref else code
            event = False
        b.add(list_name + " entries: heads", pos - p1)
        if ref or event:
            p2 = pos
            for _ in range(3 if event else 1):
                _, pos = varint(data, pos, end)
            kind = "event references" if event else "trace-offset references"
            b.add(list_name + " entries: " + kind, pos - p2, 1)
        elif without_data:
            b.add(list_name + " entries without data (reads without values)", 0, 1)
        else:
            big = length >= 64
            b.add(list_name + " entries: inline data%s" % (" (pieces >= 64 B)" if big else ""),
                  length, 1)
            pos += length
    return pos


def pc_groups(b, pcs_offset, pc_count):
    """Version 5: groups of 8 pc entries (index-format.md, "Pc index")."""
    data = b.data
    groups = (pc_count + 7) // 8
    b.add("pc group records", 16 * groups, groups)
    for g in range(groups):
        _, pos = b.u64s(pcs_offset + 16 * g, 2)
        for _ in range(min(8, pc_count - 8 * g)):
            start = pos
            _, pos = varint(data, pos, len(data))
            head, pos = varint(data, pos, len(data))
            count = head >> 1
            if head & 1:
                _, pos = varint(data, pos, len(data))
                _, pos = varint(data, pos, len(data))
                b.add("pc entries: followers", pos - start, 1)
                continue
            if count <= 128:
                _, pos = varint(data, pos, len(data))
            size, pos = varint(data, pos, len(data))
            b.add("pc entries: leaders (without postings)", pos - start, 1)
            table = (count + 127) // 128 if count > 128 else 0
            b.add("pc skip records", 16 * table, table)
            b.add("pc postings (varint deltas)", size, count - (count + 127) // 128)
            pos += 16 * table + size


def segment_lists(b, info, seg_offset):
    data = b.data
    first, end_event, pcs_offset, pc_count = b.u64s(seg_offset, 4)
    lists = b.u64s(seg_offset + 32, 6)
    if info["version"] >= 5:
        pc_groups(b, pcs_offset, pc_count)
    else:
        b.add("pc records", pc_count * 32, pc_count)
        for i in range(pc_count):
            pc, count, skips_offset, data_offset = b.u64s(pcs_offset + 32 * i, 4)
            blocks = (count + 127) // 128
            # Version 4: a pc with at most one block has no skip table.
            table = blocks if info["version"] < 4 or count > 128 else 0
            b.add("pc skip records", 16 * table, table)
            pos, left = data_offset, count - blocks
            for _ in range(left):
                _, pos = varint(data, pos, len(data))
            b.add("pc postings (varint deltas)", pos - data_offset, left)
    for li, name in enumerate(("writes", "reads", "inferred")):
        pages_offset, page_count = lists[2 * li], lists[2 * li + 1]
        b.add(name + " page records", page_count * 32, page_count)
        for p in range(page_count):
            page, blocks_offset, block_count, snapshot_count, snapshots_offset = struct.unpack_from(
                "<QQIIQ", data, pages_offset + 32 * p)
            b.add(name + " block records", block_count * 32, block_count)
            b.add(name + " snapshots", snapshot_count * (24 + PAGE + PAGE // 8), snapshot_count)
            for k in range(block_count):
                first_event, _, data_offset, entry_count, data_size = struct.unpack_from(
                    "<QQQII", data, blocks_offset + 32 * k)
                entries(b, name, data_offset, data_offset + data_size, first_event, entry_count,
                        info["version"], name == "reads" and info["flags"] & 4)


def breakdown(path):
    with open(path, "rb") as f:
        data = f.read()
    b = Breakdown(data)
    info = directory(b)
    b.add("header + footer", HEADER + FOOTER)
    dir_size = info["dir_size"]
    b.add("noted events (records and descriptions)", info["note_bytes"], info["note_count"])
    b.add("plain system calls (skip records and stream)", info["plain_bytes"],
          info["plain_count"])
    b.add("directory (threads, runs, keyframes, clears, segments)",
          dir_size - info["note_bytes"] - info["plain_bytes"])
    # Thread run lists sit just before the directory.
    runs_lists = 0
    off = info["dir_offset"] + info["dir_record"]
    for t in range(info["threads"]):
        run_count = b.u64s(off + 48 * t + 40, 1)[0]
        runs_lists += 8 * run_count
    b.add("thread run lists", runs_lists)
    kf_offset = info["dir_offset"] + info["dir_record"] + 48 * info["threads"] + 16 * info["runs"]
    refs = 0
    records = [b.u64s(off + 48 * t + 16, 1)[0] for t in range(info["threads"])]
    for k in range(info["keyframes"]):
        _, _, refs_offset, ref_count = b.u64s(kf_offset + 32 * k, 4)
        refs += 16 * ref_count
        records += [b.u64s(refs_offset + 16 * r + 8, 1)[0] for r in range(ref_count)]
    b.add("keyframe ref arrays", refs, info["keyframes"])
    full_records(b, info, records)
    seg_offset = (kf_offset + 32 * info["keyframes"] + 8 * info["memory_clears"] +
                  16 * info["register_clears"])
    for s in range(info["segments"]):
        segment_lists(b, info, seg_offset + 80 * s)
    accounted = sum(b.sizes.values())
    b.add("register records: deltas, padding (the rest)", len(data) - accounted)
    return info, b


def main():
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__)
    info, b = breakdown(sys.argv[1])
    size = os.path.getsize(sys.argv[1])
    trace = os.path.getsize(sys.argv[2]) if len(sys.argv) == 3 else 0
    events = info["events"] or 1
    print("%s: version %d, %d bytes, %d events, %d segments, %d threads%s" %
          (sys.argv[1], info["version"], size, info["events"], info["segments"], info["threads"],
           ", trace %d bytes: index = %.1f%% of the trace" % (trace, 100.0 * size / trace)
           if trace else ""))
    print("%-58s %12s %9s %7s %7s %10s" % ("section", "bytes", "B/event", "index%", "trace%",
                                          "count"))
    for name, n in sorted(b.sizes.items(), key=lambda kv: -kv[1]):
        if n == 0 and b.counts[name] == 0:
            continue
        print("%-58s %12d %9.3f %6.1f%% %6s %10d" %
              (name, n, n / events, 100.0 * n / size,
               "%.1f%%" % (100.0 * n / trace) if trace else "-", b.counts[name]))


if __name__ == "__main__":
    main()
