#!/bin/sh
# roff_trim.sh - the pages of a saved manifest's mapped offsets a loader
# looked up leave the rank's resident set (core/roffmap.c; decision 0069):
# a `ferry gen` Megatron corpus of 10^6 documents (8 MB of offsets in
# m.json.roff) served whole through its saved manifest, on 1 and 2 ranks,
# as ragged samples and as packed rows (pack=concat, whose reader looks up
# the corpus's offsets under the view); after the epoch the mapping holds
# less than 3 MiB resident (tests/python/roff_trim_check.py reads
# /proc/self/smaps). Before, packed rows kept every page they touched: the
# whole file by the end of an epoch. Skips (77) without /proc/self/smaps.
. "$top_srcdir/tests/python/common.sh"
FERRY=${FERRY:-$top_builddir/ferry}
test -r /proc/self/smaps || { echo "SKIP: no /proc/self/smaps"; exit 77; }
megatron_saved 1000000 2
status=0
for np in 1 2; do
  $RUN_MPI $np "$PY" "$pydir/roff_trim_check.py" "$tmp/c" "$tmp/m.json" \
    >"$tmp/out.$np" 2>&1 || {
    echo "FAIL: roff_trim_check.py on $np ranks"
    status=1
  }
  cat "$tmp/out.$np"
done
exit $status
