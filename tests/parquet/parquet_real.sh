#!/bin/sh
# parquet_real.sh - issue 30's Parquet files from other projects' test
# suites (tests/corpus/files: origins in tests/corpus/SOURCES.md), each with
# the same outcome on 1 and 2 ranks, every rank exiting with it:
#
#  - duckdb/bug13053-2.parquet (columns column, column_1, column): refused
#    on rank 0 before the manifest is broadcast, naming both variables (it
#    was served on 1 rank, and on 2 refused by rank 1 alone: "manifest
#    buffer corrupt at byte 436: variable named twice"); vars=column_1
#    serves the other column, vars=column is ambiguous;
#  - parquet-testing/data_concatenated_gzip_members.parquet (a GZIP page of
#    several gzip members): its 513 values 1..513, every index once (it was
#    refused: "gzip data does not decompress to the page's stated size");
#  - duckdb/test_sql_copy_parquet_broken_broken_structure.parquet (DuckDB's
#    broken_structure.parquet: row groups of 2^31 - 1 rows on the
#    same 49 bytes, running into the footer): refused at open naming the
#    column chunk's offset and total_compressed_size (it ran out of memory
#    asking for 96 GiB).
. "$top_srcdir/tests/lib/common.sh"
ferry_test_init parquet_real
files="$top_srcdir/tests/corpus/files"
dup=$files/duckdb/bug13053-2.parquet
gz=$files/parquet-testing/data_concatenated_gzip_members.parquet
broken=$files/duckdb/test_sql_copy_parquet_broken_broken_structure.parquet
for f in "$dup" "$gz" "$broken"; do
  test -f "$f" || { echo "FAIL: $f is missing"; exit 1; }
done

# Every rank writes its exit status and output apart (a rank that exits 1
# would otherwise have the launcher stop the others).
cat >"$tmp/rank.sh" <<'EOS'
d=$1
shift
r=${OMPI_COMM_WORLD_RANK:-${PMIX_RANK:-${PMI_RANK:-0}}}
"$@" >"$d/out.$r" 2>"$d/err.$r"
echo $? >"$d/status.$r"
exit 0
EOS

# expect NP STATUS TEXT ferry ARGS...: every rank exits STATUS; with
# STATUS 1, rank 0 prints one 'ferry:' line holding TEXT and the others
# print nothing.
expect() {
  np=$1 want=$2 text=$3
  shift 3
  r=$tmp/r
  rm -rf "$r" && mkdir -p "$r" || exit 1
  $RUN_MPI "$np" sh "$tmp/rank.sh" "$r" "$@" >"$tmp/launcher.out" 2>&1 || {
    echo "FAIL: np=$np $*: the launcher failed"; cat "$tmp/launcher.out"
    fail=1; return; }
  i=0
  while test $i -lt "$np"; do
    s=`cat "$r/status.$i" 2>/dev/null`
    if test "$s" != "$want"; then
      echo "FAIL: np=$np $*: rank $i exited '$s', not $want"
      cat "$r/err.$i"; fail=1
    elif test "$want" = 1 && test $i -gt 0 && test -s "$r/err.$i"; then
      echo "FAIL: np=$np $*: rank $i printed: `head -3 "$r/err.$i"`"; fail=1
    fi
    i=`expr $i + 1`
  done
  if test "$want" = 1; then
    n=`grep -c '^ferry:' "$r/err.0"`
    if test "$n" != 1 || ! grep -F -e "$text" "$r/err.0" >/dev/null; then
      echo "FAIL: np=$np $*: rank 0 said, not one line with '$text':"
      cat "$r/err.0"; fail=1
    fi
  fi
}

for np in 1 2; do
  expect $np 1 "variables 1 and 3 of 3 are both named 'column'" \
    "$FERRY" info "$dup"
  grep -F 'manifest buffer corrupt' "$tmp/r/err.0" && fail=1
  expect $np 1 "vars 'column': variables 1 and 3 of dataset" \
    "$FERRY" info "$dup" --vars column
  expect $np 0 "" "$FERRY" dump "$dup" --vars column_1 --var column_1 \
    --tail partial --shuffle none --batch-size 2
  got=`cat "$tmp"/r/out.* | awk '{print $3 ":" $4}' | sort | tr '\n' ' '`
  test "$got" = "0:4 1:5 2:6 " ||
    { echo "FAIL: np=$np column_1 of $dup: $got, not 0:4 1:5 2:6"; fail=1; }

  expect $np 0 "" "$FERRY" dump "$gz" --tail partial --batch-size 7
  cat "$tmp"/r/out.* | awk -v np=$np '
    { if ($4 != $3 + 1) bad++; if (seen[$3]++) twice++; n++ }
    END {
      if (n != 513 || bad || twice) {
        printf "FAIL: np=%d concatenated gzip members: %d rows, %d values not index+1, %d indices twice\n", np, n, bad, twice
        exit 1
      }
    }' || fail=1

  expect $np 1 "column b, row group 0: the column chunk at offset 25 of 49 bytes (total_compressed_size) lies outside the file's data" \
    "$FERRY" info "$broken"
done
test $fail = 0 && echo "PASS: parquet_real.sh"
exit $fail
