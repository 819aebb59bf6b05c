#!/bin/sh
# docs-paths.sh - every path, link, anchor and ferry command the docs name
# exists (run by make check; issue 24: docs a newcomer can follow).
#
# Scans README.md, tests/README.md and docs/**/*.md for
#   - repository paths (src/ tests/ docs/ python/ slurm/ examples/ include/
#     m4/ cmake/) in code spans, code blocks and prose: each must exist in
#     the source tree, as a file, a directory, the source of a program the
#     build makes (PATH.c), or, for a glob such as tests/zarr/*.sh, match
#     something;
#   - relative links [text](file#anchor), resolved from the doc's folder:
#     the file must exist and the anchor match a heading of it (GitHub's
#     slug of the heading text, or an explicit {#id});
#   - ferry commands in shell code blocks and code spans (`ferry bench ...`,
#     `mpirun -np 2 build/ferry dump ...`): the subcommand must be one that
#     `$FERRY --help` lists and each --option one that `$FERRY CMD --help`
#     prints.
# Each failure is printed with the doc's file and line; exit 1 on any.
# Without $FERRY (or build/ferry) the commands are not checked (noted);
# without a Python 3 the test skips (77).
top=${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}
ferry=${FERRY:-}
if [ -z "$ferry" ] && [ -x "$top/build/ferry" ]; then ferry=$top/build/ferry; fi
py=""
for p in "${FERRY_PYTHON:-}" python3 /usr/bin/python3; do
  if [ -n "$p" ] && command -v "$p" >/dev/null 2>&1 &&
    "$p" -c 'import sys; sys.exit(sys.version_info < (3, 6))' 2>/dev/null; then
    py=$p
    break
  fi
done
[ -n "$py" ] || { echo "SKIP: no Python 3 to scan the docs with"; exit 77; }
# Open MPI refuses to start as root without these (the help runs are
# singletons).
OMPI_ALLOW_RUN_AS_ROOT=1
OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_ALLOW_RUN_AS_ROOT OMPI_ALLOW_RUN_AS_ROOT_CONFIRM
exec "$py" - "$top" "$ferry" <<'EOF'
import glob, os, re, subprocess, sys

top, ferry = sys.argv[1], sys.argv[2]
PREFIXES = "src|tests|docs|python|slurm|examples|include|m4|cmake"
# Paths the docs name that only exist once made: by npm (tests/parquet/setup.sh,
# ./bootstrap deps), by make check (tests/tmp).
GENERATED = ("tests/parquet/node_modules", "tests/node", "tests/tmp")
PATH_RE = re.compile(r"(?<![\w./$~-])((?:\.\./)*(?:%s)/[\w.*?\[\]{},/+-]*)" % PREFIXES)
LINK_RE = re.compile(r"!?\[(?:[^\]\[]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
SPAN_RE = re.compile(r"(`+)((?:[^`\n]|\n(?!\s*\n))+?)\1")
SHELL_LANGS = ("", "sh", "bash", "shell", "console")
failures = []
# A release tarball (make distcheck) ships the docs but not every file of
# the repository they name: there a missing path is a note, not a failure.
IN_GIT = os.path.exists(os.path.join(top, ".git"))
notes = []
counts = {"paths": 0, "links": 0, "anchors": 0, "commands": 0}


def fail(doc, line, msg):
    failures.append("FAIL: %s:%d: %s" % (doc, line, msg))


def missing(doc, line, msg):
    if IN_GIT:
        fail(doc, line, msg)
    else:
        notes.append("NOTE: %s:%d: %s (a tarball need not ship it)" % (doc, line, msg))


def docs():
    out = ["README.md", "tests/README.md"]
    for dirpath, dirnames, filenames in os.walk(os.path.join(top, "docs")):
        dirnames[:] = sorted(d for d in dirnames if d != "node_modules")
        for f in sorted(filenames):
            if f.endswith(".md"):
                out.append(os.path.relpath(os.path.join(dirpath, f), top))
    return [d for d in out if os.path.isfile(os.path.join(top, d))]


def blocks(text):
    """Yield (lineno, line, lang): lang None outside fences, the fence's
    info word inside (without the fence lines themselves)."""
    fence = None
    lang = None
    for n, line in enumerate(text.split("\n"), 1):
        m = re.match(r"\s*(`{3,}|~{3,})\s*([\w+-]*)", line)
        if fence is None and m:
            fence, lang = m.group(1), m.group(2).lower()
            continue
        if fence is not None and line.strip().startswith(fence) and \
                line.strip().strip(fence[0]) == "":
            fence = lang = None
            continue
        yield n, line, lang if fence is not None else None


def slug(text):
    """GitHub's anchor for a heading's text."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    text = re.sub(r"<[^>]+>", "", text)
    text = text.strip().lower()
    text = "".join(c for c in text if c.isalnum() or c in " -_")
    return text.replace(" ", "-")


anchor_cache = {}


def anchors(path):
    if path in anchor_cache:
        return anchor_cache[path]
    found, seen = set(), {}
    with open(path, encoding="utf-8") as f:
        text = f.read()
    for _, line, lang in blocks(text):
        if lang is not None:
            continue
        for m in re.finditer(r"<a\s+(?:id|name)=\"?([\w-]+)", line):
            found.add(m.group(1))
        m = re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line)
        if not m:
            continue
        head = m.group(1)
        for e in re.finditer(r"\{#([\w-]+)\}", head):
            found.add(e.group(1))
        s = slug(re.sub(r"\s*\{#[\w-]+\}", "", head))
        n = seen.get(s, 0)
        seen[s] = n + 1
        found.add(s if n == 0 else "%s-%d" % (s, n))
    anchor_cache[path] = found
    return found


def made(full):
    """full is something the build makes: a program from its one source
    (tests/bench/plan_sim), a file from its template (slurm/ferry.lua.in),
    an LD_PRELOAD shim (tests/gpu/libfakecuda.so from fakecuda.c), libtool's
    .libs folder."""
    d, b = os.path.split(full)
    lib = re.match(r"lib(\w+)\.so$", b)
    return (os.path.exists(full + ".c") or os.path.exists(full + ".in")
            or (lib is not None and os.path.exists(os.path.join(d, lib.group(1) + ".c")))
            or b == ".libs")


def path_exists(p, docdir):
    """p names a path from the top of the tree, or from the doc's folder
    (tests/README.md's table names python/*.sh for tests/python/*.sh)."""
    p = p.rstrip("/")
    if p.startswith(GENERATED):
        return True
    for full in (os.path.join(top, p), os.path.join(top, docdir, p)):
        if re.search(r"[*?\[{]", p):
            pats = [full]
            m = re.search(r"\{([^{}]*)\}", full)
            if m:
                pats = [full[:m.start()] + alt + full[m.end():]
                        for alt in m.group(1).split(",")]
            if any(glob.glob(q, recursive=True) for q in pats):
                return True
        elif os.path.exists(full) or made(full):
            return True
    return False


def check_paths(doc, n, text):
    for m in PATH_RE.finditer(text):
        p = m.group(1).rstrip(".,:;)")
        while p.startswith("../"):
            p = p[3:]
        # Placeholders (tests/SUBJECT/test_NAME.c, tests/<subject>/) name a pattern.
        if re.search(r"[A-Z]{3,}|<", p) and not os.path.exists(os.path.join(top, p)):
            continue
        counts["paths"] += 1
        if not path_exists(p, os.path.dirname(doc)):
            missing(doc, n, "path '%s' does not exist" % p)


def check_link(doc, n, target):
    if re.match(r"[a-z][a-z0-9+.-]*:", target) or target.startswith("//"):
        return  # http:, https:, mailto:
    counts["links"] += 1
    base, _, anchor = target.partition("#")
    here = os.path.dirname(os.path.join(top, doc))
    dest = os.path.normpath(os.path.join(here, base)) if base else os.path.join(top, doc)
    if not os.path.exists(dest):
        missing(doc, n, "link '%s': %s does not exist" % (target, os.path.relpath(dest, top)))
        return
    if anchor and dest.endswith(".md"):
        counts["anchors"] += 1
        if anchor not in anchors(dest):
            fail(doc, n, "link '%s': no heading with anchor #%s in %s"
                 % (target, anchor, os.path.relpath(dest, top)))


# ---- ferry commands ----------------------------------------------------
def help_text(args):
    try:
        r = subprocess.run([ferry] + args, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, timeout=60,
                           universal_newlines=True)
    except (OSError, subprocess.SubprocessError) as e:
        return None, str(e)
    return (r.stdout if r.returncode == 0 else None), r.stdout


def known_commands():
    top_help, out = help_text(["--help"])
    if top_help is None:
        print("FAIL: %s --help: %s" % (ferry, out.strip()))
        sys.exit(1)
    cmds, on = {}, False
    for line in top_help.split("\n"):
        if line.startswith("Commands:"):
            on = True
        elif on and re.match(r"  [a-z]", line):
            cmds[line.split()[0]] = None
        elif on and not line.strip():
            on = False
    procs = {c: subprocess.Popen([ferry, c, "--help"], stdout=subprocess.PIPE,
                                 stderr=subprocess.STDOUT, universal_newlines=True)
             for c in cmds if c != "help"}
    for c, pr in procs.items():
        out, _ = pr.communicate(timeout=60)
        if pr.returncode != 0:
            print("FAIL: %s %s --help exited %d:\n%s" % (ferry, c, pr.returncode, out))
            sys.exit(1)
        cmds[c] = set(re.findall(r"^\s+(?:-\w, )?(--[\w-]+)", out, re.M))
    cmds["help"] = set()
    return cmds


COMMANDS = known_commands() if ferry else None
VERBOSE = os.environ.get("DOCS_PATHS_VERBOSE", "") not in ("", "0")
GLOBAL_OPTS = {"--help", "--version", "--json"}


def is_ferry(tok):
    tok = tok.strip("\"'")
    return tok in ("$FERRY", "${FERRY}") or tok == "ferry" or tok.endswith("/ferry")


# Commands that run the command after them (their own options between).
LAUNCHERS = ("mpirun", "mpiexec", "srun", "nice", "timeout", "time", "env",
             "exec", "$RUN_MPI", "valgrind", "xargs")


def ferry_at(toks):
    """Index of the ferry program in one simple command, or None: the first
    word after variable assignments, or any word after a launcher
    (mpirun -np 2 build/ferry ...); not an argument (OLD/ferry NEW/ferry)."""
    i = 0
    while i < len(toks) and re.match(r"[A-Za-z_]\w*=", toks[i]):
        i += 1
    if i < len(toks) and is_ferry(toks[i]):
        return i
    if i < len(toks) and os.path.basename(toks[i].strip("\"'")) in LAUNCHERS:
        for j in range(i + 1, len(toks)):
            if is_ferry(toks[j]):
                return j
    return None


def check_command(doc, n, line):
    """line: one shell command line (continuations joined)."""
    line = re.sub(r"(^|\s)#.*", "", line)  # a comment
    line = re.sub(r"^\s*\$\s+", "", line)  # a prompt
    for seg in re.split(r"\|\|?|;|&&?|\$\(|\)|`|\bdo\b|\bthen\b", line):
        toks = [t.strip("\"'") for t in seg.split()]
        i = ferry_at(toks)
        if i is not None and i + 1 < len(toks):
            check_args(doc, n, toks[i + 1], toks[i + 2:])


def check_args(doc, n, sub, args):
    """ferry SUB ARGS...: SUB a command of ferry --help, each --option one
    of ferry SUB --help."""
    if sub.startswith("-"):
        counts["commands"] += 1
        for o in [sub] + args:
            name = o.split("=")[0]
            if name.startswith("--") and name not in GLOBAL_OPTS:
                fail(doc, n, "'ferry %s': ferry has no option %s" % (sub, name))
        return
    if not re.match(r"[a-z][a-z-]*$", sub):
        return  # a placeholder: ferry COMMAND --help
    counts["commands"] += 1
    if VERBOSE:
        print("%s:%d: ferry %s %s" % (doc, n, sub, " ".join(args)))
    if sub not in COMMANDS:
        fail(doc, n, "'ferry %s': no such command (ferry --help lists %s)"
             % (sub, ", ".join(sorted(COMMANDS))))
        return
    if sub == "help":
        if args and args[0] not in COMMANDS and args[0] != "options":
            fail(doc, n, "'ferry help %s': no such command" % args[0])
        return
    for o in args:
        name = o.split("=")[0]
        if re.match(r"--[\w-]+$", name) and name not in COMMANDS[sub]:
            fail(doc, n, "'ferry %s %s': ferry %s --help lists no such option"
                 % (sub, name, sub))


def command_lines(text):
    """Yield (lineno, logical line) of the shell code blocks, joining
    lines continued with a backslash."""
    pending, start = "", 0
    for n, line, lang in blocks(text):
        if lang is None or lang not in SHELL_LANGS:
            pending = ""
            continue
        if not pending:
            start = n
        if line.rstrip().endswith("\\"):
            pending += line.rstrip()[:-1] + " "
            continue
        yield start, pending + line
        pending = ""


for doc in docs():
    with open(os.path.join(top, doc), encoding="utf-8") as f:
        text = f.read()
    for n, line, lang in blocks(text):
        if lang is not None:
            check_paths(doc, n, line)
            continue
        for m in LINK_RE.finditer(line):
            check_link(doc, n, m.group(1))
        for m in re.finditer(r"^\s*\[[^\]]+\]:\s+(\S+)", line):
            check_link(doc, n, m.group(1))
        check_paths(doc, n, LINK_RE.sub("", line))
    if COMMANDS is not None:
        # Code spans of the prose, which may run over a line break.
        lines = [""] * (text.count("\n") + 2)  # lines[n]: line n, 1-based
        for n, line, lang in blocks(text):
            lines[n] = line if lang is None else ""
        prose = "\n".join(lines)
        for m in SPAN_RE.finditer(prose):
            n = prose.count("\n", 0, m.start())
            check_command(doc, n, m.group(2).replace("\n", " "))
        for n, line in command_lines(text):
            check_command(doc, n, line)

for f in notes + failures:
    print(f)
if COMMANDS is None:
    print("NOTE: no ferry program ($FERRY or build/ferry): commands not checked")
print("%s: %d docs; %d paths, %d links, %d anchors, %d ferry commands checked%s"
      % ("FAIL" if failures else "PASS", len(docs()), counts["paths"], counts["links"],
         counts["anchors"], counts["commands"],
         "; %d failures" % len(failures) if failures else ""))
sys.exit(1 if failures else 0)
EOF
