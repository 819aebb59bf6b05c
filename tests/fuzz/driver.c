/*
 * tests/fuzz/driver.c - the part every fuzz harness shares: how it finds
 * its corpus, and its main() when libFuzzer is not linked in.
 *
 * Why: the harnesses must run in every CI build (gcc, the ASan build of
 * ./bootstrap check), not only where clang's libFuzzer exists, so that an
 * input that once crashed a parser (committed to tests/fuzz/corpus/NAME/)
 * stays a regression test everywhere.  Without libFuzzer (the usual
 * build), main() replays files: each argument, a file or a directory of
 * files, is read whole into a buffer of exactly its size and passed to
 * LLVMFuzzerTestOneInput once -- libFuzzer's own "run these inputs"
 * behaviour.  Arguments starting with '-' (libFuzzer flags) are ignored.
 * With no argument it replays its own corpus, $top_srcdir/tests/fuzz/
 * corpus/NAME for the program fuzz_NAME (make check exports top_srcdir),
 * and fails when that holds no file: a harness that runs nothing must not
 * pass.  Under ASan it turns leak detection on for itself (leaks_on).
 *
 * With configure --enable-fuzz (FERRY_LIBFUZZER), libFuzzer owns main();
 * LLVMFuzzerInitialize gives the same no-argument behaviour under make
 * check (top_srcdir set): the program's arguments become the corpus files,
 * which libFuzzer runs once each and exits.  Run by hand with arguments it
 * is an ordinary libFuzzer binary (tests/fuzz/README.md).
 */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif
#if !defined(_GNU_SOURCE) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L
#endif

#include "fuzz.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* No corpus file is larger than this (libFuzzer's inputs are far
 * smaller). */
#define FUZZ_FILE_MAX ((size_t)64 << 20)

/* The default corpus of program argv0 (fuzz_NAME, or libtool's
 * lt-fuzz_NAME): $top_srcdir/tests/fuzz/corpus/NAME; NULL without
 * top_srcdir.  malloc'd. */
static char *default_corpus(const char *argv0) {
  const char *top = getenv("top_srcdir");
  const char *base = strrchr(argv0, '/');
  base = base ? base + 1 : argv0;
  if (strncmp(base, "lt-", 3) == 0)
    base += 3;
  if (strncmp(base, "fuzz_", 5) == 0)
    base += 5;
  if (!top || !*top)
    return NULL;
  size_t n = strlen(top) + strlen(base) + 32;
  char *p = malloc(n);
  if (p)
    snprintf(p, n, "%s/tests/fuzz/corpus/%s", top, base);
  return p;
}

static int cmp_name(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The regular files of dir (sorted, full paths) appended to *list. */
static int list_dir(const char *dir, char ***list, size_t *n, size_t *cap) {
  DIR *d = opendir(dir);
  if (!d) {
    fprintf(stderr, "fuzz: cannot list %s: %s\n", dir, strerror(errno));
    return -1;
  }
  size_t first = *n;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    if (e->d_name[0] == '.')
      continue;
    size_t len = strlen(dir) + strlen(e->d_name) + 2;
    char *p = malloc(len);
    struct stat st;
    if (!p)
      break;
    snprintf(p, len, "%s/%s", dir, e->d_name);
    if (stat(p, &st) != 0 || !S_ISREG(st.st_mode)) {
      free(p);
      continue;
    }
    if (*n == *cap) {
      size_t ncap = *cap ? 2 * *cap : 64;
      char **nl = realloc(*list, ncap * sizeof *nl);
      if (!nl) {
        free(p);
        break;
      }
      *list = nl;
      *cap = ncap;
    }
    (*list)[(*n)++] = p;
  }
  closedir(d);
  qsort(*list + first, *n - first, sizeof **list, cmp_name);
  return 0;
}

/* The files named by path (a file, or a directory of files). */
static int expand(const char *path, char ***list, size_t *n, size_t *cap) {
  struct stat st;
  if (stat(path, &st) != 0) {
    fprintf(stderr, "fuzz: %s: %s\n", path, strerror(errno));
    return -1;
  }
  if (S_ISDIR(st.st_mode))
    return list_dir(path, list, n, cap);
  if (*n == *cap) {
    size_t ncap = *cap ? 2 * *cap : 64;
    char **nl = realloc(*list, ncap * sizeof *nl);
    if (!nl)
      return -1;
    *list = nl;
    *cap = ncap;
  }
  if (!((*list)[*n] = strdup(path)))
    return -1;
  (*n)++;
  return 0;
}

#ifdef FERRY_LIBFUZZER

int LLVMFuzzerInitialize(int *argc, char ***argv);

/* Under make check (no argument, top_srcdir set): run the corpus files
 * once each.  The new argv lives as long as the process. */
int LLVMFuzzerInitialize(int *argc, char ***argv) {
  if (*argc != 1 || !getenv("top_srcdir"))
    return 0;
  char *dir = default_corpus((*argv)[0]);
  char **list = NULL;
  size_t n = 0, cap = 0;
  if (!dir || expand(dir, &list, &n, &cap) < 0 || n == 0) {
    fprintf(stderr, "fuzz: %s: no corpus files in %s\n", (*argv)[0],
            dir ? dir : "(top_srcdir unset)");
    exit(99);
  }
  char **nv = calloc(n + 2, sizeof *nv);
  if (!nv)
    exit(99);
  nv[0] = (*argv)[0];
  for (size_t i = 0; i < n; i++)
    nv[i + 1] = list[i];
  fprintf(stderr, "fuzz: %s: replaying %zu inputs of %s\n", (*argv)[0], n, dir);
  *argc = (int)n + 1;
  *argv = nv;
  free(list);
  free(dir);
  return 0;
}

#else /* the replay driver */

#if defined(__SANITIZE_ADDRESS__)
#define FUZZ_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define FUZZ_ASAN 1
#endif
#endif

/* Under ASan, make check turns leak detection off (Open MPI keeps its
 * allocations until exit), but the harnesses never start MPI, so a leak is
 * a finding: the program runs itself again with detection on, and with
 * any allocation above 2 GiB an error (as libFuzzer's malloc limit, which
 * short.sh sets through -rss_limit_mb=2048).  Should the exec fail, it
 * goes on without. */
static void leaks_on(char **argv) {
#ifdef FUZZ_ASAN
  if (getenv("FERRY_FUZZ_LEAKS"))
    return;
  const char *old = getenv("ASAN_OPTIONS");
  size_t n = (old ? strlen(old) : 0) + 64;
  char *v = malloc(n);
  if (!v)
    return;
  snprintf(v, n, "%s%sdetect_leaks=1:max_allocation_size_mb=2048",
           old ? old : "", old && *old ? ":" : "");
  if (setenv("ASAN_OPTIONS", v, 1) == 0 &&
      setenv("FERRY_FUZZ_LEAKS", "1", 1) == 0)
    execv("/proc/self/exe", argv);
  free(v);
#else
  (void)argv;
#endif
}

/* Read path whole into a buffer of exactly its size; run it. */
static int run_file(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    fprintf(stderr, "fuzz: %s: %s\n", path, strerror(errno));
    return -1;
  }
  struct stat st;
  if (fstat(fileno(f), &st) != 0 || st.st_size < 0 ||
      (size_t)st.st_size > FUZZ_FILE_MAX) {
    fprintf(stderr, "fuzz: %s: unreadable or larger than %zu bytes\n", path,
            FUZZ_FILE_MAX);
    fclose(f);
    return -1;
  }
  size_t size = (size_t)st.st_size;
  uint8_t *buf = malloc(size ? size : 1);
  size_t got = buf ? fread(buf, 1, size, f) : 0;
  fclose(f);
  if (!buf || got != size) {
    fprintf(stderr, "fuzz: %s: read failed\n", path);
    free(buf);
    return -1;
  }
  /* An empty file is passed as (NULL, 0), as libFuzzer may. */
  LLVMFuzzerTestOneInput(size ? buf : NULL, size);
  free(buf);
  return 0;
}

int main(int argc, char **argv) {
  leaks_on(argv);
  char **list = NULL;
  size_t n = 0, cap = 0;
  int status = 0, named = 0;
  for (int i = 1; i < argc; i++) {
    if (argv[i][0] == '-')
      continue;
    named = 1;
    if (expand(argv[i], &list, &n, &cap) < 0)
      status = 99;
  }
  char *dir = NULL;
  if (!named) {
    dir = default_corpus(argv[0]);
    if (!dir) {
      fprintf(stderr,
              "usage: %s FILE|DIR... (or set top_srcdir to replay "
              "tests/fuzz/corpus/NAME)\n",
              argv[0]);
      return 2;
    }
    if (expand(dir, &list, &n, &cap) < 0)
      status = 99;
  }
  if (n == 0 && status == 0) {
    fprintf(stderr, "fuzz: %s: no input to replay\n", argv[0]);
    status = 99;
  }
  for (size_t i = 0; i < n; i++) {
    if (run_file(list[i]) < 0)
      status = 99;
    free(list[i]);
  }
  free(list);
  if (status == 0)
    printf("PASS: %s: replayed %zu inputs%s%s\n", argv[0], n, dir ? " of " : "",
           dir ? dir : "");
  free(dir);
  return status;
}

#endif
