#!/usr/bin/env python3
"""The full-text index's segments, level by level: what FTS5's structure record (row 10 of
`blocks_fts_data`) says, read from an archive without changing it.

Usage:
    benches/fts_levels.py ARCHIVE
    benches/fts_levels.py --watch ARCHIVE    (one line per change, every half second, until ^C)

Prints the number of levels and segments, and for each level the segments it holds (each as its
count of FTS5 leaf pages, about 4 KB each) and how many of them a merge in progress takes. An
ingest flushes one segment onto level 0 per batch; with `automerge` 16 (`quarry ingest` sets
it), a level with 16 segments is merged into one segment of the next level over the batches
that follow (`crisismerge` 64). Run it before and after an ingest to see whether that ingest
merged, or with --watch during one (docs/benchmarks.md, "The level merges, spread").
"""

import sqlite3
import sys
import time


def varint(b, i):
    """SQLite's variable-length integer at b[i]: (value, next index)."""
    v = 0
    for _ in range(8):
        c = b[i]
        i += 1
        if c < 0x80:
            return (v << 7) | c, i
        v = (v << 7) | (c & 0x7F)
    return (v << 8) | b[i], i + 1


def levels(archive):
    """The structure record's levels: [(segments, being merged, [leaf pages of each])]."""
    con = sqlite3.connect(f"file:{archive}?mode=ro", uri=True, timeout=5)
    try:
        row = con.execute("SELECT block FROM blocks_fts_data WHERE id = 10").fetchone()
    finally:
        con.close()
    if row is None:
        sys.exit("no full-text index structure in this archive")
    b = row[0]
    # A 4-byte cookie, then (in the second format) a 4-byte marker: segments carry 5 more fields.
    v2 = b[4:8] == b"\xff\x00\x00\x01"
    i = 8 if v2 else 4
    count_levels, i = varint(b, i)
    _, i = varint(b, i)  # the number of segments
    _, i = varint(b, i)  # the write counter
    out = []
    for _ in range(count_levels):
        merging, i = varint(b, i)
        count, i = varint(b, i)
        pages = []
        for _ in range(count):
            _, i = varint(b, i)  # segment id
            first, i = varint(b, i)
            last, i = varint(b, i)
            for _ in range(5 if v2 else 0):
                _, i = varint(b, i)
            pages.append(last - first + 1)
        out.append((count, merging, pages))
    return out


def watch(archive):
    """One line each time the structure changes (each batch's flush, each step of a merge)."""
    last = None
    while True:
        try:
            now = levels(archive)
        except sqlite3.Error:
            now = last
        if now != last and now is not None:
            cells = " | ".join(f"{c} seg, {m} merging, {sum(p)} pages" for c, m, p in now)
            print(f"{time.strftime('%H:%M:%S')} {cells}", flush=True)
            last = now
        time.sleep(0.5)


def main():
    args = sys.argv[1:]
    if len(args) == 2 and args[0] == "--watch":
        watch(args[1])
        return
    if len(args) != 1:
        sys.exit("\n".join(l for l in __doc__.splitlines() if l.strip().startswith("benches/")))
    now = levels(args[0])
    print(f"{len(now)} levels, {sum(c for c, _, _ in now)} segments")
    for level, (count, merging, pages) in enumerate(now):
        note = f", {merging} being merged" if merging else ""
        print(f"level {level}: {count} segments{note}; leaf pages {pages}")


if __name__ == "__main__":
    main()
