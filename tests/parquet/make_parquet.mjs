// make_parquet.mjs - Parquet fixtures for tests/parquet/parquet.sh, written by
// the writers users have (installed by tests/parquet/setup.sh into
// tests/parquet/node_modules): nodejs-polars, @duckdb/node-api,
// hyparquet-writer and parquet-wasm (the Rust parquet crate, fed through
// apache-arrow).  Every value a writer is given is also written as a .npy
// file (written here, little-endian, C order), the reference that
// tests/fixtures/dump_compare.py compares `ferry dump` with.
//
// Usage: node make_parquet.mjs OUTDIR
// OUTDIR/good.txt: DATASET<TAB>VAR<TAB>NPY<TAB>LABEL[<TAB>OPTIONS] per line.
// OUTDIR/bad.txt:  DATASET<TAB>VARS<TAB>WORDS (words of the message, '|').
// Values: element k of row i is (7 i + 3 k + 1) mod M for integers (M fits
// the type), (i + k / 4) for floats, (i + k) % 3 == 0 for bools: rows
// differ, so a row served at the wrong index is seen.
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const out = process.argv[2];
fs.mkdirSync(path.join(out, 'ref'), { recursive: true });
fs.mkdirSync(path.join(out, 'bad'), { recursive: true });
const good = [];
const bad = [];
const bigs = []; // OUTDIR/big.txt: as good.txt, dumped with threads

// ---- values and .npy references ----
const TYPES = {
  int8: [Int8Array, '|i1', 100], uint8: [Uint8Array, '|u1', 250],
  int16: [Int16Array, '<i2', 30000], uint16: [Uint16Array, '<u2', 60000],
  int32: [Int32Array, '<i4', 2000000000], uint32: [Uint32Array, '<u4', 4000000000],
  int64: [BigInt64Array, '<i8', 0], uint64: [BigUint64Array, '<u8', 0],
  float32: [Float32Array, '<f4', 0], float64: [Float64Array, '<f8', 0],
  float16: [Uint16Array, '<f2', 0],
  bool: [Uint8Array, '|b1', 0],
};
function values(dtype, n, k = 1) {
  const [C, , M] = TYPES[dtype];
  const a = new C(n * k);
  for (let i = 0; i < n; i++)
    for (let j = 0; j < k; j++) {
      const x = 7 * i + 3 * j + 1;
      let v;
      if (dtype === 'int64') v = BigInt(x) * 1000003n - 5000000n;
      else if (dtype === 'uint64') v = BigInt(x) * 1000003n + (1n << 40n);
      else if (dtype === 'float16') v = half(i + j / 4);
      else if (dtype.startsWith('float')) v = i + j / 4;
      else if (dtype === 'bool') v = (i + j) % 3 === 0 ? 1 : 0;
      else if (dtype.startsWith('int')) v = (x % M) - (dtype === 'int32' ? 0 : Math.floor(M / 2));
      else v = x % M;
      a[i * k + j] = v;
    }
  return a;
}
// IEEE half bits of x, exact for the values used here (|x| < 2048, at most
// 11 significant bits)
function half(x) {
  if (x === 0) return 0;
  let e = Math.floor(Math.log2(x));
  if (2 ** e > x) e--;
  if (2 ** (e + 1) <= x) e++;
  const m = Math.round((x / 2 ** e - 1) * 1024);
  return ((e + 15) << 10) | m;
}
function npy(file, dtype, n, k, data) {
  const shape = k > 1 ? `(${n}, ${k})` : `(${n},)`;
  let h = `{'descr': '${TYPES[dtype][1]}', 'fortran_order': False, 'shape': ${shape}, }`;
  while ((10 + h.length + 1) % 64) h += ' ';
  h += '\n';
  const head = Buffer.alloc(10);
  Buffer.from('\x93NUMPY', 'latin1').copy(head, 0);
  head[6] = 1;
  head[7] = 0;
  head.writeUInt16LE(h.length, 8);
  const body = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  fs.writeFileSync(file, Buffer.concat([head, Buffer.from(h, 'latin1'), body]));
}
function ref(label, col, dtype, n, k = 1) {
  const f = path.join(out, 'ref', `${label}__${col}.npy`);
  npy(f, dtype, n, k, values(dtype, n, k));
  return f;
}
function addGood(ds, label, cols, n) {
  for (const [col, dtype, k] of cols)
    good.push([ds, col, ref(label, col, dtype, n, k || 1), label]);
}
const toNum = (a) => Array.from(a, (v) => (typeof v === 'bigint' ? v : Number(v)));

// ---- nodejs-polars ----
async function polars() {
  const pl = require('nodejs-polars');
  const N = 1009;
  const cols = [['i8', 'int8'], ['u8', 'uint8'], ['i16', 'int16'], ['u16', 'uint16'],
    ['i32', 'int32'], ['u32', 'uint32'], ['i64', 'int64'], ['f32', 'float32'],
    ['f64', 'float64'], ['b', 'bool']];
  const pt = { int8: pl.Int8, uint8: pl.UInt8, int16: pl.Int16, uint16: pl.UInt16,
    int32: pl.Int32, uint32: pl.UInt32, int64: pl.Int64, float32: pl.Float32,
    float64: pl.Float64, bool: pl.Bool };
  const series = cols.map(([c, t]) =>
    pl.Series(c, t === 'bool' ? Array.from(values(t, N), (v) => !!v)
      : t === 'int64' ? Array.from(values(t, N), Number) : toNum(values(t, N)), pt[t]));
  // a low-cardinality column: dictionary-encoded by polars
  const dict = Int32Array.from({ length: N }, (_, i) => (i * 5) % 11);
  series.push(pl.Series('dict', Array.from(dict), pl.Int32));
  series.push(pl.Series('name', Array.from({ length: N }, (_, i) => `s${i}`), pl.Utf8));
  const vec = values('float32', N, 3);
  series.push(pl.Series('vec', Array.from({ length: N }, (_, i) => Array.from(vec.slice(i * 3, i * 3 + 3))),
    pl.List(pl.Float32)));
  const df = pl.DataFrame(series);
  for (const codec of ['uncompressed', 'zstd', 'snappy', 'gzip', 'lz4']) {
    const f = path.join(out, `polars_${codec}.parquet`);
    df.writeParquet(f, { compression: codec });
    addGood(f, `polars_${codec}`, codec === 'uncompressed' || codec === 'zstd'
      ? cols.concat([['vec', 'float32', 3]]) : [['i32', 'int32'], ['f64', 'float64'], ['vec', 'float32', 3]], N);
    const d = path.join(out, 'ref', `polars_${codec}__dict.npy`);
    npy(d, 'int32', N, 1, dict);
    good.push([f, 'dict', d, `polars_${codec}`]);
  }
  // nulls in a selected column
  const nulls = pl.DataFrame([pl.Series('x', Array.from({ length: 50 }, (_, i) => (i === 37 ? null : i)), pl.Int32),
    pl.Series('y', Array.from({ length: 50 }, (_, i) => i), pl.Int32)]);
  nulls.writeParquet(path.join(out, 'bad', 'nulls.parquet'));
  bad.push([path.join(out, 'bad', 'nulls.parquet'), 'x', 'null|row 37|column x|row group 0']);
  good.push([path.join(out, 'bad', 'nulls.parquet'), 'y',
    (() => { const f = path.join(out, 'ref', 'nulls__y.npy');
      npy(f, 'int32', 50, 1, Int32Array.from({ length: 50 }, (_, i) => i)); return f; })(), 'nulls_unselected',
    '--vars y']);
  // null_fill: the null of x served as -7, and columns with many nulls
  // (every 7th float, every 11th int64) over 1009 rows, zstd
  const fx = path.join(out, 'ref', 'nulls__x_fill.npy');
  npy(fx, 'int32', 50, 1, Int32Array.from({ length: 50 }, (_, i) => (i === 37 ? -7 : i)));
  good.push([path.join(out, 'bad', 'nulls.parquet'), 'x', fx, 'nulls_fill', '--null-fill -7']);
  const fv = values('float32', N), iv = values('int64', N);
  const nf = pl.DataFrame([
    pl.Series('f', Array.from(fv, (v, i) => (i % 7 === 3 ? null : v)), pl.Float32),
    pl.Series('l', Array.from(iv, (v, i) => (i % 11 === 0 ? null : Number(v))), pl.Int64)]);
  const fnf = path.join(out, 'polars_nulls.parquet');
  nf.writeParquet(fnf, { compression: 'zstd' });
  const rf = path.join(out, 'ref', 'polars_nulls__f.npy');
  npy(rf, 'float32', N, 1, Float32Array.from(fv, (v, i) => (i % 7 === 3 ? 0.5 : v)));
  good.push([fnf, 'f', rf, 'polars_nulls', '--null-fill 0.5 --vars f']);
  const rl = path.join(out, 'ref', 'polars_nulls__l.npy');
  npy(rl, 'int64', N, 1, BigInt64Array.from(iv, (v, i) => (i % 11 === 0 ? -3n : v)));
  good.push([fnf, 'l', rl, 'polars_nulls', '--null-fill -3 --vars l']);
  bad.push([fnf, 'l', 'null|row 0|column l|row group 0|null_fill']);
  // a fill value the column's dtype does not hold: its nulls refused
  bad.push([fnf, 'l', 'null_fill=1.5|column l|int64|row 0', '--null-fill 1.5']);
  // a column that does not exist (strings are ragged variables:
  // tests/ragged/parquet.sh)
  bad.push([path.join(out, 'polars_zstd.parquet'), 'nosuch', 'nosuch|i32']);
}

// ---- DuckDB ----
async function duckdb() {
  const { DuckDBInstance } = require('@duckdb/node-api');
  const db = await DuckDBInstance.create(':memory:');
  const c = await db.connect();
  const N = 5003;
  // the same formulas as values(), in SQL
  const x = '(7 * i + 1)';
  const sel = `SELECT ((${x} % 100) - 50)::TINYINT AS i8, (${x} % 250)::UTINYINT AS u8,
      ((${x} % 30000) - 15000)::SMALLINT AS i16, (${x} % 60000)::USMALLINT AS u16,
      (${x} % 2000000000)::INTEGER AS i32, (${x} % 4000000000)::UINTEGER AS u32,
      (${x}::BIGINT * 1000003 - 5000000)::BIGINT AS i64,
      (${x}::UBIGINT * 1000003 + (1::UBIGINT << 40))::UBIGINT AS u64,
      i::FLOAT AS f32, i::DOUBLE AS f64, (i % 3 = 0) AS b,
      [i::FLOAT, i + 0.25, i + 0.5, i + 0.75]::FLOAT[4] AS arr,
      'x' || i::VARCHAR AS s
    FROM range(${N}) t(i)`;
  const cols = [['i8', 'int8'], ['u8', 'uint8'], ['i16', 'int16'], ['u16', 'uint16'],
    ['i32', 'int32'], ['u32', 'uint32'], ['i64', 'int64'], ['u64', 'uint64'],
    ['f32', 'float32'], ['f64', 'float64'], ['b', 'bool'], ['arr', 'float32', 4]];
  for (const [codec, ver] of [['snappy', 'V1'], ['zstd', 'V1'], ['gzip', 'V1'],
    ['lz4_raw', 'V1'], ['uncompressed', 'V1'], ['zstd', 'V2'], ['snappy', 'V2']]) {
    const f = path.join(out, `duckdb_${codec}_${ver}.parquet`);
    await c.run(`COPY (${sel}) TO '${f}' (FORMAT parquet, COMPRESSION ${codec}, ROW_GROUP_SIZE 2048, PARQUET_VERSION ${ver})`);
    addGood(f, `duckdb_${codec}_${ver}`, cols, N);
  }
  // null_fill over data pages v2 and row groups of 2048 rows: every 13th
  // double is null (served as 2.25)
  const fn = path.join(out, 'duckdb_nulls_V2.parquet');
  await c.run(`COPY (SELECT CASE WHEN i % 13 = 5 THEN NULL ELSE i::DOUBLE END AS d FROM range(${N}) t(i))
    TO '${fn}' (FORMAT parquet, COMPRESSION snappy, ROW_GROUP_SIZE 2048, PARQUET_VERSION V2)`);
  const dn = path.join(out, 'ref', 'duckdb_nulls__d.npy');
  npy(dn, 'float64', N, 1, Float64Array.from({ length: N }, (_, i) => (i % 13 === 5 ? 2.25 : i)));
  good.push([fn, 'd', dn, 'duckdb_nulls_V2', '--null-fill 2.25']);
  // lists of varying length and strings: ragged variables
  // (tests/ragged/parquet.sh)
}

// ---- hyparquet-writer ----
async function hyparquet() {
  const { parquetWriteFile } = await import('hyparquet-writer');
  const N = 1201;
  const cd = (codec, enc) => [
    { name: 'i32', data: Array.from(values('int32', N)), type: 'INT32', nullable: false, encoding: enc.int },
    { name: 'i64', data: Array.from(values('int64', N)), type: 'INT64', nullable: false, encoding: enc.int },
    { name: 'f32', data: Array.from(values('float32', N)), type: 'FLOAT', nullable: false, encoding: enc.flt },
    { name: 'f64', data: Array.from(values('float64', N)), type: 'DOUBLE', nullable: false, encoding: enc.flt },
    { name: 'b', data: Array.from(values('bool', N), (v) => !!v), type: 'BOOLEAN', nullable: false },
    { name: 'h', data: Array.from(values('float32', N)), type: 'FLOAT16', nullable: false },
    { name: 's', data: Array.from({ length: N }, (_, i) => `v${i}`), type: 'STRING' },
  ];
  const cols = [['i32', 'int32'], ['i64', 'int64'], ['f32', 'float32'], ['f64', 'float64'], ['b', 'bool'],
    ['h', 'float16']];
  const encs = { plain: { int: 'PLAIN', flt: 'PLAIN' },
    delta: { int: 'DELTA_BINARY_PACKED', flt: 'BYTE_STREAM_SPLIT' } };
  for (const codec of ['SNAPPY', 'UNCOMPRESSED'])
    for (const e of ['plain', 'delta']) {
      const f = path.join(out, `hyparquet_${codec}_${e}.parquet`);
      parquetWriteFile({ filename: f, columnData: cd(codec, encs[e]), codec, rowGroupSize: 300, pageSize: 1000 });
      addGood(f, `hyparquet_${codec}_${e}`, cols, N);
    }
  // one row group of 300007 rows in pages of 100 kB (1.2 MB, 12 pages):
  // its pages are decoded on several threads
  const NB = 300007;
  const fb = path.join(out, 'hyparquet_big.parquet');
  parquetWriteFile({ filename: fb, rowGroupSize: 400000, pageSize: 100000,
    columnData: [{ name: 'big', data: Array.from(values('float32', NB)), type: 'FLOAT', nullable: false }] });
  bigs.push([fb, 'big', ref('hyparquet_big', 'big', 'float32', NB), 'hyparquet_big']);
  // a directory of parts (sorted order), also reached by glob and list
  const dir = path.join(out, 'parts');
  fs.mkdirSync(dir, { recursive: true });
  const sizes = [101, 233, 17];
  let first = 0;
  const all = [];
  for (let p = 0; p < sizes.length; p++) {
    const n = sizes[p];
    const v = Int32Array.from({ length: n }, (_, i) => 7 * (first + i) + 1);
    all.push(...v);
    parquetWriteFile({ filename: path.join(dir, `part-${String(p).padStart(5, '0')}.parquet`),
      columnData: [{ name: 'x', data: Array.from(v), type: 'INT32', nullable: false }], rowGroupSize: 50 });
    first += n;
  }
  const rx = path.join(out, 'ref', 'parts__x.npy');
  npy(rx, 'int32', first, 1, Int32Array.from(all));
  good.push([dir, 'x', rx, 'parts_dir']);
  good.push([path.join(dir, 'part-*.parquet'), 'x', rx, 'parts_glob']);
  fs.writeFileSync(path.join(out, 'parts.list'),
    sizes.map((_, p) => `parts/part-${String(p).padStart(5, '0')}.parquet`).join('\n') + '\n');
  good.push(['@' + path.join(out, 'parts.list'), 'x', rx, 'parts_list']);
  // a part with another schema
  const mix = path.join(out, 'bad', 'mixed');
  fs.mkdirSync(mix, { recursive: true });
  parquetWriteFile({ filename: path.join(mix, 'a.parquet'), columnData: [{ name: 'x', data: [1, 2], type: 'INT32', nullable: false }] });
  parquetWriteFile({ filename: path.join(mix, 'b.parquet'), columnData: [{ name: 'y', data: [1, 2], type: 'INT32', nullable: false }] });
  bad.push([mix, '-', 'b.parquet|share one schema']);
  return path.join(out, 'hyparquet_UNCOMPRESSED_plain.parquet');
}

// ---- parquet-wasm (Rust parquet) ----
async function parquetWasm() {
  const arrow = require('apache-arrow');
  const pw = require('parquet-wasm');
  const N = 997;
  const cols = [['i8', 'int8'], ['u16', 'uint16'], ['i32', 'int32'], ['i64', 'int64'],
    ['u64', 'uint64'], ['f32', 'float32'], ['f64', 'float64']];
  const data = {};
  for (const [c, t] of cols) data[c] = values(t, N);
  // low-cardinality floats: dictionary-encoded
  data.fd = Float32Array.from({ length: N }, (_, i) => (i % 7) / 2);
  const table = arrow.tableFromArrays(data);
  const ipc = arrow.tableToIPC(table, 'stream');
  const C = pw.Compression;
  for (const [name, codec, v2] of [['zstd', C.ZSTD, false], ['snappy', C.SNAPPY, true],
    ['lz4raw', C.LZ4_RAW, false], ['gzip', C.GZIP, true], ['none', C.UNCOMPRESSED, false]]) {
    let b = new pw.WriterPropertiesBuilder().setCompression(codec).setMaxRowGroupSize(250)
      .setDataPageSizeLimit(512).setDictionaryEnabled(true);
    if (v2) b = b.setWriterVersion(pw.WriterVersion.V2);
    // a dictionary of at most 256 bytes: the columns of many distinct
    // values fall back from dictionary to PLAIN pages mid-chunk
    if (name === 'zstd' || name === 'snappy') b = b.setDictionaryPageSizeLimit(256);
    const f = path.join(out, `wasm_${name}.parquet`);
    // writeParquet consumes its table: one per file
    fs.writeFileSync(f, pw.writeParquet(pw.Table.fromIPCStream(ipc), b.build()));
    addGood(f, `wasm_${name}`, cols, N);
    const d = path.join(out, 'ref', `wasm_${name}__fd.npy`);
    npy(d, 'float32', N, 1, data.fd);
    good.push([f, 'fd', d, `wasm_${name}`]);
  }
}

// ---- large row groups split at page starts (parquet-wasm) ----
// Row groups of 32768 rows (2 MiB of v, 2 MiB of dl) in pages of 1024 or
// 16384 rows, the last short: ferry reads them in pieces of 16384 rows at
// page starts, found from the offset index parquet-wasm writes; the _scan
// copies have their offset indexes zeroed, so ferry finds the pages from
// their headers.  v and dl are Arrow FixedSizeList columns (the
// ARROW:schema hint); in split_dict.parquet dl is dictionary-encoded
// (pieces read the dictionary page apart), v falls back to PLAIN
// mid-chunk at irregular pages (read whole).
async function wasmSplit() {
  const arrow = require('apache-arrow');
  const pw = require('parquet-wasm');
  const { parquetMetadata } = await import('hyparquet');
  const N = 70001;
  const fsl = (k, T, C, f) => {
    const vals = new C(N * k);
    for (let i = 0; i < N; i++) for (let j = 0; j < k; j++) vals[i * k + j] = f(i, j);
    const child = new arrow.Field('item', new T(), false);
    const flat = arrow.makeData({ type: new T(), length: N * k, data: vals });
    return [vals, arrow.makeVector(arrow.makeData({ type: new arrow.FixedSizeList(k, child), length: N,
      nullCount: 0, child: flat }))];
  };
  const [vv, v] = fsl(16, arrow.Float32, Float32Array, (i, j) => i + j / 4);
  const [dv, dl] = fsl(8, arrow.Float64, Float64Array, (i, j) => ((i + j) % 5) / 2);
  const x = values('int32', N);
  const ipc = arrow.tableToIPC(new arrow.Table({ v, dl, x: arrow.makeVector(x) }), 'stream');
  const refs = { v: path.join(out, 'ref', 'split__v.npy'), dl: path.join(out, 'ref', 'split__dl.npy'),
    x: path.join(out, 'ref', 'split__x.npy') };
  npy(refs.v, 'float32', N, 16, vv);
  npy(refs.dl, 'float64', N, 8, dv);
  npy(refs.x, 'int32', N, 1, x);
  for (const [name, codec, dict] of [['split_plain', pw.Compression.ZSTD, false],
    ['split_dict', pw.Compression.SNAPPY, true]]) {
    const b = new pw.WriterPropertiesBuilder().setCompression(codec).setMaxRowGroupSize(32768)
      .setDictionaryEnabled(dict).setDataPageSizeLimit(65536).build();
    const f = path.join(out, `${name}.parquet`);
    const buf = Buffer.from(pw.writeParquet(pw.Table.fromIPCStream(ipc), b));
    fs.writeFileSync(f, buf);
    // the same file without its offset indexes (zeroed: an empty struct)
    const md = parquetMetadata(buf.buffer.slice(buf.byteOffset, buf.byteOffset + buf.length));
    const z = Buffer.from(buf);
    for (const g of md.row_groups)
      for (const c of g.columns)
        if (c.offset_index_offset !== undefined)
          z.fill(0, Number(c.offset_index_offset), Number(c.offset_index_offset) + Number(c.offset_index_length));
    const fz = path.join(out, `${name}_scan.parquet`);
    fs.writeFileSync(fz, z);
    for (const [file, label] of [[f, name], [fz, `${name}_scan`]])
      for (const col of ['v', 'dl', 'x']) {
        good.push([file, col, refs[col], label]);
        if (col === 'dl' || (col === 'v' && !dict)) bigs.push([file, col, refs[col], label]);
      }
  }
}

// ---- the ARROW:schema hint (parquet-wasm) ----
// A FixedSizeList<float32, 13> column f: read as (N, 13), info says
// "fixed_size_list<13> (from ARROW:schema)".  Two copies with the hint's
// base64 changed in place (same length): listSize 13 made 14 (the rows
// disagree with the hint: f is refused, naming both), and the flatbuffer's
// root offset broken (the hint is a note; f is read by its value counts).
async function wasmHint() {
  const arrow = require('apache-arrow');
  const pw = require('parquet-wasm');
  const N = 101, K = 13;
  const vals = values('float32', N, K);
  const child = new arrow.Field('item', new arrow.Float32(), false);
  const flat = arrow.makeData({ type: new arrow.Float32(), length: N * K, data: vals });
  const f = arrow.makeVector(arrow.makeData({ type: new arrow.FixedSizeList(K, child), length: N,
    nullCount: 0, child: flat }));
  const x = values('int32', N);
  const ipc = arrow.tableToIPC(new arrow.Table({ f, x: arrow.makeVector(x) }), 'stream');
  const buf = Buffer.from(pw.writeParquet(pw.Table.fromIPCStream(ipc),
    new pw.WriterPropertiesBuilder().setMaxRowGroupSize(40).build()));
  const file = path.join(out, 'hint.parquet');
  fs.writeFileSync(file, buf);
  addGood(file, 'hint', [['f', 'float32', K], ['x', 'int32']], N);
  // the base64 text of the hint, found in the footer
  const flen = buf.readUInt32LE(buf.length - 8);
  const footer = buf.subarray(buf.length - 8 - flen, buf.length - 8).toString('latin1');
  const m = footer.match(/[A-Za-z0-9+/]{64,}={0,2}/);
  if (!m) throw new Error('no ARROW:schema in the footer');
  const at = buf.length - 8 - flen + m.index;
  const raw = Buffer.from(m[0], 'base64');
  const patch = (name, fn) => {
    const r = Buffer.from(raw);
    fn(r);
    const b64 = r.toString('base64');
    if (b64.length !== m[0].length) throw new Error('base64 length changed');
    const c = Buffer.from(buf);
    c.write(b64, at, 'latin1');
    const p = path.join(out, 'bad', name);
    fs.writeFileSync(p, c);
    return p;
  };
  // listSize: the only int32 13 of the message
  const hits = [];
  for (let i = 8; i + 4 <= raw.length; i++) if (raw.readInt32LE(i) === K) hits.push(i);
  if (hits.length !== 1) throw new Error(`listSize found ${hits.length} times`);
  const f14 = patch('hint14.parquet', (r) => r.writeInt32LE(K + 1, hits[0]));
  bad.push([f14, 'f', 'f|ARROW:schema|fixed_size_list<14>']);
  // the root offset of the flatbuffer (after 0xFFFFFFFF and the length)
  const fbad = patch('hintbad.parquet', (r) => r.writeUInt32LE(0x7ffffff0, 8));
  const r = path.join(out, 'ref', 'hintbad__f.npy');
  npy(r, 'float32', N, K, vals);
  good.push([fbad, 'f', r, 'hintbad']);
}

// ---- bad files cut from a good one ----
function badFiles(src) {
  const buf = fs.readFileSync(src);
  const b = (name, bytes, vars, words) => {
    const f = path.join(out, 'bad', name);
    fs.writeFileSync(f, bytes);
    bad.push([f, vars, words]);
  };
  b('truncated.parquet', buf.subarray(0, buf.length - 100), '-', 'not a Parquet file|PAR1');
  b('short.parquet', buf.subarray(0, 7), '-', 'not a Parquet file');
  const m1 = Buffer.from(buf); m1[0] = 0x51;
  b('badstart.parquet', m1, '-', 'PAR1|start');
  const m2 = Buffer.from(buf); m2[m2.length - 1] = 0x51;
  b('badend.parquet', m2, '-', 'PAR1|end');
  const m3 = Buffer.from(buf); m3.writeUInt32LE(buf.length, buf.length - 8);
  b('footerlen.parquet', m3, '-', 'footer length|past');
  const m4 = Buffer.from(buf);
  const flen = buf.readUInt32LE(buf.length - 8);
  for (let i = buf.length - 8 - flen; i < buf.length - 8; i += 3) m4[i] = 0xff;
  b('corrupt_footer.parquet', m4, '-', 'corrupt Parquet footer');
}

// A page header's compressed size made huge, and its uncompressed size
// changed by one: the first page of column i32 of a snappy file.
async function badPages() {
  const { parquetMetadata } = await import('hyparquet');
  const src = path.join(out, 'hyparquet_SNAPPY_plain.parquet');
  const buf = fs.readFileSync(src);
  const md = parquetMetadata(buf.buffer.slice(buf.byteOffset, buf.byteOffset + buf.length));
  const off = Number(md.row_groups[0].columns[0].meta_data.data_page_offset);
  // PageHeader: 0x15 type, 0x15 uncompressed_page_size, 0x15 compressed_page_size
  if (buf[off] !== 0x15 || buf[off + 2] !== 0x15) throw new Error('unexpected page header');
  let p = off + 3, u0 = p;
  while (buf[p] & 0x80) p++;
  const ulen = p - u0 + 1;
  p++;
  if (buf[p] !== 0x15) throw new Error('unexpected page header');
  const c0 = ++p;
  while (buf[p] & 0x80) p++;
  const m1 = Buffer.from(buf);
  for (let i = c0; i < p; i++) m1[i] = 0xfe;
  m1[p] = 0x7e;
  fs.writeFileSync(path.join(out, 'bad', 'pagesize.parquet'), m1);
  bad.push([path.join(out, 'bad', 'pagesize.parquet'), 'i32', 'runs past its column chunk|row group 0|i32']);
  const m2 = Buffer.from(buf);
  m2[u0] ^= 0x02;
  fs.writeFileSync(path.join(out, 'bad', 'usize.parquet'), m2);
  bad.push([path.join(out, 'bad', 'usize.parquet'), 'i32', 'SNAPPY|stated size|row group 0']);
  void ulen;
}

const which = new Set((process.env.FERRY_PARQUET_WRITERS || 'polars,duckdb,hyparquet,wasm').split(','));
const notes = [];
for (const [name, fn] of [['polars', polars], ['duckdb', duckdb], ['hyparquet', hyparquet], ['wasm', parquetWasm],
  ['wasm', wasmSplit], ['wasm', wasmHint]]) {
  if (!which.has(name)) continue;
  try {
    const r = await fn();
    if (name === 'hyparquet') {
      badFiles(r);
      await badPages();
    }
  } catch (e) {
    notes.push(`${name}: ${e && e.stack ? e.stack : e}`);
  }
}
fs.writeFileSync(path.join(out, 'good.txt'), good.map((r) => r.join('\t')).join('\n') + '\n');
fs.writeFileSync(path.join(out, 'big.txt'), bigs.map((r) => r.join('\t')).join('\n') + '\n');
fs.writeFileSync(path.join(out, 'bad.txt'), bad.map((r) => r.join('\t')).join('\n') + '\n');
if (notes.length) {
  console.error(notes.join('\n'));
  process.exit(1);
}
