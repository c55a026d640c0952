#!/usr/bin/env python3
"""What re-ingesting a big, live session file costs once it grew by one record: a Claude Code
session of about --mb MB (default 200) is built from a corpus transcript repeated with fresh
ids (every uuid, message id, request id and tool id made unique per copy, the copies chained
by parentUuid and a day apart), ingested whole once, then grown --times times (default 20) by
one ~1 KB record, each time ingested again with `quarry ingest`.

Reports, for the grown ingests: the wall time of the whole `quarry ingest` process (median,
p90, max), the ingest's own elapsed_ms, the bytes it read from the file (bytes_read: the
archived prefix's last chunks and the appended bytes), and whether each read continued from
where the last one stopped (files_continued). The work folder is removed afterwards.

    benches/tail_read.py --quarry target/release/quarry [--mb 200] [--times 20]
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
SOURCE = (
    HERE.parent.parent
    / "shared/corpus/claude-code/marot-spotter/fa812bfe-b295-4cca-9c2f-fdf01028cb46.jsonl"
)
DAY_MS = 86_400_000


def shift_time(text, k):
    """An RFC 3339 UTC timestamp moved k days later."""
    from datetime import datetime, timedelta

    t = datetime.strptime(text.replace("Z", "+00:00"), "%Y-%m-%dT%H:%M:%S.%f%z")
    return (t + timedelta(days=k)).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def renamed(record, k, last_uuid):
    """Copy k of a record: every id suffixed with k, times k days later; the copy's first
    record (no parent) chained to the previous copy's last record."""
    r = json.loads(json.dumps(record))
    for key in ("uuid", "parentUuid", "logicalParentUuid"):
        if r.get(key):
            r[key] = f"{r[key]}-{k}"
    if k and r.get("parentUuid") is None and "parentUuid" in r and last_uuid:
        r["parentUuid"] = last_uuid
    if r.get("requestId"):
        r["requestId"] = f"{r['requestId']}_{k}"
    if r.get("timestamp"):
        r["timestamp"] = shift_time(r["timestamp"], k)
    message = r.get("message")
    if isinstance(message, dict):
        if message.get("id"):
            message["id"] = f"{message['id']}_{k}"
        content = message.get("content")
        if isinstance(content, list):
            for block in content:
                if isinstance(block, dict):
                    if block.get("type") in ("tool_use", "server_tool_use") and block.get("id"):
                        block["id"] = f"{block['id']}_{k}"
                    if block.get("tool_use_id"):
                        block["tool_use_id"] = f"{block['tool_use_id']}_{k}"
    return r


def build(path, mb):
    records = [json.loads(line) for line in SOURCE.read_text().splitlines() if line.strip()]
    want = mb * 1_000_000
    written = 0
    k = 0
    last_uuid = None
    with open(path, "w") as out:
        while written < want:
            for record in records:
                r = renamed(record, k, last_uuid)
                line = json.dumps(r, separators=(",", ":")) + "\n"
                out.write(line)
                written += len(line.encode())
                if r.get("uuid"):
                    last_uuid = r["uuid"]
            k += 1
    return last_uuid, records[-1], k


def kilobyte(session_id, cwd, parent, n, when):
    record = {
        "parentUuid": parent,
        "isSidechain": False,
        "userType": "external",
        "cwd": cwd,
        "sessionId": session_id,
        "version": "2.1.38",
        "type": "user",
        "uuid": f"00000000-0000-4000-8000-{n:012d}",
        "timestamp": when,
        "message": {"role": "user", "content": ""},
    }
    size = len(json.dumps(record, separators=(",", ":")))
    record["message"]["content"] = "and now the next step " + "x" * (1000 - size - 22)
    return json.dumps(record, separators=(",", ":")) + "\n", record["uuid"]


def ingest(quarry, archive, folder):
    started = time.perf_counter()
    out = subprocess.run(
        [quarry, "--archive", str(archive), "--format", "json", "ingest", "--no-progress", str(folder)],
        check=True,
        capture_output=True,
        text=True,
    )
    return (time.perf_counter() - started) * 1000, json.loads(out.stdout)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quarry", required=True)
    parser.add_argument("--mb", type=int, default=200)
    parser.add_argument("--times", type=int, default=20)
    parser.add_argument("--keep", action="store_true")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="quarry-tail-"))
    try:
        folder = work / "projects"
        folder.mkdir()
        session_id = json.loads(SOURCE.read_text().splitlines()[0]).get("sessionId")
        path = folder / f"{session_id}.jsonl"
        last_uuid, last, copies = build(path, args.mb)
        size = path.stat().st_size
        wall, first = ingest(args.quarry, work / "archive.db", folder)
        print(
            f"file {size / 1e6:.1f} MB ({copies} copies of {SOURCE.name}); whole ingest "
            f"{wall / 1000:.1f} s, {first['records']} records"
        )
        walls, elapsed, reads, continued = [], [], [], 0
        when = shift_time(last["timestamp"], copies)
        for n in range(args.times):
            line, last_uuid = kilobyte(session_id, last.get("cwd"), last_uuid, n, when)
            with open(path, "a") as out:
                out.write(line)
            wall, summary = ingest(args.quarry, work / "archive.db", folder)
            walls.append(wall)
            elapsed.append(summary["elapsed_ms"])
            reads.append(summary["bytes_read"])
            continued += summary["files_continued"]
            if summary["files_changed"] != 1:
                print("unexpected summary:", json.dumps(summary), file=sys.stderr)
                return 1
        walls.sort()
        p90 = walls[max(0, int(len(walls) * 0.9) - 1)]
        print(
            f"grown by ~1 KB, {args.times} times: wall median {statistics.median(walls):.1f} ms, "
            f"p90 {p90:.1f} ms, max {walls[-1]:.1f} ms; ingest elapsed_ms median "
            f"{statistics.median(elapsed):.0f}, max {max(elapsed)}; bytes read median "
            f"{statistics.median(reads):.0f} (max {max(reads)}); continued {continued}/{args.times}"
        )
        return 0
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
