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
#
# Environment: QUARRY_BENCH_TOOLS (default ${XDG_CACHE_HOME:-~/.cache}/quarry-bench),
# CCUSAGE_VERSION (default 20.0.24; 20.0.26's native binary is missing from the registry),
# DUCKDB_VERSION (default 1.5.6).
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
  *)
    echo "usage: benches/tools.sh ccusage|duckdb|pyarrow|moto|mcp|dataframes|web" >&2
    exit 2
    ;;
esac
