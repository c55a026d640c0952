#!/usr/bin/env python3
"""What reading costs (issue 26): `quarry read` end to end of the corpus session with the most
records and of the largest by bytes, and the first page of a 1M-message tier session over HTTP,
each beside peers measured in the same run.

    benches/read.py --quarry target/release/quarry                 # corpus, and 1M messages
    benches/read.py --quarry Q --messages 0                        # the corpus part only
    benches/read.py --quarry Q --work /tmp/read-S --runs 11        # keep the work folder

Corpus part: the whole transcript (`--page-size 2000`, one page) as text and as JSON, a process
started for each run; the peers print the same session's rows: `sqlite3` reading the archive's
messages and blocks of the session as JSON, and `jq -c` reading the raw transcript file.
HTTP part: a generated 1M-message archive (`quarry gen --lean`) behind a long-lived `quarry
serve`; its biggest session's first transcript page (200 messages), a ±5 window, its lineage and
a trace, each the median of --runs requests after one untimed request on one kept-alive
connection; the peer is `sqlite3` running the page's own statement (messages and blocks of those
200 messages) one-shot. Every answer is checked: the transcript holds SQLite's message count.
The work folder is removed unless --work is given.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sqlite3
import statistics
import subprocess
import tempfile
import time
import urllib.parse
from pathlib import Path

import loopback

ROLLOUT = "019c8a59"
LARGEST = "fa812bfe-b295-4cca-9c2f-fdf01028cb46"


def must(argv, **kw):
    return subprocess.run([str(a) for a in argv], check=True, capture_output=True, text=True, **kw)


def median_ms(runs: int, run) -> float:
    run()
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        run()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def corpus_part(args, work: Path) -> None:
    archive = work / "corpus.db"
    if not archive.exists():
        must([args.quarry, "--archive", archive, "ingest", args.corpus, "--no-progress"])
    db = sqlite3.connect(f"file:{archive}?mode=ro", uri=True)
    for label, pattern in [("most records (Codex rollout 019c8a59)", f"%{ROLLOUT}%"),
                           ("largest by bytes (Claude Code fa812bfe)", f"%{LARGEST}")]:
        session, path, messages = db.execute(
            "SELECT session_id, source_path, message_count FROM sessions WHERE session_id LIKE ? "
            "AND parent_session_id IS NULL", (pattern,)).fetchone()
        lines = sum(1 for line in open(path, encoding="utf-8") if line.strip())
        size = Path(path).stat().st_size
        print(f"== {label}: {session}\n   {lines} records, {size / 1e6:.1f} MB, {messages} messages")
        base = [args.quarry, "--archive", archive]
        answer = json.loads(must(base + ["--format", "json", "read", session, "--page-size", 2000]).stdout)
        assert len(answer["messages"]) == messages, (len(answer["messages"]), messages)
        text = median_ms(args.runs, lambda: must(base + ["read", session, "--page-size", 2000]))
        as_json = median_ms(args.runs, lambda: must(
            base + ["--format", "json", "read", session, "--page-size", 2000]))
        statement = ("SELECT json_object('message', m.message_id, 'role', m.role, 'type', b.type, "
                     "'text', b.text) FROM messages m JOIN blocks b ON b.session_id = m.session_id "
                     f"AND b.message_id = m.message_id WHERE m.session_id = '{session}' "
                     "ORDER BY m.position, b.position")
        peer_sqlite = median_ms(args.runs, lambda: must(["sqlite3", "-readonly", archive, statement]))
        peer_jq = median_ms(args.runs, lambda: must(["jq", "-c", ".", path]))
        print(f"   quarry read (text)  {text:8.1f} ms   {text / peer_sqlite:5.2f}x sqlite3, "
              f"{text / peer_jq:5.2f}x jq")
        print(f"   quarry read (JSON)  {as_json:8.1f} ms   {as_json / peer_sqlite:5.2f}x sqlite3, "
              f"{as_json / peer_jq:5.2f}x jq")
        print(f"   sqlite3 rows JSON   {peer_sqlite:8.1f} ms")
        print(f"   jq -c raw file      {peer_jq:8.1f} ms")


class Server(loopback.Server):
    """`quarry serve` answering reads."""

    def read(self, query: str):
        _, status, body = self.get(f"/api/read?{query}")
        assert status == 200, (status, body[:300])
        return json.loads(body), len(body)


def http_part(args, work: Path) -> None:
    archive = loopback.generated_archive(args.quarry, work / f"tier-{args.messages}.db", args.messages)
    db = sqlite3.connect(f"file:{archive}?mode=ro", uri=True)
    session, messages = db.execute(
        "SELECT session_id, message_count FROM sessions ORDER BY message_count DESC, session_id LIMIT 1"
    ).fetchone()
    (records,) = db.execute("SELECT count(*) FROM events_raw WHERE session_id = ?", (session,)).fetchone()
    print(f"== the biggest session of {args.messages} messages: {session} ({messages} messages)")
    server = Server(args.quarry, archive, work)
    try:
        ref = urllib.parse.quote(session, safe="")
        page, size = server.read(f"ref={ref}&limit=200")
        assert len(page["messages"]) == min(200, messages), len(page["messages"])
        middle = records // 2
        for label, query in [
            (f"transcript page, 200 messages ({size / 1000:.0f} KB)", f"ref={ref}&limit=200"),
            ("window of +-5 records", f"ref={ref}&around={middle}&before=5&after=5"),
            ("lineage", f"ref={ref}&lineage=true"),
            ("event trace", f"ref={ref}&trace={middle}"),
        ]:
            ms = median_ms(args.runs, lambda: server.read(query))
            print(f"   {label:44s} {ms:7.1f} ms")
        statement = ("SELECT m.message_id, m.role, b.type, b.text FROM messages m JOIN blocks b "
                     f"ON b.session_id = m.session_id AND b.message_id = m.message_id "
                     f"WHERE m.session_id = '{session}' "
                     "AND m.position < 200 ORDER BY m.position, b.position")
        peer = median_ms(args.runs, lambda: must(["sqlite3", "-readonly", archive, statement]))
        print(f"   peer: sqlite3 one-shot of the page's rows      {peer:7.1f} ms")
    finally:
        server.stop()


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quarry", required=True)
    parser.add_argument("--corpus", default=str(Path(__file__).resolve().parents[2] / "shared/corpus"))
    parser.add_argument("--messages", type=int, default=1_000_000)
    parser.add_argument("--runs", type=int, default=11)
    parser.add_argument("--work")
    args = parser.parse_args()
    work = Path(args.work) if args.work else Path(tempfile.mkdtemp(prefix="quarry-read-"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        corpus_part(args, work)
        if args.messages:
            http_part(args, work)
    finally:
        if not args.work:
            shutil.rmtree(work)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
