#!/usr/bin/env bash
# quarry's reading of the editor agents (Cline's task folders and SDK sessions, Roo Code, Cursor's
# stores and agent transcripts, Aider, Crush) beside the peers that read the same files and run
# here offline: agentsview (PyPI), codeburn and tokscale (npm). Per agent: sessions, user and
# assistant messages, usage records, tokens and cost on each side, with the differences. Not part of `cargo test`; it needs pip, npm and their registries the first
# time. docs/benchmarks.md ("Editor agents beside agentsview, codeburn and tokscale") explains
# every difference.
#
# Usage: bash benches/editor_agents.sh QUARRY_BIN
# Environment:
#   AGENTSVIEW_VERSION, CODEBURN_VERSION, TOKSCALE_VERSION, TOKSCALE_CLI_VERSION  the peers'
#                    versions (0.46.1, 0.9.15, 1.4.3, 4.17.0; benches/tools.sh installs them under
#                    ${XDG_CACHE_HOME:-~/.cache}/quarry-bench/<name>-<version>, kept between runs)
#   CODEBURN_CLOCK   the date codeburn's second Cursor run takes for today (default 2026-05-01:
#                    codeburn reads Cursor's store only back to six months before today)
#   KEEP=1           keep the temporary folder (the two homes the tools read, every output:
#                    editors/ and cline-sdk/)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
[ $# -ge 1 ] || { echo "usage: bash benches/editor_agents.sh QUARRY_BIN" >&2; exit 2; }
quarry=$(realpath -m "$1")
fixtures=$root/tests/fixtures/agents
clock=${CODEBURN_CLOCK:-2026-05-01}
[ -x "$quarry" ] || { echo "no quarry binary at $quarry" >&2; exit 2; }
for f in cline cline-sdk roo cursor aider crush; do
  [ -d "$fixtures/$f" ] || { echo "no fixtures at $fixtures/$f" >&2; exit 2; }
done

# 1. The peers, each in a folder of its own (benches/tools.sh): agentsview's Go binary from its
#    PyPI wheel; codeburn with the Node 22 it needs; tokscale 1.4.3 (TypeScript, run by Bun) and
#    tokscale's later Rust CLI, all from the npm registry.
agentsview=$("$here/tools.sh" agentsview)
codeburn=$("$here/tools.sh" codeburn)
tokscale=$("$here/tools.sh" tokscale)
tokscale_cli=$("$here/tools.sh" tokscale-cli)

tmp=$(mktemp -d "${TMPDIR:-/tmp}/quarry-editor-agents.XXXXXX")
if [ "${KEEP:-0}" = 1 ]; then
  echo "keeping $tmp" >&2
else
  trap 'rm -rf "$tmp"' EXIT
fi

# 2. Each tool runs with the home given and nothing else of the caller's environment, no network.
in_home() { # HOME COMMAND...
  local home=$1
  shift
  env -i PATH="$PATH" HOME="$home" XDG_CONFIG_HOME="$home/.config" \
    XDG_DATA_HOME="$home/.local/share" XDG_CACHE_HOME="$home/.cache" TZ=UTC LANG=C.UTF-8 \
    NO_COLOR=1 DO_NOT_TRACK=1 "$@"
}
today=$(date -u +%F)
since=2024-01-01 # before the oldest fixture (Aider, 2024-08); tokscale refuses dates before 2001-09
scratch=$tmp/scratch-home # an empty home for the version queries
mkdir -p "$scratch"
{
  echo "quarry $("$quarry" --version | awk '{print $2}')"
  echo "agentsview $(in_home "$scratch" "$agentsview" version 2>/dev/null | awk 'NR == 1 {print $2}' | sed 's/^v//')"
  echo "codeburn $(in_home "$scratch" "$codeburn" --version)"
  echo "tokscale $(in_home "$scratch" "$tokscale" --version 2>/dev/null | tail -1)"
  echo "tokscale-cli $(in_home "$scratch" "$tokscale_cli" --version | awk '{print $2}')"
} > "$tmp/versions.txt"
echo "$clock" > "$tmp/codeburn-clock.txt"

# codeburn_report DIR HOME FILE ARGS...: one JSON report of codeburn's into DIR/FILE (an empty
# overview when it fails); ARGS may start with VAR=value settings. Its results cache lives in
# HOME/.cache/codeburn.
codeburn_report() {
  local dir=$1 home=$2 file=$3
  shift 3
  in_home "$home" "$@" > "$dir/$file" 2>> "$dir/codeburn.err" || echo '{"overview": null}' > "$dir/$file"
}

# run_home NAME CODEBURN_PROVIDER...: the fixtures of the home NAME laid out in $tmp/NAME/home
# (benches/editor_agents_compare.py layout), every tool run on it, the outputs in $tmp/NAME.
run_home() {
  local name=$1
  shift
  local dir=$tmp/$name
  local home=$dir/home
  mkdir -p "$home"
  python3 "$here/editor_agents_compare.py" layout "$name" "$fixtures" "$home"

  # quarry: the default locations of that home (no paths given), then usage per origin.
  in_home "$home" "$quarry" --archive "$dir/quarry.db" --format json ingest --no-progress \
    > "$dir/quarry-ingest.json"
  in_home "$home" "$quarry" --archive "$dir/quarry.db" --format json --tz UTC \
    "usage | group by session.origin, recorded_via, model | agg count, sum:input_tokens, sum:output_tokens, sum:cache_read_tokens, sum:cache_write_tokens, sum:cost_usd" \
    > "$dir/quarry-usage.json" 2> "$dir/quarry-usage.err"

  # agentsview: a one-shot sync into ~/.agentsview/sessions.db, no daemon. Aider's histories
  # are opt-in there (AIDER_DIR: the folder it walks, four deep).
  in_home "$home" AGENTSVIEW_NO_DAEMON=1 AGENTSVIEW_DISABLE_UPDATE_CHECK=1 \
    AGENTSVIEW_TELEMETRY_ENABLED=0 AIDER_DIR="$home" "$agentsview" sync > "$dir/agentsview.out" 2>&1 \
    || echo "agentsview sync failed ($?) in $name: see $name/agentsview.out" >&2

  # codeburn: a report per provider over all time (--from/--to: its `all` is six months).
  local provider
  for provider in "$@"; do
    codeburn_report "$dir" "$home" "codeburn-$provider.json" "$codeburn" report --format json \
      --provider "$provider" --from "$since" --to "$today"
  done

  # tokscale 4.17.0: per client, session and model (its price fetches fail offline; it goes on
  # with the prices it ships).
  in_home "$home" "$tokscale_cli" clients --json > "$dir/tokscale-cli-clients.json" 2>/dev/null || true
  in_home "$home" "$tokscale_cli" models --json --no-spinner --since "$since" --until "$today" \
    --group-by client,session,model > "$dir/tokscale-cli.json" 2> "$dir/tokscale-cli.err" \
    || echo "tokscale $("$tokscale_cli" --version) failed in $name: see $name/tokscale-cli.err" >&2
}

# 3. The editors' home: Cline's and Roo Code's task folders in VS Code's globalStorage, Cursor's
#    user folder (global and workspace stores) and its agent transcripts (~/.cursor/projects),
#    the Aider histories in three repositories under ~/src, the Crush projects under ~/src with
#    ~/.local/share/crush/projects.json listing them as Crush writes it.
run_home editors cline roo-code cursor cursor-agent crush
editors=$tmp/editors
#    Crush's list as a bare array, the shape codeburn's reader takes (it finds no project in the
#    {"projects": [...]} Crush writes).
mkdir -p "$editors/crush-array"
python3 -c 'import json, sys; json.dump(json.load(open(sys.argv[1]))["projects"], open(sys.argv[2], "w"))' \
  "$editors/home/.local/share/crush/projects.json" "$editors/crush-array/projects.json"
codeburn_report "$editors" "$editors/home" codeburn-crush-array.json \
  CRUSH_GLOBAL_DATA="$editors/crush-array" "$codeburn" report --format json --provider crush \
  --from "$since" --to "$today"
#    Cursor again with codeburn's clock moved to $clock (a preload that shifts Date), its cache
#    emptied first: what it reads of the store when the store is recent enough for it.
cat > "$tmp/clock.cjs" <<'JS'
// Moves this process's clock (Date.now() and `new Date()`) to QUARRY_BENCH_NOW; it keeps running.
const target = Date.parse(process.env.QUARRY_BENCH_NOW);
if (!Number.isNaN(target)) {
  const RealDate = Date;
  const shift = target - RealDate.now();
  globalThis.Date = class extends RealDate {
    constructor(...args) {
      if (args.length === 0) super(RealDate.now() + shift);
      else super(...args);
    }
    static now() { return RealDate.now() + shift; }
  };
}
JS
rm -rf "$editors/home/.cache/codeburn"
codeburn_report "$editors" "$editors/home" codeburn-cursor-clock.json \
  QUARRY_BENCH_NOW="${clock}T00:00:00Z" NODE_OPTIONS="--require $tmp/clock.cjs" "$codeburn" report \
  --format json --provider cursor --from "$since" --to "$today"
#    tokscale 1.4.3: the clients it scans; its report needs LiteLLM's prices from the network.
in_home "$editors/home" "$tokscale" sources --json > "$editors/tokscale-sources.json" \
  2> "$editors/tokscale-sources.err" || true
rc=0
in_home "$editors/home" "$tokscale" models --json --no-spinner --since "$since" --until "$today" \
  > "$editors/tokscale-models.json" 2> "$editors/tokscale-models.err" || rc=$?
echo "$rc" > "$editors/tokscale-models.rc"

# 4. A second home with Cline's SDK sessions only (~/.cline/data/sessions): the peers file them
#    under the same name as Cline's task folders (agentsview's, codeburn's and tokscale's
#    `cline`), so they are read apart.
run_home cline-sdk cline

# 5. The tables.
python3 "$here/editor_agents_compare.py" compare "$tmp"
