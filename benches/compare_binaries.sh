#!/usr/bin/env bash
# Two quarry binaries on the same archive and queries, runs interleaved (old, new, old, new, ...)
# so the page cache and the machine's state treat both alike; prints each query's median of
# RUNS whole-process wall times per binary and the new/old ratio. Used to judge a change in
# the engine or the build profile (docs/benchmarks.md, "Engine library").
# Usage: benches/compare_binaries.sh OLD_BIN NEW_BIN ARCHIVE [RUNS]
# With no archive at ARCHIVE, one is made from `OLD_BIN gen --lean --messages 1000000`.
set -euo pipefail
old=$1 new=$2 db=$3 runs=${4:-5}
queries=(
  'messages | group by role | agg count, avg:word_count, p90:word_count'
  'messages | agg count, p50:word_count, p90:word_count, p99:word_count'
)
if [ ! -f "$db" ]; then
  corpus=$(mktemp -d)
  "$old" gen --lean --messages 1000000 --seed 5 --out "$corpus" > /dev/null
  "$old" --archive "$db" ingest --no-progress "$corpus" > /dev/null
  rm -rf "$corpus"
fi
seconds() { # seconds BIN QUERY: one whole-process run's wall time
  local t0 t1
  t0=$(date +%s.%N)
  "$1" --archive "$db" --format json "$2" > /dev/null
  t1=$(date +%s.%N)
  echo "$t1 - $t0" | bc -l
}
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
for q in "${queries[@]}"; do
  "$old" --archive "$db" --format json "$q" > /dev/null   # warm the page cache
  : > /tmp/compare.old; : > /tmp/compare.new
  for _ in $(seq "$runs"); do
    seconds "$old" "$q" >> /tmp/compare.old
    seconds "$new" "$q" >> /tmp/compare.new
  done
  o=$(median < /tmp/compare.old); n=$(median < /tmp/compare.new)
  printf '%-72s old %.3f s  new %.3f s  new/old %.2f\n' "$q" "$o" "$n" "$(echo "$n / $o" | bc -l)"
done
rm -f /tmp/compare.old /tmp/compare.new
