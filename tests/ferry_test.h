/*
 * ferry_test.h - the checks every test program of ferry uses (tests/unit,
 * tests/SUBJECT, tests/gpu), so that a failure reads the same everywhere and
 * a test ends with one summary line and the exit status the harness wants.
 *
 *   #include "ferry_test.h"       (AM_CPPFLAGS has -I$(top_srcdir)/tests)
 *
 *   CHECK(cond, fmt, ...)    count a check; when cond is false count a
 *                            failure and print to stderr
 *                            "FAIL [rank R ]FILE:LINE: cond: message"
 *   REQUIRE(cond, fmt, ...)  the same, then `return 1` from the calling
 *                            function (for checks whose failure makes the
 *                            rest of the function meaningless)
 *   REQUIRE_V(cond, fmt, ...) the same in a function without a result
 *   ft_set_rank(r)           MPI programs: put the rank into failure lines
 *   ft_summary(name)         print "PASS: NAME: N checks, F failed" (or
 *                            FAIL: ...) on stdout and return the exit status
 *                            (0 pass, 1 fail)
 *   ft_mpi_summary(name, comm)  the same, counts summed over the ranks of
 *                            comm (collective), printed by rank 0; every
 *                            rank gets the same status
 *   ft_checks, ft_failures   the counters, for a test that needs them
 *
 * Exit statuses the harness understands (tests/README.md): 0 pass, 77 skip
 * (FT_SKIP, print why first), 99 hard error (the test itself is broken).
 *
 * Everything is static: the header is included once, by the one .c file of
 * a test program.  It uses MPI only when FERRY_TEST_MPI is defined before
 * the include or <mpi.h> was included already.
 */
#ifndef FERRY_TEST_H
#define FERRY_TEST_H

#include <stdio.h>

#if defined(FERRY_TEST_MPI) || defined(MPI_VERSION)
#include <mpi.h>
#define FT_HAVE_MPI 1
#endif

enum { FT_PASS = 0, FT_FAIL = 1, FT_SKIP = 77, FT_HARD_ERROR = 99 };

static int ft_checks, ft_failures, ft_rank = -1;

static inline void ft_set_rank(int rank) { ft_rank = rank; }

/* Count a failure and print the start of its line; the caller's message
 * follows. */
static inline void ft_fail_at(const char *file, int line, const char *cond) {
  ft_failures++;
  if (ft_rank >= 0)
    fprintf(stderr, "FAIL rank %d %s:%d: %s: ", ft_rank, file, line, cond);
  else
    fprintf(stderr, "FAIL %s:%d: %s: ", file, line, cond);
}

/* A check: counted, and on failure reported at the caller's line with the
 * message, then `on_fail` (nothing, or a return). */
#define FT_CHECK_OR_(cond, on_fail, ...)                                       \
  do {                                                                         \
    ft_checks++;                                                               \
    if (!(cond)) {                                                             \
      ft_fail_at(__FILE__, __LINE__, #cond);                                   \
      fprintf(stderr, __VA_ARGS__);                                            \
      fputc('\n', stderr);                                                     \
      on_fail;                                                                 \
    }                                                                          \
  } while (0)

#define CHECK(cond, ...) FT_CHECK_OR_(cond, (void)0, __VA_ARGS__)
#define REQUIRE(cond, ...) FT_CHECK_OR_(cond, return 1, __VA_ARGS__)
/* REQUIRE in a function without a result. */
#define REQUIRE_V(cond, ...) FT_CHECK_OR_(cond, return, __VA_ARGS__)

static inline int ft_report(const char *name, long checks, long failures,
                            int ranks) {
  printf("%s: %s: %ld checks, %ld failed", failures ? "FAIL" : "PASS", name,
         checks, failures);
  if (ranks > 0)
    printf(" over %d rank%s", ranks, ranks == 1 ? "" : "s");
  printf("\n");
  fflush(stdout);
  return failures ? FT_FAIL : FT_PASS;
}

static inline int ft_summary(const char *name) {
  return ft_report(name, ft_checks, ft_failures, 0);
}

#ifdef FT_HAVE_MPI
static inline int ft_mpi_summary(const char *name, MPI_Comm comm) {
  long mine[2] = {ft_checks, ft_failures}, total[2] = {0, 0};
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  MPI_Allreduce(mine, total, 2, MPI_LONG, MPI_SUM, comm);
  if (rank == 0)
    return ft_report(name, total[0], total[1], size);
  return total[1] ? FT_FAIL : FT_PASS;
}
#endif

#endif /* FERRY_TEST_H */
