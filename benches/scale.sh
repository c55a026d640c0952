#!/usr/bin/env bash
# The engine at scale (release build): generates lean sessions (`quarry gen --lean`), ingests
# them, then runs with --memory-limit (default 256MB):
#   messages | agg count, p50:word_count, p90:word_count, p99:word_count
#   messages | group by session_id | agg count, p90:word_count                 -> per-session.parquet
#   messages | sort by time desc | select message_id, session_id, word_count   -> sorted.parquet
# and prints seconds and peak RSS of each step. Row counts are checked against SQLite (python3's
# sqlite3 module). Usage: benches/scale.sh [MESSAGES] (default 10000000; about 6 GB of JSONL and
# a 20 GB archive at 10M). QUARRY_SCALE_DIR keeps the work folder between runs;
# QUARRY_MEMORY_LIMIT changes the limit.
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-10000000}
limit=${QUARRY_MEMORY_LIMIT:-256MB}
work=${QUARRY_SCALE_DIR:-$(mktemp -d)}
mkdir -p "$work"
cargo build --release --quiet
bin=$PWD/target/release/quarry
db="$work/archive-$n.db"

step() { # step NAME CMD... : runs CMD under /usr/bin/time, prints seconds and peak RSS
  local name=$1; shift
  /usr/bin/time -f '%e %M' -o "$work/time" "$@" > "$work/out" 2> "$work/err" || {
    cat "$work/err" >&2; exit 1; }
  read -r secs rss_kb < "$work/time"
  printf '%-34s %9.1f s %9.1f MB  %s\n' "$name" "$secs" "$(echo "$rss_kb / 1024" | bc -l)" \
    "$(grep -h -o 'wrote .*' "$work/err" | head -1)"
}

if [ ! -f "$db" ]; then
  corpus="$work/lean-$n"
  [ -d "$corpus" ] || step "gen --lean $n" "$bin" gen --lean --messages "$n" --seed 5 --out "$corpus"
  step "ingest" "$bin" --archive "$db" ingest --no-progress "$corpus"
  rm -rf "$corpus"
fi
q=("$bin" --archive "$db" --memory-limit "$limit")
step "count, p50, p90, p99 (json)" "${q[@]}" --format json 'messages | agg count, p50:word_count, p90:word_count, p99:word_count'
cat "$work/out"; echo
step "group by session_id, p90 (parquet)" "${q[@]}" 'messages | group by session_id | agg count, p90:word_count' -o "$work/per-session.parquet"
groups=$(grep -o 'wrote [0-9]*' "$work/err" | grep -o '[0-9]*')
step "sort by time desc (parquet)" "${q[@]}" 'messages | sort by time desc | select message_id, session_id, word_count' -o "$work/sorted.parquet"
rows=$(grep -o 'wrote [0-9]*' "$work/err" | grep -o '[0-9]*')
python3 - "$db" "$rows" "$groups" <<'PY'
import sqlite3, sys
db, rows, groups = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
c = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
n, s = c.execute("SELECT COUNT(*), COUNT(DISTINCT session_id) FROM messages").fetchone()
print(f"sqlite: {n} messages in {s} sessions; parquet: {rows} sorted rows, {groups} groups")
sys.exit(0 if (n, s) == (rows, groups) else 1)
PY
ls -la "$work"/*.parquet
