"""Reads quarry's exports and snapshot with the tools analysts use: pyarrow (Parquet and Arrow
IPC) and the DuckDB CLI (Parquet), and checks that row counts and token sums equal the archive's
(read with Python's sqlite3) and that times arrive as timestamps. Run with a Python that has
pyarrow (`benches/tools.sh pyarrow`):

    $(benches/tools.sh pyarrow) benches/read_exports.py --quarry BIN --archive ARCHIVE \\
        --duckdb "$(benches/tools.sh duckdb)"
"""

import argparse
import json
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path

import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.ipc as ipc
import pyarrow.parquet as pq


def run(*argv):
    done = subprocess.run([str(a) for a in argv], capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"{' '.join(map(str, argv))} failed:\n{done.stderr}")
    return done.stdout


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quarry", required=True)
    ap.add_argument("--archive", required=True)
    ap.add_argument("--duckdb", required=True)
    args = ap.parse_args()
    db = sqlite3.connect(f"file:{args.archive}?mode=ro", uri=True)
    count = lambda table: db.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]
    tokens = db.execute("SELECT SUM(output_tokens) FROM usage").fetchone()[0] or 0
    failures = []

    def expect(what, got, want):
        print(f"{what}: {got}" + ("" if got == want else f" != {want}"))
        if got != want:
            failures.append(what)

    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        q = [args.quarry, "--archive", args.archive]
        run(*q, "export", "--to", tmp / "parquet", "--tables", "messages,usage")
        run(*q, "--format", "arrow", "export", "--to", tmp / "arrow", "--tables", "messages")
        run(*q, "export", "--to", tmp / "hive", "--tables", "sessions", "--partition-by", "origin")
        run(*q, "--tz", "UTC", "usage | group by model | agg sum:output_tokens", "-o", tmp / "by-model.parquet")
        run(*q, "snapshot", "--to", tmp / "snapshot")

        # pyarrow: Parquet, Arrow IPC, a Hive-partitioned folder, a query result, the snapshot.
        messages = pq.read_table(tmp / "parquet" / "messages.parquet")
        expect("pyarrow parquet messages rows", messages.num_rows, count("messages"))
        expect(
            "pyarrow parquet occurred_at_ms type",
            pa.types.is_timestamp(messages.schema.field("occurred_at_ms").type),
            True,
        )
        usage = pq.read_table(tmp / "parquet" / "usage.parquet")
        expect("pyarrow parquet usage output tokens", sum(usage["output_tokens"].to_pylist()), tokens)
        with pa.memory_map(str(tmp / "arrow" / "messages.arrow")) as source:
            arrow = ipc.open_file(source).read_all()
        expect("pyarrow arrow IPC messages rows", arrow.num_rows, count("messages"))
        hive = ds.dataset(tmp / "hive" / "sessions", format="parquet", partitioning="hive")
        expect("pyarrow hive sessions rows", hive.count_rows(), count("sessions"))
        by_model = pq.read_table(tmp / "by-model.parquet")
        expect("pyarrow query result output tokens", sum(v or 0 for v in by_model.column(1).to_pylist()), tokens)
        manifest = json.loads((tmp / "snapshot" / "manifest.json").read_text())
        files = [tmp / "snapshot" / f["path"] for p in manifest["tables"]["messages"]["partitions"].values() for f in p["files"]]
        expect("pyarrow snapshot messages rows", ds.dataset(files, format="parquet").count_rows(), count("messages"))

        # DuckDB: the same Parquet files.
        def duck(sql):
            return json.loads(run(args.duckdb, "-json", "-c", sql) or "[]")

        rows = duck(f"SELECT COUNT(*) AS n FROM read_parquet('{tmp}/parquet/messages.parquet')")
        expect("duckdb parquet messages rows", rows[0]["n"], count("messages"))
        rows = duck(f"SELECT SUM(output_tokens)::BIGINT AS t FROM read_parquet('{tmp}/parquet/usage.parquet')")
        expect("duckdb parquet usage output tokens", rows[0]["t"], tokens)
        rows = duck(f"SELECT COUNT(*) AS n FROM read_parquet('{tmp}/hive/sessions/*/*.parquet', hive_partitioning = true)")
        expect("duckdb hive sessions rows", rows[0]["n"], count("sessions"))
        rows = duck(f"SELECT typeof(occurred_at_ms) AS t FROM read_parquet('{tmp}/parquet/messages.parquet') LIMIT 1")
        expect("duckdb occurred_at_ms type", rows[0]["t"], "TIMESTAMP WITH TIME ZONE")
        snapshot_files = ", ".join(f"'{f}'" for f in files)
        rows = duck(f"SELECT COUNT(*) AS n FROM read_parquet([{snapshot_files}])")
        expect("duckdb snapshot messages rows", rows[0]["n"], count("messages"))
    if failures:
        print(f"{len(failures)} checks failed: {', '.join(failures)}", file=sys.stderr)
        return 1
    print("every export and the snapshot read back as the archive holds them")
    return 0


if __name__ == "__main__":
    sys.exit(main())
