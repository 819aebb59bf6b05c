#!/bin/sh
# cli_version.sh - `ferry --version` and `ferry --version --json` (the
# library's ferry_build_info): the text form has the version line, the
# backends and features lines and one table row per library; the JSON form
# parses, says the same as the text, has a run-time version for every
# library built in (CUDA aside: this machine may have no driver), and its
# run-time MPI is the one `ompi_info` (or `$MPIRUN --version`) reports.
# Under mpirun the report is printed once; extra arguments are refused.
#
# Bugs it pins: a report that names the MPI of the headers rather than the
# one loaded; a JSON form that does not parse or disagrees with the table;
# a library compiled in whose run-time version is missing.
#
# Environment: as the scripts of tests/lib/common.sh (FERRY, RUN_MPI, MPIRUN).
# Exit 0 pass, 1 fail, 77 skip (no ferry program, no python3).

. "`dirname "$0"`/../lib/common.sh"
ferry_test_init cli_version
py=/usr/bin/python3
test -x "$py" || py=`command -v python3 2>/dev/null`
if test -z "$py"; then
  echo "SKIP: no python3 to parse the JSON form"
  exit 77
fi

# ---- text ------------------------------------------------------------------
"$FERRY" --version >"$tmp/text" 2>"$tmp/text.err" </dev/null || {
  echo "FAIL: ferry --version exited $?"; cat "$tmp/text" "$tmp/text.err"; exit 1; }
for re in '^ferry [0-9][0-9.]* (libferry [0-9][0-9.]*)$' '^backends: ' \
          '^features: mpiio' '^library  *built against  *found at run time$' \
          '^MPI  *[^ ]' '^jansson  *[0-9]' '^CUDA runtime ' '^NCCL '; do
  if grep -- "$re" "$tmp/text" >/dev/null; then
    echo "ok: ferry --version has a line matching '$re'"
  else
    echo "FAIL: ferry --version has no line matching '$re'"
    fail=1
  fi
done

# ---- JSON ------------------------------------------------------------------
"$FERRY" --version --json >"$tmp/json" 2>"$tmp/json.err" </dev/null || {
  echo "FAIL: ferry --version --json exited $?"; cat "$tmp/json" "$tmp/json.err"; exit 1; }

# The MPI the system reports, to compare with the run-time string.
mpi_version=`ompi_info --parsable 2>/dev/null | sed -n 's/^ompi:version:full://p' | head -n 1`
if test -z "$mpi_version"; then
  mpi_version=`${MPIRUN:-mpirun} --version 2>/dev/null |
    sed -n 's/.*[^0-9.]\([0-9][0-9]*\.[0-9][0-9]*\(\.[0-9][0-9]*\)*\).*/\1/p' | head -n 1`
fi

"$py" - "$tmp/json" "$tmp/text" "$mpi_version" <<'PY'
import json, re, sys
path, text_path, mpi_version = sys.argv[1:4]
fail = 0
def check(ok, what):
    global fail
    print(("ok: " if ok else "FAIL: ") + what)
    fail |= not ok
try:
    doc = json.load(open(path))
except ValueError as e:
    print("FAIL: ferry --version --json does not parse: %s" % e)
    print(open(path).read())
    sys.exit(1)
text = open(text_path).read().splitlines()
lib = doc.get("libferry", {})
check(doc.get("tool") == lib.get("version") and re.match(r"^\d+\.\d+\.\d+$", lib.get("version", "")),
      "tool and libferry versions: %r, %r" % (doc.get("tool"), lib.get("version")))
check(text[0] == "ferry %s (libferry %s)" % (doc.get("tool"), lib.get("version")),
      "the text's first line names the same versions: %r" % text[0])
check("backends: " + " ".join(lib.get("backends", [])) in text,
      "the same backends in both forms: %r" % lib.get("backends"))
check("features: " + " ".join(lib.get("features", [])) in text,
      "the same features in both forms: %r" % lib.get("features"))
libs = lib.get("libraries", {})
keys = ["mpi", "hdf5", "netcdf", "jansson", "blosc", "zstd", "lz4", "zlib",
        "cuda_runtime", "cuda_driver", "nccl"]
check(list(libs) == keys, "libraries: %s" % " ".join(libs))
rows = {}
for line in text:
    for k, v in libs.items():
        if line.startswith(v.get("name", "?") + "  "):
            rows[k] = line
for k, v in libs.items():
    row = rows.get(k, "")
    built = v.get("built")
    check(row != "" and (built or "not built") in row,
          "%s: the text row %r shows built %r" % (k, row, built))
    if built is not None and not k.startswith("cuda") and k != "nccl":
        check(v.get("found") is not None,
              "%s: built against %s, found at run time %r" % (k, built, v.get("found")))
for k in ("hdf5", "zstd", "lz4", "zlib", "jansson", "blosc"):
    v = libs.get(k, {})
    if v.get("built") and v.get("found"):
        # Same major.minor: the run-time library is ABI-compatible.
        b, f = v["built"].split("."), v["found"].split(".")
        check(b[:2] == f[:2], "%s: built %s, found %s: same major.minor" % (k, v["built"], v["found"]))
mpi = libs.get("mpi", {})
found = mpi.get("found") or ""
if mpi_version:
    check(re.search(r"(^|[^0-9.])v?%s([^0-9]|$)" % re.escape(mpi_version), found) is not None,
          "run-time MPI %r is the MPI installed here (%s)" % (found.split("\n")[0], mpi_version))
else:
    print("SKIP part: neither ompi_info nor $MPIRUN --version gave an MPI version to compare with")
if "Open MPI" in (mpi.get("built") or ""):
    check(mpi["built"].split()[2] == mpi_version or not mpi_version,
          "Open MPI built against %s, installed %s" % (mpi["built"], mpi_version))
sys.exit(1 if fail else 0)
PY
test $? = 0 || fail=1

# ---- under mpirun, extra arguments -------------------------------------------
$RUN_MPI 2 "$FERRY" --version >"$tmp/np2" 2>&1 </dev/null
st=$?
n=`grep -c '^backends: ' "$tmp/np2"`
if test $st = 0 && test "$n" = 1; then
  echo "ok: ferry --version on 2 ranks prints the report once"
else
  echo "FAIL: ferry --version on 2 ranks: status $st, $n backends lines"
  cat "$tmp/np2"
  fail=1
fi
"$FERRY" --version --jsn >"$tmp/bad" 2>&1 </dev/null
st=$?
if test $st = 2 && grep -e '--version takes only --json' "$tmp/bad" >/dev/null; then
  echo "ok: ferry --version --jsn exits 2 and says why"
else
  echo "FAIL: ferry --version --jsn: status $st"
  cat "$tmp/bad"
  fail=1
fi
exit $fail
