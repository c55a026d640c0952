#!/usr/bin/env bash
# Ingest throughput and peak memory on generated corpora of growing size (release build).
# Usage: benches/ingest_scale.sh [MESSAGES...]   (default: 250000 1000000, i.e. ~0.5 and ~2 GB)
# Prints one line per size: messages, input MB, seconds, MB/s, peak RSS MB, archive MB.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet
bin=target/release/quarry
work=${QUARRY_BENCH_DIR:-$(mktemp -d)}
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(250000 1000000)
printf '%-10s %10s %8s %8s %12s %11s\n' messages input_MB seconds MB/s peak_RSS_MB archive_MB
for n in "${sizes[@]}"; do
  corpus="$work/gen-$n"
  [ -d "$corpus" ] || "$bin" gen --messages "$n" --seed 1 --out "$corpus" >/dev/null
  rm -f "$work/archive-$n.db"*
  /usr/bin/time -f '%e %M' -o "$work/time-$n" "$bin" --archive "$work/archive-$n.db" --format json ingest --no-progress "$corpus" > "$work/summary-$n.json"
  read -r secs rss_kb < "$work/time-$n"
  bytes=$(python3 -c "import json,sys; print(json.load(open('$work/summary-$n.json'))['bytes'])")
  db=$(stat -c %s "$work/archive-$n.db")
  python3 - "$n" "$bytes" "$secs" "$rss_kb" "$db" <<'PY'
import sys
n, b, s, rss, db = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
print(f"{n:<10} {b/1e6:>10.1f} {s:>8.1f} {b/1e6/s:>8.1f} {rss/1024:>12.1f} {db/1e6:>11.1f}")
PY
done
