#!/usr/bin/env bash
# Ingest throughput of two quarry binaries on the same corpora, runs interleaved (old, new, old,
# new, ...) so machine noise hits both alike; prints the median of RUNS per binary and corpus.
# Usage: benches/ingest_compare.sh OLD_BINARY NEW_BINARY [RUNS] [MESSAGES]
#   corpora: ../shared/corpus (the real one) and `quarry gen --messages MESSAGES --seed 1`
#   (default 450000 messages, about 1 GB). Set QUARRY_BENCH_DIR to keep the generated corpus.
# Each run ingests into a fresh archive; the script removes what it made.
set -euo pipefail
cd "$(dirname "$0")/.."
old=${1:?old binary}
new=${2:?new binary}
runs=${3:-3}
messages=${4:-450000}
work=${QUARRY_BENCH_DIR:-$(mktemp -d)}
keep_work=${QUARRY_BENCH_DIR:+yes}
cleanup() {
  rm -f "$work"/archive.db*
  [ -n "$keep_work" ] || rm -rf "$work"
}
trap cleanup EXIT
real=../shared/corpus
generated="$work/gen-$messages"
[ -d "$generated" ] || "$new" gen --messages "$messages" --seed 1 --out "$generated" >/dev/null

one_run() { # binary corpus -> "seconds bytes peak_rss_kb"
  rm -f "$work"/archive.db*
  /usr/bin/time -f '%e %M' -o "$work/time" "$1" --archive "$work/archive.db" --format json \
    ingest --no-progress "$2" > "$work/summary.json"
  local bytes
  bytes=$(python3 -c "import json; print(json.load(open('$work/summary.json'))['bytes'])")
  read -r secs rss < "$work/time"
  echo "$secs $bytes $rss"
}

printf '%-10s %-6s %8s %10s %8s %12s\n' corpus binary runs input_MB MB/s peak_RSS_MB
for corpus in "$real" "$generated"; do
  label=$([ "$corpus" = "$real" ] && echo real || echo "gen-$messages")
  : > "$work/old.txt"
  : > "$work/new.txt"
  for _ in $(seq "$runs"); do
    one_run "$old" "$corpus" >> "$work/old.txt"
    one_run "$new" "$corpus" >> "$work/new.txt"
  done
  for which in old new; do
    python3 - "$label" "$which" "$work/$which.txt" <<'PY'
import statistics, sys
label, which, path = sys.argv[1], sys.argv[2], sys.argv[3]
rows = [tuple(map(float, l.split())) for l in open(path) if l.strip()]
secs = statistics.median(r[0] for r in rows)
mb = rows[0][1] / 1e6
rss = statistics.median(r[2] for r in rows) / 1024
print(f"{label:<10} {which:<6} {len(rows):>8} {mb:>10.1f} {mb / secs:>8.1f} {rss:>12.1f}   (runs: {', '.join(f'{r[0]:.2f}s' for r in rows)})")
PY
  done
done
