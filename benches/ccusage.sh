#!/usr/bin/env bash
# quarry's token accounting against the usage reporter ccusage on the real corpus (not part of
# `cargo test`): per agent and model, and per day, input / output / cache-read / cache-write
# tokens on each side and the difference. docs/benchmarks.md ("Token accounting against
# ccusage") says how to read it.
#
# Usage: benches/ccusage.sh [QUARRY_BIN]     (default: target/release/quarry)
# Environment:
#   CORPUS           the corpus folder (default: ../shared/corpus beside the checkout)
#   CCUSAGE_VERSION  ccusage's npm version (default 20.0.24; 20.0.26's native binary is missing)
#   CCUSAGE_DIR      where ccusage is installed and kept between runs
#                    (default: ${XDG_CACHE_HOME:-~/.cache}/quarry-bench/ccusage-VERSION)
#   KEEP=1           keep the temporary folder (corpus copy, archive, both reports)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
quarry=$(realpath "${1:-$root/target/release/quarry}")
corpus=$(realpath "${CORPUS:-$root/../shared/corpus}")
version=${CCUSAGE_VERSION:-20.0.24}
install=${CCUSAGE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/quarry-bench/ccusage-$version}
[ -x "$quarry" ] || { echo "no quarry binary at $quarry" >&2; exit 2; }
[ -d "$corpus/claude-code" ] || { echo "no corpus at $corpus" >&2; exit 2; }

# 1. ccusage and its native binary of the same version, from the npm registry, in a local folder.
ccusage=$(CCUSAGE_VERSION=$version CCUSAGE_DIR=$install "$here/tools.sh" ccusage)

tmp=$(mktemp -d "${TMPDIR:-/tmp}/quarry-ccusage.XXXXXX")
if [ "${KEEP:-0}" = 1 ]; then
  echo "keeping $tmp" >&2
else
  trap 'rm -rf "$tmp"' EXIT
fi

# 2. The corpus laid out as Claude Code and Codex keep it, and the pi, Qwen Code, Kimi CLI and
#    Copilot CLI sessions, the OpenCode database and JSON files, the Goose database and the Amp
#    threads of tests/fixtures/agents as those agents keep them, in a home of its own (so neither
#    side reads this machine's own ~/.claude, ~/.codex, ~/.pi, ~/.qwen, ~/.kimi, ~/.copilot or
#    ~/.local/share).
home=$tmp/home
python3 "$here/ccusage_compare.py" layout "$corpus" "$home"

# 3. ccusage: every agent it detects, grouped by UTC day, with per-agent breakdowns.
HOME=$home XDG_CONFIG_HOME=$home/.config XDG_DATA_HOME=$home/.local/share \
  XDG_CACHE_HOME=$home/.cache TZ=UTC \
  CLAUDE_CONFIG_DIR=$home/claude CODEX_HOME=$home/codex NO_COLOR=1 \
  "$ccusage" daily --json --offline --timezone UTC --by-agent > "$tmp/ccusage.json"
echo "ccusage $("$ccusage" --version 2>/dev/null | tail -1)" >&2

# 4. quarry: the same copy into a fresh archive, usage per origin, model and UTC day.
archive=$tmp/archive.db
"$quarry" --archive "$archive" ingest --no-progress "$home/claude" "$home/codex" "$home/.pi" "$home/.qwen" "$home/.kimi" \
  "$home/.copilot" "$home/.local/share/opencode" "$home/.local/share/kilo" \
  "$home/.local/share/goose" "$home/.local/share/amp" \
  > "$tmp/ingest.txt"
q() { "$quarry" --archive "$archive" --format json --tz UTC "$1"; }
sums='sum:input_tokens, sum:output_tokens, sum:cache_read_tokens, sum:cache_write_tokens'
tiers='sum:cache_write_5m_tokens, sum:cache_write_1h_tokens'
group='usage | group by session.origin, model, time:day'
via=()
if q "$group | agg count, $sums, $tiers" > "$tmp/quarry.json" 2> "$tmp/quarry.err"; then
  # A quarry with the cache-write tiers also says which responses only progress records carry.
  if q "usage | group by session.origin, model, time:day, recorded_via | count" \
    > "$tmp/quarry-via.json" 2>> "$tmp/quarry.err"; then
    via=("$tmp/quarry-via.json")
  fi
else
  echo "this quarry has no cache-write tiers; comparing without them" >&2
  q "$group | agg count, $sums" > "$tmp/quarry.json"
fi

# 5. The comparison.
python3 "$here/ccusage_compare.py" compare "$tmp/ccusage.json" "$tmp/quarry.json" "${via[@]}"

# 6. The cost report: quarry's `report daily --by model` against ccusage's `daily --breakdown`,
#    per day and model (benches/report_diff.py; docs/cost.md says why they may differ).
HOME=$home XDG_CONFIG_HOME=$home/.config XDG_DATA_HOME=$home/.local/share \
  XDG_CACHE_HOME=$home/.cache TZ=UTC \
  CLAUDE_CONFIG_DIR=$home/claude CODEX_HOME=$home/codex NO_COLOR=1 \
  "$ccusage" daily --json --offline --timezone UTC --breakdown > "$tmp/ccusage-cost.json"
if "$quarry" --archive "$archive" --tz UTC --format json report daily --by model --no-refresh \
  > "$tmp/quarry-cost.json" 2>> "$tmp/quarry.err"; then
  echo
  echo "cost per day and model: quarry report daily against ccusage daily"
  python3 - "$here" "$tmp/quarry-cost.json" "$tmp/ccusage-cost.json" <<'PY'
import json, sys
sys.path.insert(0, sys.argv[1])
import report_diff
ours = report_diff.quarry_rows(json.load(open(sys.argv[2])))
theirs = report_diff.ccusage_rows(json.load(open(sys.argv[3])))
for line in report_diff.diff(ours, theirs):
    print(f"  {line}")
PY
else
  echo "this quarry has no report verb; the cost comparison is skipped" >&2
fi
