#!/usr/bin/env bash
# The snapshot layout study: rewrites the snapshot of a kept `benches/compare` work folder in each
# layout below and times every question on the snapshot source alone. Prints one markdown row per
# layout: time and size of the snapshot, then each question's median.
#
#   benches/compare --tier S --keep --work DIR --no-ccusage     # once: the archive
#   benches/layouts.sh DIR [BIN]
#
# The folder's snapshot is left in the default layout at the end.
set -euo pipefail
work=${1:?usage: benches/layouts.sh WORK [BIN]}
bin=${2:-target/release/quarry}
here=$(cd "$(dirname "$0")" && pwd)
archive=$work/archive.db
snapshot=$work/archive.snapshot
layouts=(
  "lz4, 131,072 rows per row group (default)|"
  "zstd(1)|--compression zstd(1)"
  "zstd(3)|--compression zstd(3)"
  "uncompressed|--compression none"
  "lz4, 1,048,576 rows per row group|--row-group-rows 1048576"
  "lz4, 32,768 rows per row group|--row-group-rows 32768"
  "lz4, no dictionary pages|--no-dictionary"
  "Arrow IPC, uncompressed (no decode)|--file-format arrow"
  "lz4, 131,072 rows per row group (default)|"
)
for entry in "${layouts[@]}"; do
  name=${entry%%|*}
  read -r -a flags <<< "${entry#*|}"
  start=$(date +%s.%N)
  "$bin" --archive "$archive" snapshot --full "${flags[@]}" >/dev/null
  seconds=$(echo "$(date +%s.%N) - $start" | bc)
  # The files the manifest names (the previous layout's stay on disk one run longer).
  bytes=$(python3 -c 'import json, sys; m = json.load(open(sys.argv[1])); print(sum(f["bytes"] for t in m["tables"].values() for p in t["partitions"].values() for f in p["files"]))' "$snapshot/manifest.json")
  json=$(mktemp)
  "$here/compare" --bin "$bin" --work "$work" --keep --no-ccusage --engines quarry-snapshot \
    --json "$json" >/dev/null 2>&1
  python3 - "$name" "$seconds" "$bytes" "$json" <<'PY'
import json, sys
name, seconds, size, path = sys.argv[1], float(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
data = json.load(open(path))
rows = data["results"]
cells = [f"{m['median']:.3f}" if m.get("median") else "-" for m in rows if m["engine"] == "quarry-snapshot"]
print(f"| {name} | {seconds:.1f} s | {size / 1e9:.2f} GB | " + " | ".join(cells) + " |")
PY
  rm -f "$json"
done
