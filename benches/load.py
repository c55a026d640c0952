#!/usr/bin/env python3
"""A load run of `quarry serve`: N concurrent clients for S seconds over loopback, mixing
representative questions of tests/queries/ in both languages (group-by, exact percentiles, a
join, a text filter, a semi-join, a top-k), half the clients under the admin scope and half under
a reader scope. Reports throughput, p50/p99 latency (overall and per question), errors, the
server's peak RSS and CPU-seconds per request, and checks the audit trail lost nothing:
intents = outcomes = requests.

    benches/load.py --quarry target/release/quarry --messages 1000000
    benches/load.py --quarry target/release/quarry --archive /big/archive.db --seconds 30
    benches/load.py --quarry target/release/quarry --archive /big/archive.db --lone 20
    benches/load.py --quarry target/release/quarry --archive /big/archive.db --check-variation

Without --archive it generates a corpus with `quarry gen`, ingests it into a temporary folder
and removes both afterwards (unless --keep). The clients are Python threads on http.client:
each waits for its answer before asking again, so the rate is what the server sustains.

Every request carries a literal of its own (see `vary`): a filter that keeps every row, whose
number is the request's counter, so no two requests send the same text and no cache of texts
can answer. The untimed warm-up pass asks each question plain and varied, under both tokens,
and compares the rows; a difference is an error of the run. --check-variation stops after it.

--lone N replaces the concurrent run: after the warm-up, one client asks each question (both
languages) N times alone, in turn under the admin and the reader token, and reports per
question and scope the median latency and the server's CPU-seconds per request (its
utime+stime from /proc/PID/stat across the N requests; the clock ticks are 10 ms, so pick N
large enough that N requests take well over that), then overall: the median of the lone
medians per scope, their ratio reader/admin, the mean CPU-seconds of a lone request and the
throughput bound it implies, 0.8 * cores / that mean (`cpu_bound_throughput_per_s`).

Exit status 1 when any request failed, the variation changed an answer, or the audit trail
does not balance.
"""

import argparse
import http.client
import json
import math
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
import tomllib
import urllib.parse
from pathlib import Path

HERE = Path(__file__).resolve().parent
QUESTIONS = ["01", "02", "03", "05", "06", "07"]
SCOPES = [("load-admin", "admin"), ("load-reader", "reader")]

# What `vary` adds to each question, as (anchor, replacement) in the question file's text, per
# language; `{p}` is the always-true filter below with the request's counter `n` in it. Every
# filter reads `word_count` (the language's `words`) of the question's own unit: an integer
# column declared NOT NULL in messages and sessions (docs/tables.md), so `x < n OR x >= n` is
# true on every row whatever n is, and the answer cannot change.
#
#   question                    unit      language adds                  SQL adds
#   01 count by role            messages  where (words < n OR ...)        WHERE (word_count < n OR ...)
#   02 percentiles by role      messages  where (words < n OR ...)        WHERE (word_count < n OR ...)
#   03 join sessions -> repo    messages  where (words < n OR ...)        WHERE (m.word_count < n OR ...)
#   04 by day                   messages  where (words < n OR ...)        WHERE (word_count < n OR ...)
#   05 exists failed action     sessions  AND (words < n OR ...)          AND (s.word_count < n OR ...)
#   06 text filter              messages  AND (words < n OR ...)          AND (word_count < n OR ...)
#   07 top-k                    messages  AND (words < n OR ...)          AND (word_count < n OR ...)
#
# 03 filters the messages side only (m.word_count), so the LEFT JOIN still keeps messages of
# sessions not in the archive. 04 is not in the mix; it is here so adding it needs no more.
VARIATIONS = {
    "01": {"language": ("messages |", "messages where {p} |"),
           "sql": ("FROM messages GROUP BY", "FROM messages WHERE {p} GROUP BY"), "column": "word_count"},
    "02": {"language": ("messages |", "messages where {p} |"),
           "sql": ("FROM messages GROUP BY", "FROM messages WHERE {p} GROUP BY"), "column": "word_count"},
    "03": {"language": ("messages |", "messages where {p} |"),
           "sql": ("\nGROUP BY s.repo", "\nWHERE {p}\nGROUP BY s.repo"), "column": "m.word_count"},
    "04": {"language": ("messages |", "messages where {p} |"),
           "sql": ("FROM messages GROUP BY", "FROM messages WHERE {p} GROUP BY"), "column": "word_count"},
    "05": {"language": ("exists action(is_error:true) |", "exists action(is_error:true) AND {p} |"),
           "sql": ("a.is_error)\nGROUP BY", "a.is_error)\n  AND {p}\nGROUP BY"), "column": "s.word_count"},
    "06": {"language": ("where text:timeout |", "where text:timeout AND {p} |"),
           "sql": ("'%timeout%' GROUP BY", "'%timeout%' AND {p} GROUP BY"), "column": "word_count"},
    "07": {"language": ("where role:assistant |", "where role:assistant AND {p} |"),
           "sql": ("role = 'assistant'\n", "role = 'assistant' AND {p}\n"), "column": "word_count"},
}


def vary(name, language, text, n):
    """`text` with an always-true filter whose literal is `n` (the request's counter).

    Why: a load run that repeats the same few texts measures whatever the server may remember
    of a text (a cache of answers, of plans, of parsed queries), not the work of answering. A
    real predicate, unlike a comment, cannot be stripped before such a cache is looked up; it
    is `x < n OR x >= n` rather than `x > -n` because the language's counts take no negative
    number (`invalid_number`), and the same in SQL so both languages do the same work. What
    is added per question is the table VARIATIONS above; the warm-up checks that the answers
    stay the same."""
    variation = VARIATIONS[name[:2]]
    anchor, replacement = variation[language]
    if text.count(anchor) != 1:  # the question file changed: fail loudly, never run unvaried
        raise ValueError(f"{name}: the variation's anchor {anchor!r} is not once in {text!r}")
    if language == "sql":
        predicate = f"({variation['column']} < {n} OR {variation['column']} >= {n})"
    else:
        predicate = f"(words < {n} OR words >= {n})"
    return text.replace(anchor, replacement.format(p=predicate))


def questions():
    """(name, language, text) for both languages of each chosen question, and per name how its
    rows compare: (ordered, the columns to compare or None for all)."""
    out = []
    shapes = {}
    for path in sorted((HERE.parent / "tests" / "queries").glob("*.toml")):
        number = path.name[:2]
        if number not in QUESTIONS:
            continue
        spec = tomllib.loads(path.read_text())
        bench = spec.get("bench", {})
        for language, key in [("language", "quarry"), ("sql", "sql")]:
            name = f"{number}-{language}"
            out.append((name, language, spec[key].strip()))
            shapes[name] = (bench.get("ordered", False), bench.get("compare"))
    return out, shapes


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


def cpu_seconds(pid):
    """The process's user + system CPU time so far (all its threads), in seconds."""
    with open(f"/proc/{pid}/stat") as stat:
        # The command name (field 2) may hold spaces and parentheses: fields count from its end.
        fields = stat.read().rsplit(")", 1)[1].split()
    utime, stime = int(fields[11]), int(fields[12])  # fields 14 and 15 of proc(5)
    return (utime + stime) / os.sysconf("SC_CLK_TCK")


class Counter:
    """The request counter, the literal of `vary` (shared by the client threads)."""

    def __init__(self):
        self.n = 0
        self.lock = threading.Lock()

    def next(self):
        with self.lock:
            self.n += 1
            return self.n


def rows_of(body, shape):
    """The answer's rows, ready to compare: only the columns the question file's `compare`
    names, sorted unless its rows are `ordered`."""
    answer = json.loads(body)
    columns = [c["name"] if isinstance(c, dict) else c for c in answer["columns"]]
    rows = answer["rows"]
    ordered, compare = shape
    if compare:
        keep = [columns.index(c) for c in compare]
        rows = [[row[i] for i in keep] for row in rows]
    if not ordered:
        rows = sorted(rows, key=lambda row: json.dumps([round_float(v) for v in row]))
    return columns, rows


def round_float(v):
    return float(f"{v:.9g}") if isinstance(v, float) else v


def same_rows(a, b):
    """Equal, floats within 1e-9 relative (an average may sum in another order)."""
    if len(a) != len(b):
        return False
    for row_a, row_b in zip(a, b):
        if len(row_a) != len(row_b):
            return False
        for x, y in zip(row_a, row_b):
            if isinstance(x, float) or isinstance(y, float):
                if not (isinstance(x, (int, float)) and isinstance(y, (int, float))
                        and math.isclose(x, y, rel_tol=1e-9, abs_tol=1e-12)):
                    return False
            elif x != y:
                return False
    return True


def warm_up(host, port, mix, shapes, tokens, counter):
    """One pass of every question, untimed, so the runs measure a warm server (the archive in
    the OS page cache), as a long-running one is; each question is asked plain and varied under
    both tokens and the rows compared. Returns (questions checked, failures as messages)."""
    connection = http.client.HTTPConnection(host, port, timeout=600)
    failures = []
    checked = 0
    try:
        for name, language, text in mix:
            for token_name, _ in SCOPES:
                varied = vary(name, language, text, counter.next())
                answers = []
                for asked in (text, varied):
                    status, body = ask(connection, language, asked, tokens[token_name])
                    if status != 200:
                        failures.append(f"warm-up: {name} ({token_name}) answered {status}: "
                                        f"{body[:300]!r} to {asked!r}")
                        break
                    answers.append(rows_of(body, shapes[name]))
                if len(answers) != 2:
                    continue
                checked += 1
                (plain_columns, plain_rows), (varied_columns, varied_rows) = answers
                if plain_columns != varied_columns or not same_rows(plain_rows, varied_rows):
                    failures.append(f"variation check: {name} ({token_name}) answered otherwise "
                                    f"varied ({varied!r}): {len(plain_rows)} rows plain, "
                                    f"{len(varied_rows)} varied; plain {plain_rows[:3]!r}, "
                                    f"varied {varied_rows[:3]!r}")
    finally:
        connection.close()
    return checked, failures


def timed_ask(connection, host, port, language, text, token):
    """(status, seconds, connection): a broken connection is an error of the run and is replaced."""
    t0 = time.perf_counter()
    try:
        status, body = ask(connection, language, text, token)
        if status == 200:
            json.loads(body)
    except Exception as e:
        status = f"exception: {e}"
        connection.close()
        connection = http.client.HTTPConnection(host, port, timeout=300)
    return status, time.perf_counter() - t0, connection


def concurrent_run(args, host, port, mix, tokens, counter, server):
    """The clients for --seconds; returns (results, elapsed seconds, server CPU-seconds)."""
    results = []  # (question, token name, seconds, status)
    lock = threading.Lock()
    deadline = time.time() + args.seconds

    def client(index):
        token_name = SCOPES[index % 2][0]
        connection = http.client.HTTPConnection(host, port, timeout=300)
        i = index
        while time.time() < deadline:
            name, language, text = mix[i % len(mix)]
            i += 1
            status, seconds, connection = timed_ask(
                connection, host, port, language, vary(name, language, text, counter.next()),
                tokens[token_name])
            with lock:
                results.append((name, token_name, seconds, status))
        connection.close()

    cpu_before = cpu_seconds(server.pid)
    run_started = time.time()
    threads = [threading.Thread(target=client, args=(i,)) for i in range(args.clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.time() - run_started
    return results, elapsed, cpu_seconds(server.pid) - cpu_before


def lone_run(args, host, port, mix, tokens, counter, server):
    """Each question alone, --lone times per scope, one client; returns (results, per question)."""
    results = []
    per_question = {}
    connection = http.client.HTTPConnection(host, port, timeout=300)
    for name, language, text in mix:
        per_question[name] = {}
        for token_name, scope in SCOPES:
            latencies = []
            cpu_before = cpu_seconds(server.pid)
            for _ in range(args.lone):
                status, seconds, connection = timed_ask(
                    connection, host, port, language, vary(name, language, text, counter.next()),
                    tokens[token_name])
                latencies.append(seconds)
                results.append((name, token_name, seconds, status))
            cpu = cpu_seconds(server.pid) - cpu_before
            per_question[name][scope] = {
                "requests": args.lone,
                "median_ms": round(1000 * statistics.median(latencies), 2),
                "cpu_s_per_request": round(cpu / args.lone, 5),
            }
    connection.close()
    return results, per_question


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quarry", required=True, help="the quarry binary (a release build)")
    parser.add_argument("--archive", help="an existing archive (default: generate one)")
    parser.add_argument("--messages", type=int, default=1_000_000, help="messages to generate")
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=30)
    parser.add_argument("--lone", type=int, metavar="N",
                        help="instead of the concurrent run: each question N times alone per scope")
    parser.add_argument("--check-variation", action="store_true",
                        help="only the warm-up and its check that the varied questions answer the same")
    parser.add_argument("--keep", action="store_true", help="keep the generated archive")
    parser.add_argument("--json", help="write the summary as JSON to this file")
    args = parser.parse_args()
    if args.lone is not None and args.lone < 1:
        parser.error("--lone needs at least 1")

    mix, shapes = questions()
    for name, language, text in mix:  # a question file the variation no longer fits fails now
        vary(name, language, text, 0)

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
        for name, scope in SCOPES:
            out = run([quarry, "--archive", str(archive), "--scopes", str(scopes), "token", "add", name,
                       "--scope", scope, "--tokens", str(tokens_file)])
            tokens[name] = out.stdout.strip().splitlines()[-1]
        audit = archive.with_name(archive.stem + ".audit.db")

        server = subprocess.Popen(
            [quarry, "--archive", str(archive), "--scopes", str(scopes), "serve", "--listen", "127.0.0.1:0",
             "--tokens", str(tokens_file), "--timeout", "120s", "--max-concurrent", str(args.clients)],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        address = server.stdout.readline().strip().removeprefix("listening on http://")
        host, port = address.rsplit(":", 1)
        port = int(port)

        counter = Counter()
        checked, failures = warm_up(host, port, mix, shapes, tokens, counter)
        for failure in failures:
            print(failure, file=sys.stderr)
        print(f"variation check: {checked} of {len(mix) * len(SCOPES)} questions and scopes compared "
              f"plain and varied, {len(failures)} failures", file=sys.stderr)
        variation = {"variation_checked": checked, "variation_failures": len(failures)}
        if args.check_variation:
            summary = {"messages": messages, **variation}
            emit(summary, args.json)
            return 0 if not failures and checked == len(mix) * len(SCOPES) else 1

        before = audit_counts(audit)
        if args.lone is not None:
            results, per_question = lone_run(args, host, port, mix, tokens, counter, server)
        else:
            results, elapsed, cpu = concurrent_run(args, host, port, mix, tokens, counter, server)
        rss = peak_rss_kib(server.pid)
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=180)
        server = None

        after = audit_counts(audit)
        intents = after[0] - before[0]
        outcomes = after[1] - before[1]
        ok = [r for r in results if r[3] == 200]
        errors = [r for r in results if r[3] != 200]
        if args.lone is not None:
            summary = lone_summary(args, messages, results, errors, per_question, rss, intents, outcomes,
                                   variation)
        else:
            latencies = sorted(r[2] for r in results)
            summary = {
                "messages": messages,
                "clients": args.clients,
                "seconds": round(elapsed, 1),
                "requests": len(results),
                "errors": len(errors),
                "throughput_per_s": round(len(results) / elapsed, 2),
                "p50_ms": round(1000 * percentile(latencies, 50), 1) if latencies else None,
                "p99_ms": round(1000 * percentile(latencies, 99), 1) if latencies else None,
                "peak_rss_mib": round(rss / 1024, 1) if rss else None,
                "audit_intents": intents,
                "audit_outcomes": outcomes,
                "per_question": {},
                "server_cpu_s": round(cpu, 2),
                "cpu_s_per_request": round(cpu / len(results), 5) if results else None,
                **variation,
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
        emit(summary, args.json)
        for e in errors[:10]:
            print(f"error: {e}", file=sys.stderr)
        balanced = intents == outcomes == len(results)
        if not balanced:
            print(f"the audit trail does not balance: {intents} intents, {outcomes} outcomes, "
                  f"{len(results)} requests", file=sys.stderr)
        return 0 if not errors and balanced and ok and not failures else 1
    finally:
        if server is not None:
            server.kill()
        if args.keep:
            print(f"kept {work}", file=sys.stderr)
        else:
            shutil.rmtree(work, ignore_errors=True)


def lone_summary(args, messages, results, errors, per_question, rss, intents, outcomes, variation):
    """--lone's own summary: per question and scope, then the overall figures."""
    medians = {scope: [q[scope]["median_ms"] for q in per_question.values()] for _, scope in SCOPES}
    cpu = [q[scope]["cpu_s_per_request"] for q in per_question.values() for _, scope in SCOPES]
    admin = statistics.median(medians["admin"])
    reader = statistics.median(medians["reader"])
    mean_cpu = statistics.mean(cpu)
    cores = os.cpu_count()
    return {
        "mode": "lone",
        "messages": messages,
        "repeats": args.lone,
        "requests": len(results),
        "errors": len(errors),
        "peak_rss_mib": round(rss / 1024, 1) if rss else None,
        "audit_intents": intents,
        "audit_outcomes": outcomes,
        **variation,
        "per_question": per_question,
        "overall": {
            "median_lone_ms_admin": round(admin, 2),
            "median_lone_ms_reader": round(reader, 2),
            "reader_admin_ratio": round(reader / admin, 3) if admin else None,
            "mean_cpu_s_per_request": round(mean_cpu, 5),
            "cores": cores,
            # Below the clock tick (10 ms over the N requests) the mean reads 0: no bound then.
            "cpu_bound_throughput_per_s": round(0.8 * cores / mean_cpu, 2) if mean_cpu else None,
        },
    }


def emit(summary, json_path):
    text = json.dumps(summary, indent=2)
    print(text)
    if json_path:
        Path(json_path).write_text(text + "\n")


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
