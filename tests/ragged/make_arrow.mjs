// make_arrow.mjs DIR - Arrow IPC fixtures for tests/ragged/arrow.sh, written
// by the npm apache-arrow package (tests/parquet/setup.sh installs it):
//
//   DIR/hf/data-00000-of-00001.arrow  an IPC stream as Hugging Face
//       datasets' save_to_disk writes one (with dataset_info.json and
//       state.json beside it): record batches of 100 rows, columns
//       input_ids list<int32>, attention_mask list<int8>, label int64,
//       text utf8, emb fixed_size_list<float32, 4>, keep bool (skipped:
//       bit-packed), maybe int32 with nulls (skipped)
//   DIR/file.arrow  the IPC file format (Feather v2): pts large_list<float32>,
//       blob large_binary, s large_utf8, b binary, u uint16, f64 float64;
//       record batches of 64 rows and a short last one
//   DIR/shards/data-0000K-of-00003.arrow  three streams of the same schema
//   DIR/lz4/data-00000-of-00001.arrow, DIR/zstd.arrow  the Hugging Face
//       stream with LZ4_FRAME body compression (npm lz4js) and the file
//       format with ZSTD (npm @bokuweb/zstd-wasm), when those packages are
//       installed (tests/parquet/package.json): the same columns, so the
//       same references; a buffer the writer cannot shrink is stored as it
//       is (decoded length -1), so both kinds of buffer occur.  apache-arrow
//       21 writes each compressed buffer's length prefix as its COMPRESSED
//       length (Message.fbs says: the uncompressed length; its own reader
//       ignores it), so fixPrefixes rewrites every prefix with the decoded
//       length, what Arrow C++ and pyarrow write; DIR/lz4_js.arrow keeps the
//       writer's bytes as they are, for the refusal
//   DIR/ref/NAME__COL.json  every served column's values as written:
//       {"dtype", "values": [...], "offsets": [...]} (offsets for ragged
//       columns, "k" for fixed-size lists); arrow.sh turns them into .npz
//   DIR/good.txt  "DATASET<TAB>COLUMN<TAB>REFS" per column to dump
//
// Every value comes from a seeded generator, so the fixtures are the same
// on every run.
import { mkdirSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const require = createRequire(join(here, "../parquet/node_modules/"));
const A = require("apache-arrow");

const dir = process.argv[2];
mkdirSync(join(dir, "hf"), { recursive: true });
mkdirSync(join(dir, "shards"), { recursive: true });
mkdirSync(join(dir, "ref"), { recursive: true });

let seed = 12345;
function rnd() { // a small LCG: the same fixtures every run
  seed = (seed * 1103515245 + 12345) % 2147483648;
  return seed / 2147483648;
}
const int = (lo, hi) => lo + Math.floor(rnd() * (hi - lo + 1));
const item = (t) => new A.Field("item", t, false);

function hfColumns(n, first) {
  const ids = [], mask = [], label = [], text = [], emb = [], keep = [];
  for (let i = 0; i < n; i++) {
    const len = int(0, 40);
    ids.push(Array.from({ length: len }, () => int(-100000, 100000)));
    mask.push(Array.from({ length: len }, () => int(0, 1)));
    label.push(BigInt(first + i) * 7n - 3n);
    text.push(Array.from({ length: int(0, 25) },
      () => String.fromCharCode(int(32, 126))).join("") + (i % 9 ? "" : "é✓"));
    emb.push(Array.from({ length: 4 }, () => Math.fround(rnd() * 10 - 5)));
    keep.push(i % 3 === 0);
  }
  return { ids, mask, label, text, emb, keep };
}

function hfTable(c) {
  return new A.Table({
    input_ids: A.vectorFromArray(c.ids, new A.List(item(new A.Int32()))),
    attention_mask: A.vectorFromArray(c.mask, new A.List(item(new A.Int8()))),
    label: A.vectorFromArray(c.label, new A.Int64()),
    text: A.vectorFromArray(c.text, new A.Utf8()),
    emb: A.vectorFromArray(c.emb, new A.FixedSizeList(4, item(new A.Float32()))),
    keep: A.vectorFromArray(c.keep, new A.Bool()),
  });
}

// A table of several record batches (the chunks of each column).
function batched(make, sizes) {
  let all = null;
  const cols = [];
  let first = 0;
  for (const n of sizes) {
    const c = make.columns(n, first);
    cols.push(c);
    const t = make.table(c);
    all = all ? all.concat(t) : t;
    first += n;
  }
  return { table: all, cols };
}

function concat(cols, key) {
  return cols.flatMap((c) => c[key]);
}

const refs = [];
function ref(name, col, dtype, rows, kind) {
  const out = { dtype };
  if (kind === "ragged") {
    const offsets = [0];
    const values = [];
    for (const r of rows) {
      const v = typeof r === "string" ? Array.from(Buffer.from(r, "utf8"))
        : r instanceof Uint8Array ? Array.from(r) : r;
      values.push(...v);
      offsets.push(values.length);
    }
    out.values = values;
    out.offsets = offsets;
  } else if (kind === "fixed") {
    out.values = rows.flat();
    out.k = rows.length ? rows[0].length : 0;
  } else {
    out.values = rows.map((x) => (typeof x === "bigint" ? x.toString() : x));
  }
  const f = join(dir, "ref", `${name}__${col}.json`);
  writeFileSync(f, JSON.stringify(out));
  return f;
}

// ---- the Hugging Face layout ----------------------------------------------
const hfMake = { columns: hfColumns, table: hfTable };
const hf = batched(hfMake, [100, 100, 100, 37]);
writeFileSync(join(dir, "hf", "data-00000-of-00001.arrow"),
  A.tableToIPC(hf.table, "stream"));
writeFileSync(join(dir, "hf", "dataset_info.json"), JSON.stringify({
  features: { input_ids: { feature: { dtype: "int32" }, _type: "Sequence" } },
}));
writeFileSync(join(dir, "hf", "state.json"), JSON.stringify({
  _data_files: [{ filename: "data-00000-of-00001.arrow" }],
}));
const hfd = join(dir, "hf");
refs.push([hfd, "input_ids", ref("hf", "input_ids", "int32", concat(hf.cols, "ids"), "ragged")]);
refs.push([hfd, "attention_mask", ref("hf", "attention_mask", "int8", concat(hf.cols, "mask"), "ragged")]);
refs.push([hfd, "label", ref("hf", "label", "int64", concat(hf.cols, "label"), "dense")]);
refs.push([hfd, "text", ref("hf", "text", "uint8", concat(hf.cols, "text"), "ragged")]);
refs.push([hfd, "emb", ref("hf", "emb", "float32", concat(hf.cols, "emb"), "fixed")]);

// ---- the file format, large types -----------------------------------------
function fileColumns(n, first) {
  const pts = [], blob = [], s = [], b = [], u = [], f64 = [];
  for (let i = 0; i < n; i++) {
    pts.push(Array.from({ length: int(0, 12) }, () => Math.fround(rnd() * 100)));
    blob.push(Uint8Array.from({ length: int(0, 30) }, () => int(0, 255)));
    s.push("row " + (first + i) + " " + "x".repeat(int(0, 5)));
    b.push(Uint8Array.from({ length: int(1, 8) }, () => int(0, 255)));
    u.push(int(0, 65535));
    f64.push(rnd() * 1e6 - 5e5);
  }
  return { pts, blob, s, b, u, f64 };
}
function fileTable(c) {
  return new A.Table({
    pts: A.vectorFromArray(c.pts, new A.LargeList(item(new A.Float32()))),
    blob: A.vectorFromArray(c.blob, new A.LargeBinary()),
    s: A.vectorFromArray(c.s, new A.LargeUtf8()),
    b: A.vectorFromArray(c.b, new A.Binary()),
    u: A.vectorFromArray(c.u, new A.Uint16()),
    f64: A.vectorFromArray(c.f64, new A.Float64()),
  });
}
const fl = batched({ columns: fileColumns, table: fileTable }, [64, 64, 64, 13]);
const ff = join(dir, "file.arrow");
writeFileSync(ff, A.tableToIPC(fl.table, "file"));
refs.push([ff, "pts", ref("file", "pts", "float32", concat(fl.cols, "pts"), "ragged")]);
refs.push([ff, "blob", ref("file", "blob", "uint8", concat(fl.cols, "blob"), "ragged")]);
refs.push([ff, "s", ref("file", "s", "uint8", concat(fl.cols, "s"), "ragged")]);
refs.push([ff, "b", ref("file", "b", "uint8", concat(fl.cols, "b"), "ragged")]);
refs.push([ff, "u", ref("file", "u", "uint16", concat(fl.cols, "u"), "dense")]);
refs.push([ff, "f64", ref("file", "f64", "float64", concat(fl.cols, "f64"), "dense")]);

// ---- three shards of one schema --------------------------------------------
const shardRefs = [];
for (let k = 0; k < 3; k++) {
  const sh = batched(hfMake, [50 + 10 * k, 20]);
  const f = join(dir, "shards", `data-0000${k}-of-00003.arrow`);
  writeFileSync(f, A.tableToIPC(sh.table, "stream"));
  shardRefs.push(ref(`shard${k}`, "input_ids", "int32", concat(sh.cols, "ids"), "ragged"));
}
refs.push([join(dir, "shards"), "input_ids", shardRefs.join(",")]);

// ---- compressed bodies (LZ4 frame, zstd) -------------------------------------
let lz4 = null, zstd = null;
try { lz4 = require("lz4js"); } catch { lz4 = null; }
try {
  zstd = require("@bokuweb/zstd-wasm");
  await zstd.init();
} catch { zstd = null; }
// Walk the messages of an IPC stream (or a file: after its 8-byte magic)
// and set each compressed buffer's int64 prefix to its decoded length.
function fixPrefixes(bytes, file, decode) {
  const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let pos = file ? 8 : 0;
  while (pos + 8 <= bytes.length) {
    let len = dv.getUint32(pos, true), at = pos + 4;
    if (len === 0xFFFFFFFF) { len = dv.getUint32(pos + 4, true); at = pos + 8; }
    if (len === 0) break;
    const msg = A.Message.decode(bytes.subarray(at, at + len));
    const body = at + len, blen = Number(msg.bodyLength);
    if (msg.isRecordBatch() && msg.header().compression) {
      for (const b of msg.header().buffers) {
        const o = body + Number(b.offset), n = Number(b.length);
        if (n < 8 || dv.getBigInt64(o, true) === -1n) continue;
        const dec = decode(bytes.subarray(o + 8, o + n));
        dv.setBigInt64(o, BigInt(dec.length), true);
      }
    }
    pos = body + blen;
  }
  return bytes;
}

if (lz4 && zstd) {
  A.compressionRegistry.set(A.CompressionType.LZ4_FRAME, {
    encode: (d) => Uint8Array.from(lz4.compress(d)),
    decode: (d) => Uint8Array.from(lz4.decompress(d)),
  });
  A.compressionRegistry.set(A.CompressionType.ZSTD, {
    encode: (d) => zstd.compress(d, 3),
    decode: (d) => zstd.decompress(d),
  });
  mkdirSync(join(dir, "lz4"), { recursive: true });
  const lf = join(dir, "lz4", "data-00000-of-00001.arrow");
  const lbytes = A.RecordBatchStreamWriter.writeAll(hf.table,
    { compressionType: A.CompressionType.LZ4_FRAME }).toUint8Array(true);
  writeFileSync(join(dir, "lz4_js.arrow"), lbytes);
  writeFileSync(lf, fixPrefixes(Uint8Array.from(lbytes), false,
    (b) => lz4.decompress(b)));
  const zf = join(dir, "zstd.arrow");
  writeFileSync(zf, fixPrefixes(A.RecordBatchFileWriter.writeAll(fl.table,
    { compressionType: A.CompressionType.ZSTD }).toUint8Array(true), true,
    (b) => zstd.decompress(b)));
  for (const [col, name] of [["input_ids", "input_ids"], ["attention_mask", "attention_mask"],
    ["label", "label"], ["text", "text"], ["emb", "emb"]])
    refs.push([lf, col, join(dir, "ref", `hf__${name}.json`)]);
  for (const col of ["pts", "blob", "s", "b", "u", "f64"])
    refs.push([zf, col, join(dir, "ref", `file__${col}.json`)]);
  console.log("make_arrow.mjs: compressed copies (lz4 frame, zstd) written");
}

writeFileSync(join(dir, "good.txt"),
  refs.map((r) => r.join("\t")).join("\n") + "\n");
console.log(`make_arrow.mjs: ${refs.length} columns in ${dir}`);
