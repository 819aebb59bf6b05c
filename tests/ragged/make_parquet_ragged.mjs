// make_parquet_ragged.mjs - Parquet files with ragged columns for
// tests/ragged/parquet.sh, written by the writers users have (installed by
// tests/parquet/setup.sh): nodejs-polars, @duckdb/node-api, hyparquet-writer
// and parquet-wasm (the Rust parquet crate, fed an apache-arrow table).
// Columns: lists of int32 and float32 of varying length (empty lists
// among them), strings (UTF-8, some empty, some not ASCII), binary, a
// low-cardinality string column (dictionary-encoded), and a list whose
// rows all hold 4 elements (served as a fixed (N, 4) variable).  Encodings
// of byte arrays: PLAIN, dictionary, DELTA_LENGTH_BYTE_ARRAY and
// DELTA_BYTE_ARRAY; data pages v1 and v2; several row groups; nulls served
// with null_fill.  Every column's values as the writer was given them go
// to OUTDIR/ref/NAME__COL.json ({dtype, values, offsets} for a ragged one,
// tests/parquet.sh turns them into .npz for tests/fixtures/dump_compare.py).
//
// Usage: node make_parquet_ragged.mjs OUTDIR
// OUTDIR/good.txt: FILE<TAB>COLUMN<TAB>REF.json[<TAB>OPTIONS] per line.
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';

// the packages live in tests/parquet/node_modules: resolved from there
const req = createRequire(new URL('../parquet/package.json', import.meta.url));
const nm = new URL('../parquet/node_modules/', import.meta.url).pathname;
const out = process.argv[2];
fs.mkdirSync(path.join(out, 'ref'), { recursive: true });
const good = [];

// ---- the values ----
const N = 5003;
const lenOf = (i) => (i * 7) % 13; // 0..12, empty when i % 13 == 0
const ids = (i) => Array.from({ length: lenOf(i) }, (_, j) => (i * 31 + j * 7) % 1000 - 500);
const emb = (i) => Array.from({ length: (i * 5) % 9 }, (_, j) => i + j / 8);
const text = (i) => (i % 23 === 0 ? '' : `s${i}:` + 'x'.repeat(i % 17) + (i % 10 === 3 ? 'é€' : ''));
const blob = (i) => Uint8Array.from({ length: (i * 5) % 11 }, (_, j) => (i + 3 * j) & 255);
const CATS = ['alpha', 'beta', '', 'gamma'];
const cat = (i) => CATS[i % 4];
const four = (i) => [i, i + 0.25, i + 0.5, i + 0.75];
// no empty list, no null: pages whose levels ferry walks without decoding
const toks = (i) => Array.from({ length: 1 + ((i * 7) % 13) }, (_, j) => (i * 17 + j) % 50000);
const rows = (f, n = N) => Array.from({ length: n }, (_, i) => f(i));

function ref(name, col, dtype, rs, kind = 'ragged') {
  const o = { dtype };
  if (kind === 'ragged') {
    o.values = [];
    o.offsets = [0];
    for (const r of rs) {
      const v = r === null ? [] : typeof r === 'string' ? Array.from(Buffer.from(r, 'utf8'))
        : Array.from(r);
      o.values.push(...v);
      o.offsets.push(o.values.length);
    }
  } else {
    o.values = rs.flat();
    o.k = rs[0].length;
  }
  const f = path.join(out, 'ref', `${name}__${col}.json`);
  fs.writeFileSync(f, JSON.stringify(o));
  return f;
}
function add(file, col, dtype, rs, opts = '', kind = 'ragged') {
  const name = path.basename(file).replace(/\.parquet$/, '');
  good.push([file, col, ref(name, col, dtype, rs, kind), opts].join('\t'));
}

// ---- Polars ----
function polars() {
  const pl = req('nodejs-polars');
  const df = pl.DataFrame([
    pl.Series('ids', rows(ids), pl.List(pl.Int32)),
    pl.Series('emb', rows(emb), pl.List(pl.Float32)),
    pl.Series('text', rows(text), pl.Utf8),
    pl.Series('cat', rows(cat), pl.Utf8),
    pl.Series('four', rows(four), pl.List(pl.Float32)),
    pl.Series('toks', rows(toks), pl.List(pl.Int32)),
  ]);
  for (const codec of ['uncompressed', 'zstd', 'snappy']) {
    const f = path.join(out, `polars_${codec}.parquet`);
    df.writeParquet(f, { compression: codec });
    add(f, 'ids', 'int32', rows(ids));
    add(f, 'emb', 'float32', rows(emb));
    add(f, 'text', 'uint8', rows(text));
    add(f, 'cat', 'uint8', rows(cat));
    add(f, 'four', 'float32', rows(four), '', 'fixed');
    add(f, 'toks', 'int32', rows(toks));
  }
  // nulls: null lists (i % 9 == 4), null elements (i % 7 == 3, element 1),
  // null strings (i % 11 == 5); nl: null lists only
  const M = 301;
  const nids = (i) => (i % 9 === 4 ? null
    : ids(i).map((v, j) => (i % 7 === 3 && j === 1 ? null : v)));
  const ntext = (i) => (i % 11 === 5 ? null : text(i));
  const nl = (i) => (i % 9 === 4 ? null : ids(i));
  const nf = pl.DataFrame([pl.Series('ids', rows(nids, M), pl.List(pl.Int32)),
    pl.Series('text', rows(ntext, M), pl.Utf8), pl.Series('nl', rows(nl, M), pl.List(pl.Int32))]);
  const f = path.join(out, 'polars_nulls.parquet');
  nf.writeParquet(f, { compression: 'zstd' });
  add(f, 'ids', 'int32', rows((i) => (nids(i) || []).map((v) => (v === null ? -9 : v)), M),
    '--null-fill -9');
  add(f, 'text', 'uint8', rows((i) => ntext(i) || '', M), '--null-fill 0');
  add(f, 'nl', 'int32', rows((i) => nl(i) || [], M), '--null-fill 0');
}

// ---- DuckDB ----
async function duckdb() {
  const { DuckDBInstance } = req('@duckdb/node-api');
  const db = await DuckDBInstance.create(':memory:');
  const c = await db.connect();
  // the same formulas, in SQL (list_transform over a range)
  const sel = `SELECT
      list_transform(range((i * 7) % 13), j -> ((i * 31 + j * 7) % 1000 - 500)::INTEGER) AS ids,
      list_transform(range((i * 5) % 9), j -> (i + j / 8)::FLOAT) AS emb,
      CASE WHEN i % 23 = 0 THEN '' ELSE 's' || i || ':' || repeat('x', (i % 17)::INTEGER)
        || CASE WHEN i % 10 = 3 THEN 'é€' ELSE '' END END AS text,
      ['alpha', 'beta', '', 'gamma'][(i % 4) + 1] AS cat
    FROM range(${N}) t(i)`;
  for (const [codec, ver] of [['snappy', 'V1'], ['zstd', 'V2'], ['uncompressed', 'V2']]) {
    const f = path.join(out, `duckdb_${codec}_${ver}.parquet`);
    await c.run(`COPY (${sel}) TO '${f}' (FORMAT parquet, COMPRESSION ${codec}, ROW_GROUP_SIZE 2048, PARQUET_VERSION ${ver})`);
    add(f, 'ids', 'int32', rows(ids));
    add(f, 'emb', 'float32', rows(emb));
    add(f, 'text', 'uint8', rows(text));
    add(f, 'cat', 'uint8', rows(cat));
  }
  // lists of 2 elements except rows 5 (3) and 6 (1): 2 values per row on
  // average in every row group, so only the lengths read at open tell
  // that it is ragged
  const fa = path.join(out, 'duckdb_avg2.parquet');
  await c.run(`COPY (SELECT CASE WHEN i = 5 THEN [1.0::FLOAT, 2.0, 3.0] WHEN i = 6 THEN [1.0::FLOAT]
      ELSE [i::FLOAT, 2.0] END AS v FROM range(20) t(i)) TO '${fa}' (FORMAT parquet)`);
  add(fa, 'v', 'float32', rows((i) => (i === 5 ? [1, 2, 3] : i === 6 ? [1] : [i, 2]), 20));
  // BLOB: binary bytes
  const fb = path.join(out, 'duckdb_blob.parquet');
  await c.run(`COPY (SELECT from_hex(CASE WHEN (i * 5) % 11 = 0 THEN '' ELSE
      list_aggregate(list_transform(range((i * 5) % 11), j -> lpad(to_hex(((i + 3 * j) % 256)::INTEGER), 2, '0')), 'string_agg', '') END) AS blob
    FROM range(${N}) t(i)) TO '${fb}' (FORMAT parquet, ROW_GROUP_SIZE 1000)`);
  add(fb, 'blob', 'uint8', rows(blob));
}

// ---- hyparquet-writer ----
async function hyparquet() {
  const { parquetWriteFile } = await import(path.join(nm, 'hyparquet-writer/src/node.js'));
  const M = 1201;
  for (const enc of ['PLAIN', 'RLE_DICTIONARY', 'DELTA_LENGTH_BYTE_ARRAY', 'DELTA_BYTE_ARRAY']) {
    for (const codec of ['UNCOMPRESSED', 'SNAPPY']) {
      const f = path.join(out, `hyparquet_${enc}_${codec}.parquet`);
      parquetWriteFile({
        filename: f, codec, rowGroupSize: 500, pageSize: 2000,
        columnData: [
          { name: 'text', data: rows(text, M), type: 'STRING', nullable: false, encoding: enc },
          { name: 'blob', data: rows(blob, M), type: 'BYTE_ARRAY', nullable: false,
            encoding: enc === 'RLE_DICTIONARY' ? 'PLAIN' : enc },
        ],
      });
      add(f, 'text', 'uint8', rows(text, M));
      add(f, 'blob', 'uint8', rows(blob, M));
    }
  }
  // a LIST of optional int32 through an explicit schema (3-level)
  const f = path.join(out, 'hyparquet_list.parquet');
  parquetWriteFile({
    filename: f, rowGroupSize: 400,
    columnData: [{ name: 'ids', data: rows(ids, M) }],
    schema: [
      { name: 'root', num_children: 1 },
      { name: 'ids', repetition_type: 'OPTIONAL', converted_type: 'LIST', num_children: 1 },
      { name: 'list', repetition_type: 'REPEATED', num_children: 1 },
      { name: 'element', type: 'INT32', repetition_type: 'OPTIONAL' },
    ],
  });
  add(f, 'ids', 'int32', rows(ids, M));
}

// ---- parquet-wasm (Rust parquet) ----
function parquetWasm() {
  const arrow = req('apache-arrow');
  const pw = req('parquet-wasm');
  const M = 997;
  const table = new arrow.Table({
    ids: arrow.vectorFromArray(rows(ids, M), new arrow.List(new arrow.Field('item', new arrow.Int32(), true))),
    text: arrow.vectorFromArray(rows(text, M), new arrow.Utf8()),
    blob: arrow.vectorFromArray(rows(blob, M), new arrow.Binary()),
    toks: arrow.vectorFromArray(rows(toks, M), new arrow.List(new arrow.Field('item', new arrow.Int32(), true))),
  });
  const ipc = arrow.tableToIPC(table, 'stream');
  const E = pw.Encoding;
  for (const [name, enc, v2] of [['delta_ba', E.DELTA_BYTE_ARRAY, true],
    ['delta_len', E.DELTA_LENGTH_BYTE_ARRAY, false], ['dict', null, true]]) {
    let b = new pw.WriterPropertiesBuilder().setCompression(pw.Compression.ZSTD)
      .setMaxRowGroupSize(300).setDataPageSizeLimit(512).setDictionaryEnabled(enc === null);
    if (enc !== null) b = b.setColumnEncoding('text', enc).setColumnEncoding('blob', enc);
    if (v2) b = b.setWriterVersion(pw.WriterVersion.V2);
    const f = path.join(out, `wasm_${name}.parquet`);
    fs.writeFileSync(f, pw.writeParquet(pw.Table.fromIPCStream(ipc), b.build()));
    add(f, 'ids', 'int32', rows(ids, M));
    add(f, 'text', 'uint8', rows(text, M));
    add(f, 'blob', 'uint8', rows(blob, M));
    add(f, 'toks', 'int32', rows(toks, M));
  }
}

polars();
await duckdb();
await hyparquet();
parquetWasm();
fs.writeFileSync(path.join(out, 'good.txt'), good.join('\n') + '\n');
console.log(`make_parquet_ragged.mjs: ${good.length} columns`);
