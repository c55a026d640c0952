#!/usr/bin/env python3
"""A load run of `quarry serve`: N concurrent clients for S seconds over loopback, mixing
representative questions of benches/queries/ in both languages (group-by, exact percentiles, a
join, a text filter, a semi-join, a top-k), half the clients under the admin scope and half under
a reader scope. Reports throughput, p50/p99 latency (overall and per question), errors, the
server's peak RSS, and checks the audit trail lost nothing: intents = outcomes = requests.

    benches/load.py --quarry target/release/quarry --messages 1000000
    benches/load.py --quarry target/release/quarry --archive /big/archive.db --seconds 30

Without --archive it generates a corpus with `quarry gen`, ingests it into a temporary folder
and removes both afterwards (unless --keep). The clients are Python threads on http.client:
each waits for its answer before asking again, so the rate is what the server sustains.
Exit status 1 when any request failed or the audit trail does not balance.
"""

import argparse
import http.client
import json
import shutil
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import tomllib
import urllib.parse
from pathlib import Path

HERE = Path(__file__).resolve().parent
QUESTIONS = ["01", "02", "03", "05", "06", "07"]


def questions():
    """(name, language, text) for both languages of each chosen question."""
    out = []
    for path in sorted((HERE / "queries").glob("*.toml")):
        number = path.name[:2]
        if number not in QUESTIONS:
            continue
        spec = tomllib.loads(path.read_text())
        out.append((f"{number}-language", "language", spec["quarry"].strip()))
        out.append((f"{number}-sql", "sql", spec["quarry_sql"].strip()))
    return out


def run(command, **kwargs):
    return subprocess.run(command, check=True, capture_output=True, text=True, **kwargs)


def percentile(sorted_values, p):
    if not sorted_values:
        return None
    rank = max(1, -(-p * len(sorted_values) // 100))
    return sorted_values[int(rank) - 1]


def peak_rss_kib(pid):
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return None


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quarry", required=True, help="the quarry binary (a release build)")
    parser.add_argument("--archive", help="an existing archive (default: generate one)")
    parser.add_argument("--messages", type=int, default=1_000_000, help="messages to generate")
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=30)
    parser.add_argument("--keep", action="store_true", help="keep the generated archive")
    parser.add_argument("--json", help="write the summary as JSON to this file")
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="quarry-load-"))
    server = None
    try:
        quarry = str(Path(args.quarry).resolve())
        if args.archive:
            archive = Path(args.archive).resolve()
        else:
            archive = work / "archive.db"
            started = time.time()
            run([quarry, "gen", "--messages", str(args.messages), "--out", str(work / "corpus")])
            run([quarry, "--archive", str(archive), "ingest", str(work / "corpus"), "--no-progress"])
            shutil.rmtree(work / "corpus")
            print(f"generated and ingested {args.messages} messages in {time.time() - started:.0f} s", file=sys.stderr)
        db = sqlite3.connect(f"file:{archive}?mode=ro", uri=True)
        (messages,) = db.execute("SELECT count(*) FROM messages").fetchone()
        (owner,) = db.execute("SELECT owner FROM sessions WHERE owner IS NOT NULL LIMIT 1").fetchone()
        db.close()

        scopes = work / "scopes.toml"
        scopes.write_text(f'[scope.reader]\nowner = "{owner}"\n')
        tokens_file = work / "tokens.toml"
        tokens = {}
        for name, scope in [("load-admin", "admin"), ("load-reader", "reader")]:
            out = run([quarry, "--archive", str(archive), "--scopes", str(scopes), "token", "add", name,
                       "--scope", scope, "--tokens", str(tokens_file)])
            tokens[name] = out.stdout.strip().splitlines()[-1]
        audit = archive.with_name(archive.stem + ".audit.db")
        before = audit_counts(audit)

        server = subprocess.Popen(
            [quarry, "--archive", str(archive), "--scopes", str(scopes), "serve", "--listen", "127.0.0.1:0",
             "--tokens", str(tokens_file), "--timeout", "120s", "--max-concurrent", str(args.clients)],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        address = server.stdout.readline().strip().removeprefix("listening on http://")
        host, port = address.rsplit(":", 1)

        mix = questions()
        # One pass of every question first, untimed, so the run measures a warm server (the
        # archive in the OS page cache), as a long-running one is.
        warm = http.client.HTTPConnection(host, int(port), timeout=600)
        for name, language, text in mix:
            status = ask(warm, language, text, tokens["load-admin"])[0]
            if status != 200:
                print(f"warm-up: {name} answered {status}", file=sys.stderr)
        warm.close()
        before = audit_counts(audit)
        results = []  # (question, scope, seconds, status)
        lock = threading.Lock()
        deadline = time.time() + args.seconds

        def client(index):
            token_name = "load-admin" if index % 2 == 0 else "load-reader"
            connection = http.client.HTTPConnection(host, int(port), timeout=300)
            i = index
            while time.time() < deadline:
                name, language, text = mix[i % len(mix)]
                i += 1
                t0 = time.perf_counter()
                try:
                    status, body = ask(connection, language, text, tokens[token_name])
                    if status == 200:
                        json.loads(body)
                except Exception as e:  # a broken connection is an error of the run
                    status = f"exception: {e}"
                    connection.close()
                    connection = http.client.HTTPConnection(host, int(port), timeout=300)
                with lock:
                    results.append((name, token_name, time.perf_counter() - t0, status))

        run_started = time.time()
        threads = [threading.Thread(target=client, args=(i,)) for i in range(args.clients)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        elapsed = time.time() - run_started
        rss = peak_rss_kib(server.pid)
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=180)
        server = None

        after = audit_counts(audit)
        intents = after[0] - before[0]
        outcomes = after[1] - before[1]
        ok = [r for r in results if r[3] == 200]
        errors = [r for r in results if r[3] != 200]
        latencies = sorted(r[2] for r in results)
        summary = {
            "messages": messages,
            "clients": args.clients,
            "seconds": round(elapsed, 1),
            "requests": len(results),
            "errors": len(errors),
            "throughput_per_s": round(len(results) / elapsed, 2),
            "p50_ms": round(1000 * percentile(latencies, 50), 1),
            "p99_ms": round(1000 * percentile(latencies, 99), 1),
            "peak_rss_mib": round(rss / 1024, 1) if rss else None,
            "audit_intents": intents,
            "audit_outcomes": outcomes,
            "per_question": {},
        }
        for name, _, _ in mix:
            mine = sorted(r[2] for r in results if r[0] == name)
            if mine:
                summary["per_question"][name] = {
                    "requests": len(mine),
                    "p50_ms": round(1000 * percentile(mine, 50), 1),
                    "p99_ms": round(1000 * percentile(mine, 99), 1),
                    "mean_ms": round(1000 * statistics.mean(mine), 1),
                }
        print(json.dumps(summary, indent=2))
        if args.json:
            Path(args.json).write_text(json.dumps(summary, indent=2) + "\n")
        for e in errors[:10]:
            print(f"error: {e}", file=sys.stderr)
        balanced = intents == outcomes == len(results)
        if not balanced:
            print(f"the audit trail does not balance: {intents} intents, {outcomes} outcomes, "
                  f"{len(results)} requests", file=sys.stderr)
        return 0 if not errors and balanced and ok else 1
    finally:
        if server is not None:
            server.kill()
        if args.keep:
            print(f"kept {work}", file=sys.stderr)
        else:
            shutil.rmtree(work, ignore_errors=True)


def ask(connection, language, text, token):
    """One question over `connection`: (status, body)."""
    headers = {"Authorization": f"Bearer {token}"}
    if language == "sql":
        headers["Content-Type"] = "application/json"
        connection.request("POST", "/api/query", json.dumps({"sql": text}), headers)
    else:
        query = urllib.parse.urlencode({"expression": text})
        connection.request("GET", f"/api/query-units?{query}", headers=headers)
    response = connection.getresponse()
    return response.status, response.read()


def audit_counts(audit):
    if not audit.exists():
        return (0, 0)
    db = sqlite3.connect(f"file:{audit}?mode=ro", uri=True)
    try:
        intents = db.execute("SELECT count(*) FROM intents WHERE surface = 'http'").fetchone()[0]
        outcomes = db.execute(
            "SELECT count(*) FROM outcomes JOIN intents USING (intent_id) WHERE surface = 'http'").fetchone()[0]
        return (intents, outcomes)
    finally:
        db.close()


if __name__ == "__main__":
    sys.exit(main())
