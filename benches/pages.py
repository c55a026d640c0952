#!/usr/bin/env python3
"""What paging costs: a capped JSON answer of `/api/query-units` (paged: a total order, a
`next_cursor`) against the same cap streamed as CSV (not paged: rows as the plan yields them),
and walking a whole answer page by page against streaming it, on one generated archive.

    benches/pages.py --quarry target/release/quarry                  # 1M messages, seed 5
    benches/pages.py --quarry Q --work /tmp/pages-S --runs 5         # keep the archive

Each figure is the median of --runs lone requests after one untimed request, over one
kept-alive connection to a long-lived `quarry serve`. The JSON page and the CSV answer must
hold the same number of rows; the walk must return every row of the stream exactly once.
The work folder is removed unless --work is given.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import shutil
import statistics
import subprocess
import tempfile
import time
import urllib.parse
from pathlib import Path

import loopback

QUESTIONS = [
    ("top 10 by output tokens", "messages where role:assistant | sort by output_tokens desc | limit 10", 10),
    ("10,000 rows, no sort", "messages where role:assistant | select message_id, word_count", 10_000),
    ("10,000 rows by time", "messages | sort by time desc | select message_id", 10_000),
    ("aggregate, 100 of the buckets", "messages | group by session_id | count", 100),
]
WALK = ("actions | select action_id", 10_000)


def must(argv):
    return subprocess.run([str(a) for a in argv], check=True, capture_output=True, text=True)


class Server(loopback.Server):
    """`quarry serve` with the paging limits of this benchmark."""

    def __init__(self, quarry: str, archive: Path, work: Path):
        super().__init__(quarry, archive, work, serve_flags=("--timeout", "600s", "--max-rows", "10000"))

    def ask(self, expression: str, limit: int, accept: str, cursor: str | None = None):
        params = {"expression": expression, "limit": limit}
        if cursor:
            params["cursor"] = cursor
        seconds, status, body = self.get("/api/query-units?" + urllib.parse.urlencode(params), accept)
        if status != 200:
            raise SystemExit(f"{expression}: HTTP {status}: {body[:300]!r}")
        return seconds, body


def median_of(runs: int, ask) -> tuple[float, bytes]:
    ask()
    timed = [ask() for _ in range(runs)]
    return statistics.median(t for t, _ in timed), timed[-1][1]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quarry", required=True)
    ap.add_argument("--messages", type=int, default=1_000_000)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--work", help="a folder for the archive (kept; reused when present)")
    args = ap.parse_args()
    work = Path(args.work) if args.work else Path(tempfile.mkdtemp(prefix="quarry-pages-"))
    work.mkdir(parents=True, exist_ok=True)
    archive = loopback.generated_archive(args.quarry, work / "archive.db", args.messages)
    server = Server(args.quarry, archive, work)
    problems = 0
    try:
        print("| question | JSON page (paged) | CSV (not paged) | paged / not |")
        print("|---|---|---|---|")
        for name, expression, limit in QUESTIONS:
            paged, body = median_of(args.runs, lambda: server.ask(expression, limit, "application/json"))
            plain, text = median_of(args.runs, lambda: server.ask(expression, limit, "text/csv"))
            rows = len(json.loads(body)["rows"])
            streamed = len(list(csv.reader(io.StringIO(text.decode())))) - 1
            if rows != streamed:
                print(f"{name}: the JSON page holds {rows} rows, the CSV answer {streamed}")
                problems += 1
            print(f"| {name} | {paged * 1000:.0f} ms | {plain * 1000:.0f} ms | {paged / plain:.2f} |")
        expression, page = WALK
        started = time.perf_counter()
        walked, cursor, pages = [], None, 0
        while True:
            _, body = server.ask(expression, page, "application/json", cursor)
            envelope = json.loads(body)
            walked += [r[0] for r in envelope["rows"]]
            pages += 1
            cursor = envelope.get("next_cursor")
            if not cursor:
                break
        walk_seconds = time.perf_counter() - started
        stream_seconds, text = median_of(1, lambda: server.ask(expression, 10_000_000, "text/csv"))
        streamed = [r[0] for r in list(csv.reader(io.StringIO(text.decode())))[1:]]
        if sorted(walked) != sorted(streamed) or len(set(walked)) != len(walked):
            print(f"the walk of {len(walked)} rows is not the stream's {len(streamed)} rows, once each")
            problems += 1
        print(f"\nwalk `{expression}`: {len(walked)} rows in {pages} pages of {page}: "
              f"{walk_seconds:.2f} s; streamed as CSV: {stream_seconds:.2f} s "
              f"({walk_seconds / stream_seconds:.1f}x)")
    finally:
        server.stop()
        if not args.work:
            shutil.rmtree(work)
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
