#!/usr/bin/env bash
# How ingest keeps up as the archive grows (release build): CHUNKS corpora of MESSAGES generated
# messages each (`quarry gen --lean`, seeds 1, 2, ...) are ingested one after another into one
# archive, each by its own `quarry ingest` (the daily case: more sessions into an archive that
# already holds the earlier ones). A chunk's corpus is generated just before its ingest and
# removed after it, so the disk holds one chunk of JSONL at a time besides the archive.
# Usage: benches/ingest_growth.sh [CHUNKS] [MESSAGES]   (default: 10 chunks of 1000000)
# Prints one line per chunk: messages in the archive after it, the chunk's input MB, seconds
# (the whole command), MB/s, peak RSS MB, archive MB, archive bytes per message.
# Needs about 3 KB of disk per message (28 GB at ten million), plus one chunk of JSONL.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${QUARRY_BIN:-${CARGO_TARGET_DIR:-target}/release/quarry}
[ -n "${QUARRY_BIN:-}" ] || cargo build --release --quiet
chunks=${1:-10}
messages=${2:-1000000}
work=$(mktemp -d "${QUARRY_BENCH_DIR:-${TMPDIR:-/tmp}}/quarry-growth-XXXXXX")
trap 'rm -rf "$work"' EXIT
printf '%-12s %10s %8s %8s %12s %11s %9s\n' messages input_MB seconds MB/s peak_RSS_MB archive_MB B/message
total=0
for k in $(seq 1 "$chunks"); do
  corpus="$work/gen-$k"
  "$bin" gen --lean --messages "$messages" --seed "$k" --out "$corpus" >/dev/null
  /usr/bin/time -f '%e %M' -o "$work/time" "$bin" --archive "$work/archive.db" --format json \
    ingest --no-progress "$corpus" > "$work/summary.json"
  rm -rf "$corpus"
  total=$((total + messages))
  read -r secs rss_kb < "$work/time"
  python3 - "$total" "$work/summary.json" "$secs" "$rss_kb" "$work/archive.db" <<'PY'
import json, os, sys
total, summary, secs, rss, db = int(sys.argv[1]), json.load(open(sys.argv[2])), float(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
size = sum(os.path.getsize(p) for p in (db, db + "-wal") if os.path.exists(p))
mb = summary["bytes"] / 1e6
print(f"{total:<12} {mb:>10.1f} {secs:>8.1f} {mb / secs:>8.1f} {rss / 1024:>12.1f} {size / 1e6:>11.1f} {size / total:>9.0f}")
PY
done
