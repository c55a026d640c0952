#!/usr/bin/env bash
# What `quarry watch` costs while nothing changes (release build): it watches a generated corpus
# of N session files (default 10000), waits for its start batch, then reads its CPU time and
# resident memory from /proc over --seconds (default 60).
# Usage: benches/watch_idle.sh [FILES] [SECONDS]
# Prints: files, folders, CPU seconds used while idle, % of one core, RSS MB at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet
bin=${QUARRY_BIN:-${CARGO_TARGET_DIR:-target}/release/quarry}
files=${1:-10000}
seconds=${2:-60}
work=$(mktemp -d)
trap 'kill "$pid" 2>/dev/null || true; rm -rf "$work"' EXIT
"$bin" gen --sessions "$files" --lean --seed 1 --out "$work/corpus" >/dev/null
"$bin" --archive "$work/archive.db" ingest --no-progress "$work/corpus" >/dev/null
"$bin" --archive "$work/archive.db" watch "$work/corpus" 2>"$work/log" &
pid=$!
until grep -q "watch start:" "$work/log" 2>/dev/null; do sleep 0.2; done
ticks() { awk '{print $14 + $15}' "/proc/$pid/stat"; }
hz=$(getconf CLK_TCK)
before=$(ticks)
sleep "$seconds"
after=$(ticks)
rss_kb=$(awk '/VmRSS/ {print $2}' "/proc/$pid/status")
found=$(find "$work/corpus" -name '*.jsonl' | wc -l)
folders=$(find "$work/corpus" -type d | wc -l)
python3 - "$found" "$folders" "$before" "$after" "$hz" "$seconds" "$rss_kb" <<'PY'
import sys
files, folders, before, after, hz, seconds, rss = sys.argv[1:]
cpu = (int(after) - int(before)) / int(hz)
print(f"files {files}, folders {folders}: {cpu:.2f} CPU s over {seconds} s idle = {100 * cpu / float(seconds):.2f} % of one core; RSS {int(rss) / 1024:.1f} MB")
PY
