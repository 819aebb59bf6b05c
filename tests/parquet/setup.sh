#!/bin/sh
# setup.sh - install the Parquet writers that tests/parquet/parquet.sh writes
# its fixtures with (nodejs-polars and its Linux binary, @duckdb/node-api,
# hyparquet-writer, hyparquet, parquet-wasm, apache-arrow; package.json)
# into tests/parquet/node_modules, ignored by git.  "./bootstrap deps" runs
# it; without node and npm it says so and exits 0 (the test then skips).
cd "`dirname "$0"`" || exit 1
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  echo "tests/parquet/setup.sh: no node/npm (Debian: apt-get install nodejs npm): the parquet test will be skipped"
  exit 0
fi
ok=yes
for p in nodejs-polars nodejs-polars-linux-x64-gnu @duckdb/node-api hyparquet-writer hyparquet parquet-wasm apache-arrow lz4js @bokuweb/zstd-wasm; do
  test -d "node_modules/$p" || ok=no
done
if test $ok = yes; then
  echo "tests/parquet/setup.sh: the Parquet writers are installed"
  exit 0
fi
echo "tests/parquet/setup.sh: npm install (Parquet writers for the tests) into `pwd`/node_modules"
npm install --no-audit --no-fund --loglevel=error ||
  { echo "tests/parquet/setup.sh: npm install failed: the parquet test will be skipped"; exit 0; }
