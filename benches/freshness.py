#!/usr/bin/env python3
"""How fresh a watched archive is while an agent writes: `quarry serve --watch` over an archive
of --messages generated messages, one Claude Code session appended to at --rate turns a second
(default 5) for --seconds (default 300), record by record as Claude Code writes them (a prompt,
a response of two records sharing its message id with a tool call, the tool's result, the final
answer: the record that commits the turn). A client polls the server every 100 ms for the
session's committed turns.

Reports:
- the delay from writing each turn's committing record to the poll that first counts it
  (p50, p99, max);
- the archive's write-ahead log size (sampled every 0.5 s: max, and at the end);
- benches/load.py's throughput over the archive alone (--load-seconds, before the writer
  starts) and while the writer runs, and the loss between them;
- afterwards, whether the archive equals a fresh ingest of the same files: every table's row
  count and the usage sums.

    benches/freshness.py --quarry target/release/quarry [--messages 200000] [--seconds 300]

Everything lives in a temporary folder, removed at the end (unless --keep).
"""

import argparse
import json
import os
import shutil
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from datetime import datetime, timezone
from pathlib import Path

HERE = Path(__file__).resolve().parent
SESSION = "5eed0000-0000-4000-8000-000000000001"
TABLES = ["sessions", "messages", "blocks", "actions", "files", "runs", "observed_events",
          "context_snapshots", "delegations", "events_raw", "turns", "usage_records", "usage"]


def run(command, **kw):
    return subprocess.run(command, check=True, capture_output=True, text=True, **kw)


def turn_records(n, parent):
    """Turn n's records, in the order Claude Code writes them; the last commits it."""
    now = datetime.now(timezone.utc)
    at = lambda: now.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
    common = lambda uuid, parent: {
        "parentUuid": parent, "isSidechain": False, "userType": "external",
        "cwd": "/home/bench/live", "sessionId": SESSION, "version": "2.1.38",
        "gitBranch": "main", "uuid": uuid, "timestamp": at(),
    }
    mid = f"msg_bench_{n}"
    final = f"msg_bench_{n}_final"
    usage = {"input_tokens": 1200 + n, "output_tokens": 80, "cache_read_input_tokens": 20000,
             "cache_creation_input_tokens": 300}
    tool = f"toolu_bench_{n}"
    records = [
        {**common(f"u{n}", parent), "type": "user",
         "message": {"role": "user", "content": f"step {n}: run the tests and tell me what failed"}},
        {**common(f"a{n}a", f"u{n}"), "type": "assistant", "requestId": f"req_{n}",
         "message": {"model": "claude-opus-4-6", "id": mid, "type": "message", "role": "assistant",
                     "content": [{"type": "text", "text": "Running the test suite now."}],
                     "usage": usage}},
        {**common(f"a{n}b", f"a{n}a"), "type": "assistant", "requestId": f"req_{n}",
         "message": {"model": "claude-opus-4-6", "id": mid, "type": "message", "role": "assistant",
                     "content": [{"type": "tool_use", "id": tool, "name": "Bash",
                                  "input": {"command": "cargo test 2>&1 | tail -40"}}],
                     "usage": usage}},
        {**common(f"r{n}", f"a{n}b"), "type": "user",
         "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": tool,
                                                  "content": "test result: ok. " + "x" * 2000}]},
         "toolUseResult": {"stdout": "ok", "exitCode": 0}},
        {**common(f"f{n}", f"r{n}"), "type": "assistant", "requestId": f"req_{n}_f",
         "message": {"model": "claude-opus-4-6", "id": final, "type": "message", "role": "assistant",
                     "content": [{"type": "text", "text": f"All tests pass after step {n}."}],
                     "usage": {**usage, "output_tokens": 40}}},
    ]
    return records, f"f{n}"


class Writer(threading.Thread):
    """Appends turns at `rate` a second for `seconds`, record by record; notes when each turn's
    committing record was written."""

    def __init__(self, path, rate, seconds):
        super().__init__(daemon=True)
        self.path, self.rate, self.seconds = path, rate, seconds
        self.committed_at = []

    def run(self):
        parent = None
        start = time.monotonic()
        n = 0
        with open(self.path, "a") as out:
            while time.monotonic() - start < self.seconds:
                n += 1
                slot = start + (n - 1) / self.rate
                records, parent = turn_records(n, parent)
                for i, record in enumerate(records):
                    # The turn's records spread over its slot, as an agent writes them.
                    target = slot + i * (0.8 / self.rate) / len(records)
                    delay = target - time.monotonic()
                    if delay > 0:
                        time.sleep(delay)
                    out.write(json.dumps(record) + "\n")
                    out.flush()
                self.committed_at.append(time.monotonic())


class Poller(threading.Thread):
    """Asks the server for the session's committed turns every 100 ms; notes when each count was
    first seen."""

    def __init__(self, base, token):
        super().__init__(daemon=True)
        self.base, self.token = base, token
        self.seen_at = {}
        self.stop = False
        self.errors = 0

    def count(self):
        sql = ("SELECT count(*) FROM turns WHERE session_id = "
               f"'claude-code-session:{SESSION}' AND committed")
        request = urllib.request.Request(
            self.base + "/api/query", data=json.dumps({"sql": sql}).encode(),
            headers={"Authorization": "Bearer " + self.token, "Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=30) as response:
            return json.load(response)["rows"][0][0]

    def run(self):
        known = 0
        while not self.stop:
            try:
                n = self.count()
            except Exception:
                self.errors += 1
                n = known
            now = time.monotonic()
            for k in range(known + 1, n + 1):
                self.seen_at[k] = now
            known = max(known, n)
            time.sleep(0.1)


class WalSampler(threading.Thread):
    def __init__(self, archive):
        super().__init__(daemon=True)
        self.wal = Path(str(archive) + "-wal")
        self.sizes = []
        self.stop = False

    def run(self):
        while not self.stop:
            self.sizes.append(self.wal.stat().st_size if self.wal.exists() else 0)
            time.sleep(0.5)


def load(quarry, archive, seconds, clients, out):
    """load.py's throughput and errors over `archive`. Its warm-up compares each question asked
    plain and varied, which a growing archive can tell apart (a turn lands between the two):
    such a difference is reported, not taken for a failure of the run."""
    subprocess.run([sys.executable, str(HERE / "load.py"), "--quarry", quarry, "--archive", str(archive),
                    "--seconds", str(seconds), "--clients", str(clients), "--json", str(out)],
                   capture_output=True, text=True)
    summary = json.loads(out.read_text())
    return summary["throughput_per_s"], summary.get("errors", 0), summary.get("variation_failures", 0)


def contents(archive):
    db = sqlite3.connect(f"file:{archive}?mode=ro", uri=True)
    counts = {t: db.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in TABLES}
    usage = db.execute("SELECT count(*), sum(input_tokens), sum(output_tokens), sum(cache_read_tokens),"
                       " sum(cache_write_tokens) FROM usage").fetchone()
    db.close()
    return counts, usage


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quarry", required=True)
    parser.add_argument("--messages", type=int, default=200_000)
    parser.add_argument("--seconds", type=float, default=300)
    parser.add_argument("--rate", type=float, default=5)
    parser.add_argument("--load-seconds", type=float, default=60)
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--keep", action="store_true")
    args = parser.parse_args()
    quarry = str(Path(args.quarry).resolve())
    work = Path(tempfile.mkdtemp(prefix="quarry-fresh-"))
    server = None
    try:
        corpus, live, archive = work / "corpus", work / "live", work / "archive.db"
        live.mkdir()
        run([quarry, "gen", "--messages", str(args.messages), "--out", str(corpus)])
        run([quarry, "--archive", str(archive), "ingest", "--no-progress", "--owner", "gen", str(corpus)])
        print(f"archive of {args.messages} generated messages ready", file=sys.stderr)
        alone, alone_errors, _ = load(quarry, archive, args.load_seconds, args.clients, work / "alone.json")
        print(f"load.py alone: {alone} requests/s", file=sys.stderr)

        tokens = work / "tokens.toml"
        token = run([quarry, "--archive", str(archive), "token", "add", "fresh", "--scope", "admin",
                     "--tokens", str(tokens)]).stdout.strip().splitlines()[-1]
        log = open(work / "serve.log", "w")
        server = subprocess.Popen(
            [quarry, "--archive", str(archive), "serve", "--listen", "127.0.0.1:0", "--tokens", str(tokens),
             "--watch-path", str(live), "--watch-owner", "bench"],
            stdout=subprocess.PIPE, stderr=log, text=True)
        base = "http://" + server.stdout.readline().strip().removeprefix("listening on http://")
        wal = WalSampler(archive)
        wal.start()
        writer = Writer(live / f"{SESSION}.jsonl", args.rate, args.seconds)
        poller = Poller(base, token)
        poller.start()
        writer.start()
        # load.py in the middle of the run.
        time.sleep(max(0.0, (args.seconds - args.load_seconds) / 2))
        during, during_errors, variation = load(quarry, archive, args.load_seconds, args.clients,
                                                work / "during.json")
        writer.join()
        turns = len(writer.committed_at)
        deadline = time.monotonic() + 60
        while len(poller.seen_at) < turns and time.monotonic() < deadline:
            time.sleep(0.1)
        poller.stop = wal.stop = True
        poller.join()
        wal.join()
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=120)
        server = None
        log.close()

        delays = sorted(poller.seen_at[k] - writer.committed_at[k - 1]
                        for k in range(1, turns + 1) if k in poller.seen_at)
        missing = turns - len(delays)
        p = lambda q: delays[min(len(delays) - 1, int(q * len(delays)))] if delays else float("nan")

        fresh = work / "fresh.db"
        run([quarry, "--archive", str(fresh), "ingest", "--no-progress", "--owner", "gen", str(corpus)])
        run([quarry, "--archive", str(fresh), "ingest", "--no-progress", "--owner", "bench", str(live)])
        got, want = contents(archive), contents(fresh)
        batches = sum(1 for line in open(work / "serve.log") if " watch notified:" in line)
        print(json.dumps({
            "turns_written": turns,
            "turns_never_counted": missing,
            "delay_s": {"p50": round(statistics.median(delays), 3) if delays else None,
                        "p99": round(p(0.99), 3), "max": round(delays[-1], 3) if delays else None},
            "poll_errors": poller.errors,
            "watch_batches": batches,
            "wal_mb": {"max": round(max(wal.sizes) / 1e6, 1), "end": round(wal.sizes[-1] / 1e6, 1)},
            "load_requests_per_s": {"alone": alone, "during": during,
                                    "loss_pct": round(100 * (1 - during / alone), 1),
                                    "errors_alone": alone_errors, "errors_during": during_errors,
                                    "warm_up_differences_during": variation},
            "equals_fresh_ingest": got == want,
            "row_counts": got[0],
            "usage": got[1],
            "fresh_usage": want[1],
        }, indent=2))
        return 0 if got == want and missing == 0 else 1
    finally:
        if server is not None:
            server.kill()
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
