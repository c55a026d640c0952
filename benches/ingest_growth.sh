#!/usr/bin/env bash
# How ingest keeps up as the archive grows (release build), in MB/s per chunk of generated
# messages (`quarry gen --lean`, seeds 1, 2, ...).
#
#   benches/ingest_growth.sh [CHUNKS] [MESSAGES]        (default: 10 chunks of 1000000)
#     Each chunk is ingested by its own `quarry ingest` into one archive (the daily case: more
#     sessions into an archive that already holds the earlier ones). A chunk's corpus is
#     generated just before its ingest and removed after it.
#   benches/ingest_growth.sh --one [CHUNKS] [MESSAGES] [DAILY]
#     All CHUNKS are generated first and ingested by one command (a first ingest of a long
#     history); each chunk's seconds come from the command's progress lines (`--progress-lines`,
#     the moment its last byte was handed to the writer; the last chunk ends when the command
#     returns). Then DAILY more chunks (default 1) are ingested by a command each (the daily
#     case on the whole archive).
#     The first chunk is also ingested alone into a new archive before the long command, after
#     it, and after each daily chunk (the lines `alone-0`, `alone-1`, ...): the rate to take the
#     growth ratios against. The machine's speed drifts within a run, so each daily chunk is
#     taken against the mean rate of the two alone runs on either side of it, and the long
#     command's last chunk against its own first; the lines starting with `# ratio` say them.
#
# Prints one line per chunk: messages in the archive after it, the chunk's input MB, seconds,
# MB/s, peak RSS MB (of the command that read it), archive MB, archive bytes per message.
# Needs about 3 KB of disk per message (29 GB at ten million), plus the JSONL (0.85 GB per
# million; with --one, all of it at once).
#
# QUARRY_DROP_CACHES=1 empties the OS page cache before each timed command (needs root:
# /proc/sys/vm/drop_caches), so every command starts cold: past the machine's memory (a ten
# million archive is 29 GB) a command's time otherwise depends on what ran before it.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${QUARRY_BIN:-${CARGO_TARGET_DIR:-target}/release/quarry}
[ -n "${QUARRY_BIN:-}" ] || cargo build --release --quiet
one=
if [ "${1:-}" = --one ]; then one=1; shift; fi
chunks=${1:-10}
messages=${2:-1000000}
daily=${3:-1}
work=$(mktemp -d "${QUARRY_BENCH_DIR:-${TMPDIR:-/tmp}}/quarry-growth-XXXXXX")
trap 'rm -rf "$work"' EXIT
cold() { # empties the OS page cache when asked to (QUARRY_DROP_CACHES=1)
  [ "${QUARRY_DROP_CACHES:-}" = 1 ] || return 0
  sync
  if ! echo 3 2> /dev/null > /proc/sys/vm/drop_caches; then
    echo "QUARRY_DROP_CACHES=1: cannot write /proc/sys/vm/drop_caches (not root?)" >&2
    exit 1
  fi
}
# Adds the seconds and input bytes of the command just timed to the file $1.
record() {
  echo "$(cut -d' ' -f1 "$work/time") $(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["bytes"])' "$work/summary.json")" >> "$1"
}
# Prints one line for the command just timed ($work/time, $work/summary.json): label $1, $2
# messages in the archive $3 (for bytes per message).
report() {
  read -r secs rss_kb < "$work/time"
  python3 - "$1" "$2" "$work/summary.json" "$secs" "$rss_kb" "$3" <<'PY'
import json, os, sys
label, n, summary, secs, rss, db = sys.argv[1], int(sys.argv[2]), json.load(open(sys.argv[3])), float(sys.argv[4]), int(sys.argv[5]), sys.argv[6]
size = sum(os.path.getsize(p) for p in (db, db + "-wal") if os.path.exists(p))
mb = summary["bytes"] / 1e6
print(f"{label:<12} {mb:>10.1f} {secs:>8.1f} {mb / secs:>8.1f} {rss / 1024:>12.1f} {size / 1e6:>11.1f} {size / n:>9.0f}")
PY
}
# The first chunk (generated into $work/gen-1) ingested alone into a new archive by its own
# command, cold; prints the line `alone-$1`, adds its seconds to $work/alone and removes that
# archive.
alone() {
  cold
  /usr/bin/time -f '%e %M' -o "$work/time" "$bin" --archive "$work/alone.db" --format json \
    ingest --no-progress "$work/gen-1" > "$work/summary.json"
  report "alone-$1" "$messages" "$work/alone.db"
  record "$work/alone"
  rm -f "$work"/alone.db*
}
printf '%-12s %10s %8s %8s %12s %11s %9s\n' messages input_MB seconds MB/s peak_RSS_MB archive_MB B/message
if [ -n "$one" ]; then
  dirs=()
  for k in $(seq 1 "$chunks"); do
    "$bin" gen --lean --messages "$messages" --seed "$k" --out "$work/gen-$k" >/dev/null
    dirs+=("$work/gen-$k")
    du -sb --apparent-size "$work/gen-$k" | cut -f1 >> "$work/sizes"
  done
  alone 0
  cold
  /usr/bin/time -f '%e %M' -o "$work/time" "$bin" --archive "$work/archive.db" --format json \
    ingest --progress-lines "${dirs[@]}" > "$work/summary.json" 2> "$work/progress"
  rm -rf "${dirs[@]:1}"
  python3 - "$messages" "$work/sizes" "$work/progress" "$work/time" "$work/archive.db" <<'PY'
import json, os, sys
per, sizes, progress, timing, db = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5]
lines = [json.loads(l) for l in open(progress) if l.startswith("{")]
secs, rss = open(timing).read().split()
secs, rss = float(secs), int(rss)
# Chunk boundaries in input bytes, from the progress lines' own totals: the files of chunk k
# come after those of chunk k-1 (the command lists the folders in order).
weights = [int(x) for x in open(sizes).read().split()]
total = lines[-1]["bytes_total"]
bounds, acc = [], 0
for w in weights:
    acc += w
    bounds.append(total * acc / sum(weights))
def at(b):
    prev = (0, 0.0)
    for l in lines:
        if l["bytes_done"] >= b:
            (b0, t0), (b1, t1) = prev, (l["bytes_done"], l["elapsed_ms"] / 1000)
            return t0 + (t1 - t0) * ((b - b0) / (b1 - b0) if b1 > b0 else 1)
        prev = (l["bytes_done"], l["elapsed_ms"] / 1000)
    return secs
size = sum(os.path.getsize(p) for p in (db, db + "-wal") if os.path.exists(p))
chunk_secs = open(os.path.join(os.path.dirname(db), "lines"), "w")
t_prev, b_prev = 0.0, 0.0
for k, b in enumerate(bounds, 1):
    t = secs if k == len(bounds) else at(b)
    mb = (b - b_prev) / 1e6
    n = per * k
    last = k == len(bounds)
    print(f"{n:<12} {mb:>10.1f} {t - t_prev:>8.1f} {mb / (t - t_prev):>8.1f} {rss / 1024 if last else float('nan'):>12.1f} "
          f"{size / 1e6 if last else float('nan'):>11.1f} {size / n if last else float('nan'):>9.0f}")
    print(t - t_prev, b - b_prev, file=chunk_secs)
    t_prev, b_prev = t, b
print(f"# one command: {total / 1e6:.1f} MB in {secs:.1f} s, {total / 1e6 / secs:.1f} MB/s")
PY
  first=$((chunks + 1))
  total=$((chunks * messages))
  alone 1
else
  first=1
  total=0
fi
last=$chunks
[ -n "$one" ] && last=$((chunks + daily))
for k in $(seq "$first" "$last"); do
  corpus="$work/gen-$k"
  "$bin" gen --lean --messages "$messages" --seed "$k" --out "$corpus" >/dev/null
  cold
  /usr/bin/time -f '%e %M' -o "$work/time" "$bin" --archive "$work/archive.db" --format json \
    ingest --no-progress "$corpus" > "$work/summary.json"
  rm -rf "$corpus"
  total=$((total + messages))
  report "$total" "$total" "$work/archive.db"
  record "$work/daily"
  # With --one, the first chunk alone after each daily chunk: the machine's speed varies
  # within a sitting (docs/benchmarks.md, "Ingest"), so each daily chunk is compared with the
  # alone runs just before and after it.
  [ -z "$one" ] || alone $((k - chunks + 1))
done
if [ -n "$one" ]; then
  python3 - "$work/lines" "$work/alone" "$work/daily" "$chunks" <<'PY'
import statistics, sys
# Each file: one line per command (or chunk): seconds, input bytes.
lines, alone, daily = ([tuple(map(float, l.split())) for l in open(f)] for f in sys.argv[1:4])
chunks = int(sys.argv[4])
rate = lambda r: r[1] / r[0]
print(f"# ratio: chunk {chunks} of the one command against its chunk 1: {rate(lines[-1]) / rate(lines[0]):.2f}")
ratios = []
for k, d in enumerate(daily):
    a, b = alone[k + 1], alone[k + 2]
    ratios.append(rate(d) / ((rate(a) + rate(b)) / 2))
    print(f"# ratio: daily chunk {chunks + k + 1} ({d[0]:.1f} s) against chunk 1 alone "
          f"({a[0]:.1f} and {b[0]:.1f} s around it): {ratios[-1]:.3f}")
if len(ratios) > 1:
    # The machine's speed drifts from one command to the next (docs/benchmarks.md, "The daily
    # million, thread by thread"): with several daily chunks, their median and range.
    print(f"# ratio: daily chunks, median {statistics.median(ratios):.3f} "
          f"(from {min(ratios):.3f} to {max(ratios):.3f})")
PY
fi
