#!/usr/bin/env python3
"""Time buckets against dataframe engines: three questions asked of a running `quarry serve`
(lone requests over loopback) and of Polars and chDB (ClickHouse in-process), all reading the
same Parquet: quarry's snapshot of one generated archive.

    benches/buckets.py --quarry target/release/quarry                 # 1M messages, seed 7
    benches/buckets.py --quarry target/release/quarry --tz Europe/Warsaw --runs 9
    benches/buckets.py --quarry A/quarry --quarry B/quarry --work /tmp/b --keep

Steps: install Polars and chDB into a local folder (benches/tools.sh dataframes), generate
`quarry gen --lean --messages N --seed 7`, ingest it and write its snapshot
(`quarry snapshot --full`; skipped when --work already holds them), start `quarry serve
--source snapshot --tz ZONE` on loopback, then for each question: one untimed run per engine,
then --runs timed runs with the engines taking turns, and the median. quarry's time is a whole
HTTP request and its JSON answer; Polars' a `scan_parquet(...).collect()`; chDB's a query over
`file(..., Parquet)`. Each --quarry binary is a column of its own (before and after a change,
in one sitting).

The answers are checked with benches/answers.py: counts, sums and averages must agree across
every engine (percentiles only between quarry binaries: Polars and ClickHouse define them
differently from the nearest rank). A difference is printed and the exit status is 1.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import answers  # noqa: E402
import loopback  # noqa: E402

SEED = 7

# (name, quarry's language, how many leading columns every engine must agree on)
QUESTIONS = [
    ("day", "messages | group by time:day | agg count, sum:input_tokens", 3),
    ("role", "messages | group by role | agg count, avg:word_count, p90:word_count", 3),
    ("pctl", "messages | agg count, p50:word_count, p90:word_count, p99:word_count", 1),
]

# The peers, run inside the dataframes environment: reads a JSON request on stdin
# ({"files", "tz", "runs", "question"}) and prints {"seconds": [...], "rows": [...]}.
PEER = r'''
import json, sys, time
from datetime import datetime, timezone
import polars as pl
import chdb

req = json.load(sys.stdin)
files, tz, name, engine = req["files"], req["tz"], req["question"], req["engine"]

def polars_query():
    lf = pl.scan_parquet(files)
    t = pl.col("occurred_at_ms")
    schema = lf.collect_schema()
    if schema["occurred_at_ms"] == pl.Int64:
        t = pl.from_epoch(t, time_unit="ms").dt.replace_time_zone("UTC")
    if name == "day":
        day = t.dt.convert_time_zone(tz).dt.truncate("1d").alias("day")
        return lf.group_by(day).agg(pl.len().alias("count"), pl.col("input_tokens").sum())
    if name == "role":
        w = pl.col("word_count")
        return lf.group_by("role").agg(pl.len().alias("count"), w.mean().alias("avg"),
                                       w.quantile(0.9, "nearest").alias("p90"))
    w = pl.col("word_count")
    return lf.select(pl.len().alias("count"), w.quantile(0.5, "nearest"),
                     w.quantile(0.9, "nearest").alias("p90"), w.quantile(0.99, "nearest").alias("p99"))

source = "file('" + files + "', Parquet)"
CHDB = {
    "day": f"SELECT toUnixTimestamp(toStartOfDay(occurred_at_ms, '{tz}')) AS day, count() AS count, "
           f"sum(input_tokens) FROM {source} GROUP BY day",
    "role": f"SELECT role, count(), avg(word_count), quantileExact(0.9)(word_count) FROM {source} GROUP BY role",
    "pctl": f"SELECT count(), quantileExact(0.5)(word_count), quantileExact(0.9)(word_count), "
            f"quantileExact(0.99)(word_count) FROM {source}",
}

def utc(v):
    """A bucket start as UTC text, so the engines' zones and forms compare."""
    if isinstance(v, datetime):
        return v.astimezone(timezone.utc).isoformat()
    return datetime.fromtimestamp(int(v), timezone.utc).isoformat()

def run():
    if engine == "polars":
        rows = [list(r) for r in polars_query().collect().rows()]
    else:
        rows = json.loads(chdb.query(CHDB[name], "JSONCompact").bytes())["data"]
    if name == "day":
        rows = [[None if r[0] is None else utc(r[0]), *r[1:]] for r in rows]
    return rows

seconds, rows = [], None
for i in range(req["runs"] + 1):
    started = time.perf_counter()
    rows = run()
    if i:
        seconds.append(time.perf_counter() - started)
print(json.dumps({"seconds": seconds, "rows": rows}, default=str))
'''


def log(text):
    print(text, file=sys.stderr, flush=True)


def must(argv, **kwargs):
    return subprocess.run([str(a) for a in argv], check=True, capture_output=True, text=True, **kwargs)


def prepare(quarry: str, work: Path, messages: int) -> tuple[Path, Path]:
    """The archive and its snapshot, generated unless `work` holds them."""
    archive = work / "archive.db"
    snapshot = work / "archive.snapshot"
    if not (snapshot / "manifest.json").exists():
        corpus = work / "corpus"
        log(f"== quarry gen --lean --messages {messages} --seed {SEED}, ingest, snapshot")
        must([quarry, "gen", "--lean", "--messages", messages, "--seed", SEED, "--out", corpus])
        must([quarry, "--archive", archive, "ingest", corpus, "--no-progress"])
        shutil.rmtree(corpus)
        must([quarry, "--archive", archive, "snapshot", "--full"])
    return archive, snapshot


class Server(loopback.Server):
    """`quarry serve` over the snapshot in zone `tz`."""

    def __init__(self, quarry: str, archive: Path, work: Path, tz: str, tag: str):
        super().__init__(quarry, archive, work, tag=tag,
                         global_flags=("--source", "snapshot", "--tz", tz),
                         serve_flags=("--timeout", "300s"))

    def ask(self, expression: str) -> tuple[float, list]:
        query = urllib.parse.urlencode({"expression": expression, "limit": 100000})
        seconds, status, body = self.get(f"/api/query-units?{query}")
        if status != 200:
            raise SystemExit(f"quarry answered {status}: {body[:500]!r}")
        answer = json.loads(body)
        return seconds, answer["rows"]



def peer(python: str, engine: str, files: str, tz: str, name: str, runs: int) -> tuple[list, list]:
    request = json.dumps({"files": files, "tz": tz, "question": name, "engine": engine, "runs": runs})
    out = subprocess.run([python, "-c", PEER], input=request, capture_output=True, text=True, check=True)
    answer = json.loads(out.stdout)
    return answer["seconds"], answer["rows"]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quarry", action="append", required=True,
                    help="a quarry binary (release build); repeat to compare builds")
    ap.add_argument("--messages", type=int, default=1_000_000)
    ap.add_argument("--runs", type=int, default=5, help="timed runs per engine and question (median)")
    ap.add_argument("--tz", default="UTC", help="the zone of the day bucket (default UTC)")
    ap.add_argument("--work", help="a folder for the archive and snapshot (kept; reused when present)")
    ap.add_argument("--keep", action="store_true", help="keep the temporary folder")
    args = ap.parse_args()

    python = must([HERE / "tools.sh", "dataframes"]).stdout.strip()
    work = Path(args.work or tempfile.mkdtemp(prefix="quarry-buckets-")).resolve()
    work.mkdir(parents=True, exist_ok=True)
    quarries = [str(Path(q).resolve()) for q in args.quarry]
    servers = []
    try:
        archive, snapshot = prepare(quarries[0], work, args.messages)
        # The snapshot's messages: one Parquet file per month under data/messages/.
        if not list(snapshot.glob("data/messages/*/*.parquet")):
            raise SystemExit(f"no messages Parquet under {snapshot}/data/messages")
        files = str(snapshot / "data" / "messages" / "*" / "*.parquet")
        servers = [(f"quarry#{i + 1}" if len(quarries) > 1 else "quarry",
                    Server(q, archive, work, args.tz, str(i))) for i, q in enumerate(quarries)]
        table, failed = [], False
        for name, expression, agreed in QUESTIONS:
            times, rows = {}, {}
            for engine, server in servers:
                server.ask(expression)  # warm-up
                times[engine] = []
            for _ in range(args.runs):
                for engine, server in servers:
                    seconds, rows[engine] = server.ask(expression)
                    times[engine].append(seconds)
            for engine in ("polars", "chdb"):
                times[engine], rows[engine] = peer(python, engine, files, args.tz, name, args.runs)
            medians = {e: statistics.median(t) for e, t in times.items()}
            log(f"{name}: rows per engine " + ", ".join(f"{e} {len(r)}" for e, r in rows.items()))
            for engine, found in answers.check(
                    {e: [r[:agreed] for r in rows[e]] for e in rows}).items():
                failed = True
                log("\n".join(found))
            quarry_rows = {e: rows[e] for e, _ in servers}
            for engine, found in answers.check(quarry_rows).items():
                failed = True
                log("\n".join(found))
            table.append((name, expression, medians))
        db = sqlite3.connect(f"file:{archive}?mode=ro", uri=True)
        (count,) = db.execute("SELECT count(*) FROM messages").fetchone()
        db.close()
        print(f"median of {args.runs} runs, {count:,} messages, zone {args.tz}, "
              f"Parquet {files}")
        engines = list(table[0][2])
        print("| question | " + " | ".join(engines) + " | " +
              " | ".join(f"{e} / {p}" for e, _ in servers for p in ("polars", "chdb")) + " |")
        print("|---" * (1 + len(engines) + 2 * len(servers)) + "|")
        for name, expression, medians in table:
            cells = [f"{medians[e]:.3f} s" for e in engines]
            ratios = [f"{medians[e] / medians[p]:.2f}" for e, _ in servers for p in ("polars", "chdb")]
            print(f"| `{expression}` | " + " | ".join(cells + ratios) + " |")
        return 1 if failed else 0
    finally:
        for _, server in servers:
            server.stop()
        if not args.work and not args.keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
