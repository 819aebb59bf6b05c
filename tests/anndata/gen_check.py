"""gen_check.py FILE CELLS GENES DENSITY SEED DTYPE CATEGORIES: a file of
`ferry gen --anndata` read by anndata itself (read_h5ad) against the formula
of src/tool/gen_anndata.h computed again here, independently (Python
integers): the shape, every value and column of the CSR matrix X of the
first 300 cells (all of them in a small file), the obs codes and categories,
n_counts, the names of the cells and of the genes, and the attributes anndata
0.8 writes (checked with h5py: variable-length UTF-8 strings).
Prints one "ok:" line; exits 1 naming the first difference."""
import sys

import anndata
import h5py
import numpy as np

M = (1 << 64) - 1


def mix(x):
    x = (x + 0x9E3779B97F4A7C15) & M
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & M
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & M
    return x ^ (x >> 31)


def row(seed, i, genes, span):
    """Cell i's columns and values."""
    h = mix(seed ^ mix(i))
    cols, vals, c, t = [], [], -1, 0
    while True:
        c += 1 + mix((h + t) & M) % span
        if c >= genes:
            break
        cols.append(c)
        vals.append(1 + ((h ^ ((c * 0x9E3779B97F4A7C15) & M)) >> 56) % 255)
        t += 1
    return h, cols, vals


def code(h, k):
    x = mix(h ^ 0x636F646573)
    return -1 if x % 20 == 0 else (x >> 8) % k


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def check_attrs(path):
    def vstr(obj, name, want):
        if name not in obj.attrs:
            fail("%s has no attribute %s" % (obj.name, name))
        t = obj.attrs.get_id(name).get_type()
        if not (isinstance(t, h5py.h5t.TypeStringID) and t.is_variable_str()
                and t.get_cset() == h5py.h5t.CSET_UTF8):
            fail("%s@%s is not a variable-length UTF-8 string" % (obj.name, name))
        if obj.attrs[name] != want:
            fail("%s@%s is %r, expected %r" % (obj.name, name, obj.attrs[name], want))

    with h5py.File(path, "r") as f:
        vstr(f, "encoding-type", "anndata")
        vstr(f, "encoding-version", "0.1.0")
        vstr(f["X"], "encoding-type", "csr_matrix")
        for g in ("obsm", "varm", "obsp", "varp", "layers", "uns"):
            vstr(f[g], "encoding-type", "dict")
            vstr(f[g], "encoding-version", "0.1.0")
        for g in ("obs", "var"):
            vstr(f[g], "encoding-type", "dataframe")
            vstr(f[g], "encoding-version", "0.2.0")
            vstr(f[g], "_index", "_index")
        vstr(f["obs/cell_type"], "encoding-type", "categorical")
        if list(f["obs"].attrs["column-order"]) != ["cell_type", "n_counts"]:
            fail("obs column-order %r" % (f["obs"].attrs["column-order"],))
        if f["obs/cell_type"].attrs["ordered"] is not np.False_:
            fail("obs/cell_type@ordered is not a NumPy False")
        if (f["X/indices"].dtype != np.int32 or f["X/indptr"].dtype != np.int64
                or f["obs/cell_type/codes"].dtype != np.int8
                or f["obs/n_counts"].dtype != np.float32):
            fail("dtypes of indices, indptr, codes, n_counts")
        if list(f["X"].attrs["shape"]) != [CELLS, GENES] or \
                f["X"].attrs["shape"].dtype != np.int64:
            fail("X@shape %r" % (f["X"].attrs["shape"],))


path = sys.argv[1]
CELLS, GENES = int(sys.argv[2]), int(sys.argv[3])
density, seed, dtype, K = float(sys.argv[4]), int(sys.argv[5]), sys.argv[6], int(sys.argv[7])
span = max(1, int(np.floor(2.0 / density - 1.0 + 0.5)))
check_attrs(path)
a = anndata.read_h5ad(path)
if a.shape != (CELLS, GENES):
    fail("shape %r, expected %r" % (a.shape, (CELLS, GENES)))
if a.X.format != "csr" or a.X.dtype != np.dtype(dtype):
    fail("X is %s %s, expected csr %s" % (a.X.format, a.X.dtype, dtype))
if list(a.var_names[:3]) != ["gene0", "gene1", "gene2"] or a.var_names[-1] != "gene%d" % (GENES - 1):
    fail("var names %r ... %r" % (list(a.var_names[:3]), a.var_names[-1]))
if list(a.obs_names[:2]) != ["cell0", "cell1"] or a.obs_names[-1] != "cell%d" % (CELLS - 1):
    fail("obs names")
cats = list(a.obs["cell_type"].cat.categories)
if cats != ["type%d" % k for k in range(K)]:
    fail("categories %r" % cats)
codes = a.obs["cell_type"].cat.codes.to_numpy()
n = min(CELLS, 300)
nnz = 0
for i in range(n):
    h, cols, vals = row(seed, i, GENES, span)
    lo, hi = a.X.indptr[i], a.X.indptr[i + 1]
    if list(a.X.indices[lo:hi]) != cols:
        fail("cell %d: columns %r, expected %r" % (i, list(a.X.indices[lo:hi]), cols))
    if list(a.X.data[lo:hi]) != vals:
        fail("cell %d: values %r, expected %r" % (i, list(a.X.data[lo:hi]), vals))
    if codes[i] != code(h, K):
        fail("cell %d: code %d, expected %d" % (i, codes[i], code(h, K)))
    if a.obs["n_counts"].iloc[i] != np.float32(sum(vals)):
        fail("cell %d: n_counts %r, expected %r" % (i, a.obs["n_counts"].iloc[i], sum(vals)))
    nnz += len(cols)
missing = float((codes == -1).mean())
dens = a.X.nnz / float(CELLS * GENES)
if not 0.01 <= missing <= 0.12:
    fail("%.3f of the codes missing, expected about 0.05" % missing)
print("ok: anndata reads %d x %d, %s CSR; the first %d cells' %d values, columns, "
      "codes and n_counts equal the formula; %.3f missing codes, density %.4f"
      % (CELLS, GENES, dtype, n, nnz, missing, dens))
