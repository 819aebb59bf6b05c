/*
 * loader/sparse.c - sparse=dense (issue 27, docs/singlecell.md): the rows
 * of a sparse matrix served dense.  A CSR matrix M (an AnnData X, a layer,
 * raw/X) arrives from its backend as two ragged variables, M/indices and
 * M/data, whose width (ferry__var.width) is the matrix's columns.  With
 * sparse=dense every rank makes, once the manifest is shared, a virtual
 * dataset over it (as pack.c does for token corpora): the pair replaced by
 * one dense variable M of [columns kept] in sparse_dtype, the other
 * variables as they are.  Its backend reads a pair's values for the rows
 * asked for from the dataset's own backend and scatters them into dense
 * rows (zeros elsewhere), converting the values; a column index outside
 * [0, width) is refused naming the file, variable, rank and row.  With
 * genes= only those columns are kept, in that order: names are looked up
 * in M/indices' categories (the genes of var/_index), numbers are column
 * indices; resolved on every rank from the shared manifest.
 *
 * The dense rows are the view's variables, so the read buffers, the
 * batches and the memory budget hold them at their dense size.
 *
 * With device batches on one device (device=cuda, decision 0056) the rows
 * are made on the device instead when every rank can: the loader keeps
 * the dataset's manifest (the pairs ragged: the host batches, the reads
 * and the pipeline carry the CSR rows), and the view becomes L->dview,
 * the variables the device batches and ferry_var_info show; the device
 * slots (gpu/cuda.c) copy each pair and run ferry's kernel.  The plan is
 * the CPU view's (its hash, its chunk size: ferry__sparse_plan_basis), so
 * the batches are the same ones, byte for byte.
 */
#include "config.h"
#include "backends/backend.h"
#include "backends/toolkit.h"
#include "core/options.h"
#include "loader/loader.h"
#include "util/dtype.h"

#include <mpi.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* What variable v of the view is (gpu/gpu.h: the device slots read the
 * same table when the rows are made on the device): src the inner
 * variable (passthrough, or M/indices), data M/data (-1: passthrough),
 * width the matrix's columns, kept the dense row's, map [width] column ->
 * place in the row, -1 dropped (NULL: every column, in order). */
typedef ferry__densify_var sview_var;

/* The view's own data (ferry__manifest.aux). */
typedef struct sview {
  int n;
  sview_var *v;
} sview;

static void sview_free(void *p) {
  sview *s = p;
  for (int i = 0; s && i < s->n; i++)
    free(s->v[i].map);
  if (s)
    free(s->v);
  free(s);
}

int ferry__sparse_is(const ferry__manifest *m) {
  return m && m->backend && !strcmp(m->backend, "sparse") && m->inner;
}

/* The dtype of the dense rows of a matrix whose values are vdt. */
static ferry_dtype out_dtype(int opt, ferry_dtype vdt) {
  return opt == FERRY__SPARSE_DT_FLOAT16    ? FERRY_FLOAT16
         : opt == FERRY__SPARSE_DT_BFLOAT16 ? FERRY_BFLOAT16
         : opt == FERRY__SPARSE_DT_FLOAT64  ? FERRY_FLOAT64
         : opt == FERRY__SPARSE_DT_SAME     ? vdt
                                            : FERRY_FLOAT32;
}

/* genes= resolved for the matrix whose indices are variable x: map[width]
 * (column -> place, -1 dropped), *kept the places. */
static int column_map(const char *genes, const ferry__var *x, const char *m,
                      int64_t **out, int64_t *kept, ferry__err *err) {
  char *list = NULL;
  *out = NULL;
  if (genes[0] == '@') { /* a file of names, one a line */
    FILE *f = fopen(genes + 1, "r");
    if (!f)
      return ferry__seterr(err, FERRY_ENOENT, "option genes: %s: cannot open",
                           genes + 1);
    size_t cap = 0, len = 0;
    char line[4096];
    while (fgets(line, sizeof line, f)) {
      size_t k = strcspn(line, "\r\n");
      line[k] = '\0';
      if (!k)
        continue;
      if (len + k + 2 > cap) {
        size_t nc = 2 * cap + k + 64;
        char *t = realloc(list, nc);
        if (!t) {
          fclose(f);
          free(list);
          return ferry__oom(err, -1, nc, "the genes of %s", genes + 1);
        }
        list = t;
        cap = nc;
      }
      len +=
          (size_t)snprintf(list + len, cap - len, "%s%s", len ? "," : "", line);
    }
    fclose(f);
    if (!list)
      return ferry__seterr(err, FERRY_EINVAL, "option genes: %s names none",
                           genes + 1);
  } else if (!(list = strdup(genes)))
    return ferry__oom(err, -1, strlen(genes) + 1, "the genes");
  int64_t *map = malloc((size_t)x->width * sizeof *map);
  if (!map) {
    free(list);
    return ferry__oom(err, -1, (size_t)x->width * 8, "the columns of %s", m);
  }
  for (int64_t c = 0; c < x->width; c++)
    map[c] = -1;
  int64_t n = 0;
  int rc = 0;
  for (char *tok = list, *next; !rc && tok && *tok; tok = next) {
    next = strchr(tok, ',');
    if (next)
      *next++ = '\0';
    int64_t col = -1;
    /* a name of the matrix's columns first, then a number */
    size_t tl = strlen(tok);
    int64_t k = 0;
    for (const char *c = x->categories; c && *c; k++) {
      const char *e = strchr(c, '\n');
      size_t cl = e ? (size_t)(e - c) : strlen(c);
      if (cl == tl && !memcmp(c, tok, tl)) {
        col = k;
        break;
      }
      c = e ? e + 1 : c + cl;
    }
    char *end = NULL;
    long long num = col < 0 ? strtoll(tok, &end, 10) : -1;
    if (col < 0 && end && end != tok && !*end)
      col = num;
    if (col < 0 || col >= x->width)
      rc = ferry__seterr(err, FERRY_EINVAL,
                         "option genes: '%s' is not a column of %s (%lld "
                         "columns%s)",
                         tok, m, (long long)x->width,
                         x->categories ? ", named by var/_index" : "");
    else if (map[col] >= 0)
      rc = ferry__seterr(err, FERRY_EINVAL,
                         "option genes: column %lld of %s named twice ('%s')",
                         (long long)col, m, tok);
    else
      map[col] = n++;
  }
  free(list);
  if (!rc && n == 0)
    rc = ferry__seterr(err, FERRY_EINVAL, "option genes keeps no column");
  if (rc) {
    free(map);
    return rc;
  }
  *out = map;
  *kept = n;
  return 0;
}

/* The pair (M/indices, M/data) whose indices is inner variable i: the
 * data's index, or -1. */
static int pair_of(const ferry__manifest *in, int i) {
  const ferry__var *x = &in->vars[i];
  size_t n = strlen(x->name);
  if (!x->ragged || x->width <= 0 || n < 8 ||
      strcmp(x->name + n - 8, "/indices") != 0)
    return -1;
  for (int d = 0; d < in->nvars; d++) {
    const ferry__var *y = &in->vars[d];
    if (y->ragged && y->width == x->width && strlen(y->name) == n - 3 &&
        !strncmp(y->name, x->name, n - 8) && !strcmp(y->name + n - 8, "/data"))
      return d;
  }
  return -1;
}

static int is_data_of_pair(const ferry__manifest *in, int d) {
  for (int i = 0; i < in->nvars; i++)
    if (pair_of(in, i) == d)
      return 1;
  return 0;
}

static void view_free(ferry__manifest *vm) {
  vm->inner = NULL;
  ferry__manifest_free(vm);
}

/* Variable k of the view (vars and every part's fields) from inner
 * variable i: a copy, or (data >= 0) the dense M. */
static int view_var(const ferry__manifest *in, const ferry_options *o,
                    ferry__manifest *vm, int k, int i, int data,
                    const sview_var *sv) {
  const ferry__var *x = &in->vars[i];
  ferry__var *v = &vm->vars[k];
  char storage[256];
  if (data >= 0) {
    const ferry__var *y = &in->vars[data];
    size_t n = strlen(x->name) - 8;
    v->name = malloc(n + 1);
    if (v->name)
      snprintf(v->name, n + 1, "%.*s", (int)n, x->name);
    v->dtype = out_dtype(o->sparse_dtype, y->dtype);
    v->row_ndim = 1;
    v->row_shape[0] = sv->kept;
    v->row_bytes = (size_t)sv->kept * ferry_dtype_size(v->dtype);
    uint64_t h = FERRY__FNV_INIT; /* the kept columns: in the hash */
    if (sv->map)
      h = ferry__fnv1a(h, sv->map, (size_t)sv->width * sizeof *sv->map);
    snprintf(storage, sizeof storage,
             "dense from %s and %s (sparse=dense): %lld of %lld columns "
             "(map %016llx)",
             x->name, y->name, (long long)sv->kept, (long long)sv->width,
             (unsigned long long)h);
    v->storage = strdup(storage);
  } else {
    *v = *x;
    v->name = strdup(x->name);
    v->storage = x->storage ? strdup(x->storage) : NULL;
    v->categories = x->categories ? strdup(x->categories) : NULL;
  }
  if (!v->name || (!v->storage && (data >= 0 || x->storage)) ||
      (!v->categories && data < 0 && x->categories))
    return FERRY_ENOMEM;
  for (int64_t p = 0; p < in->nparts; p++) {
    const ferry__part *a = &in->parts[p];
    ferry__part *b = &vm->parts[p];
    if (!(b->paths[k] = strdup(a->paths[i])))
      return FERRY_ENOMEM;
    b->data_offset[k] = a->data_offset[i];
    b->file_size[k] = a->file_size[i];
    if (data < 0 && x->ragged) { /* a passthrough ragged variable: its
                                  * offsets, copied (the view owns them) */
      size_t bytes = ((size_t)a->num_samples + 1) * sizeof(int64_t);
      if (!b->roff && !(b->roff = calloc((size_t)vm->nvars, sizeof *b->roff)))
        return FERRY_ENOMEM;
      if (!(b->roff[k] = malloc(bytes)))
        return FERRY_ENOMEM;
      memcpy(b->roff[k], a->roff[i], bytes);
    }
  }
  return 0;
}

/* Whether the rows are made on the device (decision 0056), agreed by
 * every rank: 1, 0 with why, -1 when the agreement failed.  The host form
 * is the dataset's own, with the pairs ragged: what ragged variables are
 * refused with, or served otherwise, keeps the CPU view.  COLLECTIVE when
 * the loader has device batches (every rank has, or none). */
static int on_device(ferry_loader *L, const sview *sv, char *why, size_t len) {
  const ferry_options *o = L->opts;
  const ferry__manifest *in = &L->m;
  if (!L->gpu)
    return 0;
  ferry_device_info di;
  memset(&di, 0, sizeof di);
  ferry__gpu_info(L->gpu, &di);
  int mine = 1;
  if (di.ndevices != 1)
    snprintf(why, len, "%d devices a rank: the kernel runs with one",
             di.ndevices);
  else if (o->pad && *o->pad && strcmp(o->pad, "none") != 0)
    snprintf(why, len, "pad=%s pads ragged variables", o->pad);
  else if (o->max_tokens)
    snprintf(why, len, "max_tokens cuts batches by ragged rows");
  else if (o->shuffle == FERRY__SHUFFLE_GLOBAL)
    snprintf(why, len, "shuffle=global serves no ragged variable");
  else if (o->io == FERRY__IO_COLLECTIVE)
    snprintf(why, len, "io=collective");
  else if (o->keep_host)
    snprintf(why, len, "keep_host=yes keeps the host batch, dense there");
  else
    mine = 2;
  for (int k = 0; mine == 2 && k < sv->n; k++) {
    const sview_var *z = &sv->v[k];
    ferry_dtype it = z->data >= 0 ? in->vars[z->src].dtype : FERRY_INT32;
    if (it != FERRY_INT32 && it != FERRY_INT64) {
      snprintf(why, len, "%s is %s, not int32 or int64", in->vars[z->src].name,
               ferry_dtype_name(it));
      mine = 1;
    }
  }
  if (mine == 2 && o->sparse_dtype == FERRY__SPARSE_DT_BFLOAT16) {
    snprintf(why, len,
             "sparse_dtype=bfloat16: the kernel makes float16, "
             "float32 and float64");
    mine = 1;
  }
  if (mine == 2)
    mine = ferry__gpu_densify_ready(L->gpu, why, len) ? 0 : 1;
  else
    mine = 1;
  /* 0: this rank can; the lowest rank that cannot says why */
  int first = mine ? L->rank : L->size, low = L->size;
  if (MPI_Allreduce(&first, &low, 1, MPI_INT, MPI_MIN, L->comm) != MPI_SUCCESS)
    return -1;
  if (low == L->size)
    return 1;
  char buf[512];
  snprintf(buf, sizeof buf, "%.500s", why);
  if (MPI_Bcast(buf, (int)sizeof buf, MPI_CHAR, low, L->comm) != MPI_SUCCESS)
    return -1;
  if (L->size > 1)
    snprintf(why, len, "rank %d: %s", low, buf);
  else
    snprintf(why, len, "%s", buf);
  return 0;
}

/* The rows made on the device: the loader keeps the dataset's manifest,
 * the view becomes L->dview (whose hash the plan takes, and whose notes
 * say so). */
static int keep_on_device(ferry_loader *L, ferry__manifest *vm,
                          ferry__manifest *inner, int npair, ferry__err *err) {
  ferry__manifest *dv = malloc(sizeof *dv);
  char notes[256];
  int dev = -1;
  ferry_device_info di;
  memset(&di, 0, sizeof di);
  ferry__gpu_info(L->gpu, &di);
  dev = di.devices[0];
  snprintf(notes, sizeof notes,
           "sparse=dense: %d sparse matrix%s served as dense rows of %s, made "
           "on device %d by ferry's kernel (host batches carry the CSR rows)",
           npair, npair > 1 ? "es" : "",
           ferry_dtype_name(out_dtype(L->opts->sparse_dtype, FERRY_FLOAT32)),
           dev);
  char *n = strdup(notes);
  free(inner);
  vm->inner = NULL;
  if (!dv || !n) {
    free(dv);
    free(n);
    ferry__manifest_free(vm);
    return ferry__oom(err, L->rank, sizeof *dv, "the dense view of %s",
                      L->m.spec);
  }
  free(vm->notes);
  vm->notes = n;
  *dv = *vm;
  L->dview = dv;
  L->dz = ((const sview *)dv->aux)->v;
  L->m.hash = dv->hash; /* the CPU view's plan and checkpoints */
  return 0;
}

/* The view made: L->m, or with the rows made on the device L->dview
 * (keep_on_device); with device batches and the rows made on the CPU,
 * the notes say why.  COLLECTIVE (on_device). */
static int view_done(ferry_loader *L, ferry__manifest *vmp,
                     ferry__manifest *inner, int npair, ferry__err *err) {
  const ferry_options *o = L->opts;
  ferry__manifest vm = *vmp;
  sview *sv = vm.aux;
  char why[700] = "";
  int dev = on_device(L, sv, why, sizeof why);
  if (dev < 0) {
    free(inner);
    view_free(&vm); /* the view's table with it */
    return ferry__seterr_on(err, L->rank, FERRY_EMPI,
                            "sparse=dense: MPI failed while the ranks agreed "
                            "where the dense rows are made");
  }
  if (dev)
    return keep_on_device(L, vmp, inner, npair, err);
  if (L->gpu) { /* device batches, rows made on the CPU: say why */
    size_t k = strlen(vm.notes);
    char *n = realloc(vm.notes, k + strlen(why) + 64);
    if (n) {
      snprintf(n + k, strlen(why) + 64, " on the CPU, not the device (%s)",
               why);
      vm.notes = n;
    }
    if (L->rank == 0 && o->verbose >= 1)
      fprintf(stderr, "ferry: note: %s\n", vm.notes);
  }
  L->m = vm;
  return 0;
}

int ferry__sparse_wrap(ferry_loader *L, ferry__err *err) {
  const ferry_options *o = L->opts;
  const ferry__manifest *in = &L->m;
  if (o->sparse == 0) {
    if (o->genes && *o->genes)
      return ferry__seterr(err, FERRY_EINVAL,
                           "option genes applies with sparse=dense");
    return 0;
  }
  if (o->pack != FERRY__PACK_NONE)
    return ferry__seterr(err, FERRY_EINVAL,
                         "sparse=dense with pack: packing serves token rows, "
                         "not a sparse matrix's");
  int npair = 0, nv = 0;
  for (int i = 0; i < in->nvars; i++) {
    npair += pair_of(in, i) >= 0;
    nv += !is_data_of_pair(in, i);
  }
  if (npair == 0)
    return ferry__seterr(err, FERRY_EINVAL,
                         "sparse=dense: dataset %s serves no sparse matrix (a "
                         "pair M/indices, M/data of a CSR matrix: an AnnData "
                         "file; docs/singlecell.md)",
                         in->spec);
  if (o->genes && *o->genes && npair > 1)
    return ferry__seterr(err, FERRY_EINVAL,
                         "option genes with %d sparse matrices in dataset %s: "
                         "select one with vars (e.g. vars=X/indices,X/data)",
                         npair, in->spec);
  ferry__manifest vm;
  memset(&vm, 0, sizeof vm);
  sview *sv = calloc(1, sizeof *sv);
  int rc = 0;
  if (sv)
    sv->v = calloc((size_t)nv, sizeof *sv->v);
  vm.backend = strdup("sparse");
  vm.spec = in->spec ? strdup(in->spec) : NULL;
  vm.vars = calloc((size_t)nv, sizeof *vm.vars);
  vm.parts = calloc((size_t)in->nparts, sizeof *vm.parts);
  if (!sv || !sv->v || !vm.backend || !vm.spec || !vm.vars || !vm.parts)
    rc = FERRY_ENOMEM;
  else {
    sv->n = nv;
    vm.nvars = nv;
    vm.nparts = in->nparts;
    vm.num_samples = in->num_samples;
  }
  for (int64_t p = 0; !rc && p < in->nparts; p++) {
    ferry__part *b = &vm.parts[p];
    b->num_samples = in->parts[p].num_samples;
    b->first_sample = in->parts[p].first_sample;
    b->paths = calloc((size_t)nv, sizeof *b->paths);
    b->data_offset = calloc((size_t)nv, sizeof *b->data_offset);
    b->file_size = calloc((size_t)nv, sizeof *b->file_size);
    if (!b->paths || !b->data_offset || !b->file_size)
      rc = FERRY_ENOMEM;
  }
  for (int i = 0, k = 0; !rc && i < in->nvars; i++) {
    if (is_data_of_pair(in, i))
      continue;
    int data = pair_of(in, i);
    sview_var *s = &sv->v[k];
    s->src = i;
    s->data = data;
    if (data >= 0) {
      char m[512];
      snprintf(m, sizeof m, "%.*s", (int)strlen(in->vars[i].name) - 8,
               in->vars[i].name);
      s->width = in->vars[i].width;
      s->kept = s->width;
      if (o->genes && *o->genes &&
          (rc = column_map(o->genes, &in->vars[i], m, &s->map, &s->kept, err)) <
              0)
        break;
    }
    if ((rc = view_var(in, o, &vm, k, i, data, s)) < 0)
      break;
    k++;
  }
  if (rc) {
    sview_free(sv);
    view_free(&vm);
    return err->msg[0] ? rc
                       : ferry__oom(err, L->rank, (size_t)nv * 512,
                                    "the dense view of %s", in->spec);
  }
  char notes[256];
  snprintf(notes, sizeof notes,
           "sparse=dense: %d sparse matrix%s served as dense rows of %s", npair,
           npair > 1 ? "es" : "",
           ferry_dtype_name(out_dtype(o->sparse_dtype, FERRY_FLOAT32)));
  vm.notes = strdup(notes);
  ferry__manifest *inner = malloc(sizeof *inner);
  if (!inner || !vm.notes) {
    free(inner);
    sview_free(sv);
    view_free(&vm);
    return ferry__oom(err, L->rank, sizeof *inner, "the dense view of %s",
                      in->spec);
  }
  *inner = L->m;
  vm.inner = inner;
  vm.aux = sv;
  vm.aux_free = sview_free;
  vm.hash = ferry__manifest_hash(&vm);
  return view_done(L, &vm, inner, npair, err);
}

void ferry__sparse_plan_basis(ferry_loader *L) {
  const ferry__manifest *dv = L->dview;
  if (!dv)
    return;
  size_t sized = 0, mean = 0;
  int ragged = 0;
  double n = (double)(L->m.num_samples ? L->m.num_samples : 1);
  for (int k = 0; k < dv->nvars; k++) {
    const ferry__var *x = &dv->vars[k];
    sized += x->row_bytes; /* as open_layout counts the view's */
    if (!x->ragged) {
      mean += x->row_bytes;
      continue;
    }
    ragged = 1; /* as ragged.c counts the view's (the same rows) */
    int64_t rows = L->rstat ? L->rstat[L->dz[k].src].total : 0;
    mean += (size_t)((double)rows / n * (double)x->row_bytes) + sizeof(int64_t);
  }
  L->dview_sized = sized;
  L->dview_mean = ragged ? (mean ? mean : 1) : sized;
}

size_t ferry__sparse_device_extra(const ferry_loader *L) {
  size_t b = 0;
  for (int k = 0; L->dview && k < L->dview->nvars; k++)
    if (L->dz[k].data >= 0)
      b += (size_t)L->opts->batch_size * L->dview->vars[k].row_bytes +
           (L->dz[k].map ? (size_t)L->dz[k].width * sizeof(int64_t) : 0);
  return b;
}

/* ---- The backend ------------------------------------------------------ */

struct ferry__io {
  const ferry__manifest *m, *in;
  const sview *sv;
  const ferry__backend *be;
  ferry__io *child;
  int rank;
  unsigned char *ix, *dv; /* a pair's indices and values of the rows read */
  size_t ixcap, dvcap;
};

static void sparse_io_close(ferry__io *io) {
  if (!io)
    return;
  if (io->child)
    io->be->io_close(io->child);
  free(io->ix);
  free(io->dv);
  free(io);
}

static int sparse_io_open(ferry__io **out, const ferry__manifest *m,
                          const ferry__io_params *p, ferry__err *err) {
  *out = NULL;
  ferry__io *io = calloc(1, sizeof *io);
  if (!io)
    return ferry__oom(err, p->rank, sizeof *io, "the dense reader of %s",
                      m->spec);
  io->m = m;
  io->in = m->inner;
  io->sv = m->aux;
  io->rank = p->rank;
  int rc = 0;
  if (!io->in || !io->sv || !(io->be = ferry__backend_find(io->in->backend)))
    rc = ferry__seterr_on(err, p->rank, FERRY_EINTERNAL,
                          "sparse=dense: the view of %s has no dataset under "
                          "it",
                          m->spec);
  if (!rc) {
    ferry__io_params cp = *p;
    cp.defer = 0;
    cp.collective = 0;
    rc = io->be->io_open(&io->child, io->in, &cp, err);
  }
  if (rc) {
    sparse_io_close(io);
    return rc;
  }
  *out = io;
  return 0;
}

static int grow(unsigned char **b, size_t *cap, size_t n, int rank,
                ferry__err *err) {
  if (n <= *cap)
    return 0;
  unsigned char *t = realloc(*b, n);
  if (!t)
    return ferry__oom(err, rank, n, "the sparse rows of a read");
  *b = t;
  *cap = n;
  return 0;
}

/* A float as the nearest half (round to nearest even; overflow: inf). */
static uint16_t half_nearest(float f) {
  uint32_t x;
  memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000u, e = (x >> 23) & 0xffu, m = x & 0x7fffffu;
  if (e == 0xffu) /* inf, nan */
    return (uint16_t)(sign | 0x7c00u | (m ? 0x200u : 0));
  int32_t he = (int32_t)e - 127 + 15;
  if (he >= 31)
    return (uint16_t)(sign | 0x7c00u);
  if (he <= 0) { /* subnormal or zero */
    if (he < -10)
      return (uint16_t)sign;
    m |= 0x800000u;
    uint32_t shift = (uint32_t)(14 - he);
    uint32_t hm = m >> shift, rest = m & ((1u << shift) - 1),
             half = 1u << (shift - 1);
    hm += rest > half || (rest == half && (hm & 1u));
    return (uint16_t)(sign | hm);
  }
  uint32_t hm = m >> 13, rest = m & 0x1fffu;
  uint32_t h = sign | ((uint32_t)he << 10) | hm;
  h += rest > 0x1000u || (rest == 0x1000u && (hm & 1u));
  return (uint16_t)h;
}

/* Value k of the native array at p (dtype dt) as a float, a double. */
static float value_f32(const unsigned char *p, ferry_dtype dt, int64_t k) {
  if (dt == FERRY_FLOAT32) {
    float f;
    memcpy(&f, p + (size_t)k * 4, 4);
    return f;
  }
  return (float)ferry__dtype_as_double(p + (size_t)k * ferry_dtype_size(dt),
                                       dt);
}

/* Column index k of the native indices at p (dtype dt); -1 when it does
 * not fit an int64. */
static inline int64_t index_at(const unsigned char *p, ferry_dtype dt,
                               int64_t k) {
  if (dt == FERRY_INT32) {
    int32_t c;
    memcpy(&c, p + (size_t)k * 4, 4);
    return c;
  }
  if (dt == FERRY_INT64) {
    int64_t c;
    memcpy(&c, p + (size_t)k * 8, 8);
    return c;
  }
  int64_t c = -1;
  (void)ferry__dtype_as_int64(p + (size_t)k * ferry_dtype_size(dt), dt, &c);
  return c;
}

/* Where value k (column index k of ix) goes in a dense row: its column
 * among those kept (s->map), -1 when not kept, OUTSIDE when the index is
 * outside [0, width). */
#define OUTSIDE INT64_MIN
static inline int64_t dense_at(const sview_var *s, ferry_dtype idt,
                               const unsigned char *ix, int64_t k) {
  int64_t c = index_at(ix, idt, k);
  if ((uint64_t)c >= (uint64_t)s->width)
    return OUTSIDE;
  return s->map ? s->map[c] : c;
}

/* Value k of dv (dtype ddt, native) into e as odt: a fixed-size move
 * when the dtypes are the same (es: its size), else converted. */
static inline void put_value(unsigned char *e, const unsigned char *dv,
                             int64_t k, ferry_dtype ddt, ferry_dtype odt,
                             size_t es) {
  if (odt == ddt) {
    if (es == 4)
      memcpy(e, dv + (size_t)k * 4, 4);
    else if (es == 8)
      memcpy(e, dv + (size_t)k * 8, 8);
    else if (es == 2)
      memcpy(e, dv + (size_t)k * 2, 2);
    else
      memcpy(e, dv + (size_t)k * es, es);
  } else if (odt == FERRY_FLOAT32) {
    float f = value_f32(dv, ddt, k);
    memcpy(e, &f, 4);
  } else if (odt == FERRY_FLOAT64) {
    double d =
        ferry__dtype_as_double(dv + (size_t)k * ferry_dtype_size(ddt), ddt);
    memcpy(e, &d, 8);
  } else if (odt == FERRY_BFLOAT16) {
    uint16_t h = ferry__bfloat16_of_float(value_f32(dv, ddt, k));
    memcpy(e, &h, 2);
  } else { /* float16 */
    uint16_t h = half_nearest(value_f32(dv, ddt, k));
    memcpy(e, &h, 2);
  }
}

/* The values [k0, k1) of a row (their column indices in ix, values in dv,
 * both native) scattered into the zeroed dense row r of dtype odt, kept
 * columns only (s->map).  Returns -1, or the first k whose column index
 * is outside [0, width) (the reader refused those already: decision
 * 0068; this guards the writes).  The usual cases (int32 or int64
 * indices, float32 values into float32, or values of the output's own
 * dtype) are loops of fixed-size moves. */
static int64_t scatter_row(const sview_var *s, ferry_dtype idt, ferry_dtype ddt,
                           ferry_dtype odt, const unsigned char *ix,
                           const unsigned char *dv, int64_t k0, int64_t k1,
                           unsigned char *r) {
  const size_t es = ferry_dtype_size(odt);
  for (int64_t k = k0; k < k1; k++) {
    int64_t at = dense_at(s, idt, ix, k);
    if (at == OUTSIDE)
      return k;
    if (at >= 0)
      put_value(r + (size_t)at * es, dv, k, ddt, odt, es);
  }
  return -1;
}

static int sparse_io_read(ferry__io *io, int64_t part, int var, int64_t row,
                          int64_t nrows, void *buf, ferry__err *err) {
  int rc = ferry__check_part_var(io->m, part, var, io->rank, err);
  if (!rc)
    rc = ferry__check_rows(io->m, part, var, row, nrows, io->rank, err);
  if (rc || nrows == 0)
    return rc;
  const sview_var *s = &io->sv->v[var];
  if (s->data < 0) /* as it is */
    return io->be->io_read(io->child, part, s->src, row, nrows, buf, err);
  const ferry__part *pt = &io->in->parts[part];
  const ferry__var *xi = &io->in->vars[s->src], *xd = &io->in->vars[s->data];
  const ferry__var *out = &io->m->vars[var];
  const int64_t *o = pt->roff[s->src];
  const int64_t nnz = o[row + nrows] - o[row];
  if ((rc = grow(&io->ix, &io->ixcap, (size_t)nnz * xi->row_bytes + 1, io->rank,
                 err)) ||
      (rc = grow(&io->dv, &io->dvcap, (size_t)nnz * xd->row_bytes + 1, io->rank,
                 err)) ||
      (rc =
           io->be->io_read(io->child, part, s->src, row, nrows, io->ix, err)) ||
      (rc = io->be->io_read(io->child, part, s->data, row, nrows, io->dv, err)))
    return rc;
  if (pt->roff[s->data][row + nrows] - pt->roff[s->data][row] != nnz)
    return ferry__seterr_on(err, io->rank, FERRY_EFORMAT,
                            "sparse=dense: %s: %s and %s hold different "
                            "counts for rows [%lld, %lld) (file %s)",
                            io->m->spec, xi->name, xd->name, (long long)row,
                            (long long)(row + nrows), pt->paths[s->src]);
  /* the child's bytes are as stored: a big-endian array (a Zarr dtype
   * ">f4") is made native here, as the assembly does for other variables */
  const size_t ei = ferry_dtype_size(xi->dtype),
               ed = ferry_dtype_size(xd->dtype);
  if (xi->swapped)
    ferry__byteswap(io->ix, (size_t)nnz * xi->row_bytes / ei, ei);
  if (xd->swapped)
    ferry__byteswap(io->dv, (size_t)nnz * xd->row_bytes / ed, ed);
  unsigned char *dst = buf;
  memset(dst, 0, (size_t)nrows * out->row_bytes);
  for (int64_t j = 0; j < nrows; j++) {
    int64_t k0 = o[row + j] - o[row], k1 = o[row + j + 1] - o[row];
    int64_t bad = scatter_row(s, xi->dtype, xd->dtype, out->dtype, io->ix,
                              io->dv, k0, k1, dst + (size_t)j * out->row_bytes);
    if (bad >= 0) {
      int64_t c = index_at(io->ix, xi->dtype, bad);
      return ferry__seterr_on(err, io->rank, FERRY_EFORMAT,
                              "file %s, variable %s, row %lld: column index "
                              "%lld outside [0, %lld)",
                              pt->paths[s->src], xi->name,
                              (long long)(pt->first_sample + row + j),
                              (long long)c, (long long)s->width);
    }
  }
  return 0;
}

const ferry__backend ferry__sparse_backend = {
    .name = "sparse",
    .version = FERRY__BACKEND_VERSION,
    .caps = FERRY__CAP_NOT_FLAT,
    .record_version = 0,
    .describe = ferry__view_describe,
    .io_open = sparse_io_open,
    .io_read = sparse_io_read,
    .io_close = sparse_io_close,
};
