#!/usr/bin/env python3
"""Where the ingest's writer thread spends its time, by phase: samples one `quarry ingest` with
`perf record` (DWARF call graphs) and puts each sample of the writer (a stack through
`quarry_ingest::writer::Writer`) in the phase its stack names, split by what it waits on.

    benches/ingest_profile.py --archive A.db CORPUS...
    benches/ingest_profile.py --archive A.db --bin target/release/quarry --freq 150 CORPUS...

The archive is written (use a copy, or a new path, to profile a first ingest). Phases, first
match over the whole stack:

  checkpoint        a WAL checkpoint run by the writer itself
  usage resolution  the statements resolving `usage` and the token sums once per batch
                    (`RESOLVE_USAGE`, through `store::run_all`)
  row inserts       writing one file's sessions (`store::insert_session`)
  commit            the batch's COMMIT and other statement lists (`execute_batch`)
  other             the rest of the writer (reading state, freeing, channels)

and within each: `write` (the stack is in pwrite: WAL frames, a spilled page cache), `read`
(pread: a page not in SQLite's cache), `full-text` (FTS5's in-memory index) or `cpu`. Seconds
are samples divided by the rate. Compare two runs (a first million, and a million into a large
archive) to see what grows with the archive (docs/benchmarks.md, issue 31). Needs `perf`.
"""

from __future__ import annotations

import argparse
import collections
import importlib.machinery
import importlib.util
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _profile_module():
    """benches/profile (the query profiler), for its reader of `perf script` output."""
    loader = importlib.machinery.SourceFileLoader("quarry_profile", str(ROOT / "benches" / "profile"))
    spec = importlib.util.spec_from_loader(loader.name, loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


PHASES = [
    ("checkpoint", "walCheckpoint"),
    ("usage resolution", "quarry_ingest::store::run_all"),
    ("row inserts", "quarry_ingest::store::insert_session"),
    ("commit", "execute_batch"),
]


def phase_of(frames: list[str]) -> tuple[str, str] | None:
    """(phase, wait) of one sample, or None when it is not the writer's."""
    if not any("quarry_ingest::writer::Writer" in f for f in frames):
        return None
    phase = next((name for name, mark in PHASES if any(mark in f for f in frames)), "other")
    if any("pwrite64" in f for f in frames):
        wait = "write"
    elif any("pread64" in f for f in frames):
        wait = "read"
    elif any("Fts5" in f or "fts5" in f for f in frames):
        wait = "full-text"
    else:
        wait = "cpu"
    return phase, wait


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--archive", required=True)
    ap.add_argument("--bin", default=str(Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target")) / "release" / "quarry"))
    ap.add_argument("--freq", type=int, default=150, help="samples per second per thread")
    ap.add_argument("corpus", nargs="+")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "perf.data"
        argv = [args.bin, "--archive", args.archive, "ingest", "--no-progress", *args.corpus]
        record = ["perf", "record", "-q", "-F", str(args.freq), "-g", "--call-graph", "dwarf,8192",
                  "-o", str(data), "--", *argv]
        r = subprocess.run(record, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        if r.returncode != 0:
            print(r.stderr, file=sys.stderr)
            return 1
        script = subprocess.run(
            ["perf", "script", "-i", str(data), "-F", "comm,tid,ip,sym", "--no-inline"],
            capture_output=True, text=True,
        ).stdout
    counts: collections.Counter = collections.Counter()
    for frames in _profile_module().samples(script):
        found = phase_of(frames)
        if found:
            counts[found] += 1
    if not counts:
        print("no writer samples (is perf allowed here? see /proc/sys/kernel/perf_event_paranoid)", file=sys.stderr)
        return 1
    total = sum(counts.values())
    print(f"writer thread: {total / args.freq:.1f} s ({total} samples at {args.freq} Hz)")
    phases = collections.Counter()
    for (phase, _), n in counts.items():
        phases[phase] += n
    for phase, n in phases.most_common():
        waits = ", ".join(f"{w} {k / args.freq:.1f}" for (p, w), k in counts.most_common() if p == phase)
        print(f"{phase:18s} {n / args.freq:6.1f} s   ({waits})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
