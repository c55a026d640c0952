#!/usr/bin/env bash
# The daily case for two quarry binaries: one more chunk of generated messages (`quarry gen
# --lean`, seeds 1, 2, ...) into copies of one archive of BASE chunks written by OLD, and the
# first chunk alone into a new archive, each binary in turn, ROUNDS rounds, every timed command
# cold.
# Usage: benches/ingest_daily_compare.sh OLD_BINARY NEW_BINARY [BASE] [ROUNDS] [MESSAGES]
#   (default 5 chunks of 1000000 messages, 3 rounds; about 3 KB of disk per message, twice
#   the base archive)
# NEW opens its copy once before the timed command (`quarry tables`), so a schema migration is
# not counted. Needs root for /proc/sys/vm/drop_caches. Prints one line per command: binary,
# round, what, seconds, peak RSS MB, user CPU seconds.
set -euo pipefail
cd "$(dirname "$0")/.."
old=${1:?old binary}
new=${2:?new binary}
base=${3:-5}
rounds=${4:-3}
messages=${5:-1000000}
work=$(mktemp -d "${QUARRY_BENCH_DIR:-${TMPDIR:-/tmp}}/quarry-daily-XXXXXX")
trap 'rm -rf "$work"' EXIT
cold() {
  sync
  echo 3 > /proc/sys/vm/drop_caches
}
timed() { # label binary archive corpus
  cold
  /usr/bin/time -f '%e %M %U' -o "$work/time" "$2" --archive "$3" ingest --no-progress "$4" \
    > /dev/null 2>&1
  read -r secs rss user < "$work/time"
  printf '%-28s %8.1f %10.0f %8.1f\n' "$1" "$secs" "$((rss / 1024))" "$user"
}
dirs=()
for k in $(seq 1 $((base + 1))); do
  "$old" gen --lean --messages "$messages" --seed "$k" --out "$work/gen-$k" > /dev/null
  dirs+=("$work/gen-$k")
done
"$old" --archive "$work/base.db" ingest --no-progress "${dirs[@]:0:$base}" > /dev/null 2>&1
rm -rf "${dirs[@]:1:$((base - 1))}"
printf '%-28s %8s %10s %8s\n' command seconds peak_RSS_MB user_s
for round in $(seq 1 "$rounds"); do
  for which in old new; do
    bin=$old
    [ "$which" = old ] || bin=$new
    rm -f "$work"/copy.db*
    cp "$work/base.db" "$work/copy.db"
    [ "$which" = old ] || "$bin" --archive "$work/copy.db" tables > /dev/null
    timed "$which round $round daily" "$bin" "$work/copy.db" "$work/gen-$((base + 1))"
    rm -f "$work"/copy.db* "$work"/alone.db*
    timed "$which round $round alone" "$bin" "$work/alone.db" "$work/gen-1"
    rm -f "$work"/alone.db*
  done
done
