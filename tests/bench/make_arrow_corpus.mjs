// make_arrow_corpus.mjs DIR N - the same token sequences twice, for the
// Arrow benchmark of tests/bench/megatron.sh (docs/performance.md): as a
// Hugging Face save_to_disk shard, DIR/hf/data-00000-of-00001.arrow (an
// IPC stream of record batches of 1000 rows, one column input_ids
// list<int32>, written by the npm apache-arrow package), and as a
// Megatron-LM indexed dataset DIR/meg/corpus.bin + .idx (the bytes of
// docs/ragged.md's table), and as Parquet files of the same table written
// by parquet-wasm (the Rust parquet crate; row groups of 100,000 rows,
// pages of 1 MiB): DIR/pq/plain.parquet uncompressed, DIR/pqs/snappy.parquet
// snappy-compressed (pyarrow's default codec), and DIR/pqb/binary.parquet, a
// binary column of the same bytes (byte arrays).  N sequences of log-normal lengths (mean 16,
// sigma 0.6, at least 1), tokens (i + k) mod 2^31.
import { mkdirSync, openSync, writeSync, closeSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const require = createRequire(join(here, "../parquet/node_modules/"));
const A = require("apache-arrow");
const [dir, nArg] = process.argv.slice(2);
const N = Number(nArg || 2000000);
mkdirSync(join(dir, "hf"), { recursive: true });
mkdirSync(join(dir, "meg"), { recursive: true });

let seed = 7;
const rnd = () => ((seed = (seed * 1103515245 + 12345) % 2147483648) + 0.5) / 2147483648;
const lens = new Int32Array(N);
let total = 0;
for (let i = 0; i < N; i++) {
  const z = Math.sqrt(-2 * Math.log(rnd())) * Math.cos(2 * Math.PI * rnd());
  lens[i] = Math.max(1, Math.round(Math.exp(Math.log(16) - 0.18 + 0.6 * z)));
  total += lens[i];
}
const tokens = new Int32Array(total);
const offsets = new Int32Array(N + 1);
for (let i = 0, at = 0; i < N; i++) {
  offsets[i] = at;
  for (let k = 0; k < lens[i]; k++) tokens[at++] = (i + k) % 2147483648;
  offsets[i + 1] = at;
}

// Arrow: record batches of 1000 rows, each its own offsets from 0.
const batches = [];
const field = new A.Field("item", new A.Int32(), false);
for (let b0 = 0; b0 < N; b0 += 1000) {
  const b1 = Math.min(N, b0 + 1000);
  const o = new Int32Array(b1 - b0 + 1);
  for (let i = b0; i <= b1; i++) o[i - b0] = offsets[i] - offsets[b0];
  const child = A.makeData({ type: new A.Int32(), length: o[b1 - b0],
    data: tokens.subarray(offsets[b0], offsets[b1]) });
  const list = A.makeData({ type: new A.List(field), length: b1 - b0,
    nullCount: 0, valueOffsets: o, child });
  const schema = new A.Schema([new A.Field("input_ids", new A.List(field), false)]);
  batches.push(new A.RecordBatch(schema, A.makeData({ type: new A.Struct(schema.fields),
    length: b1 - b0, nullCount: 0, children: [list] })));
}
const table = new A.Table(batches);
const fd = openSync(join(dir, "hf", "data-00000-of-00001.arrow"), "w");
const w = A.RecordBatchStreamWriter.writeAll(table);
writeSync(fd, w.toUint8Array(true));
closeSync(fd);

// Megatron: .bin, then .idx (header, lengths, pointers, document indices).
const bin = openSync(join(dir, "meg", "corpus.bin"), "w");
writeSync(bin, new Uint8Array(tokens.buffer));
closeSync(bin);
const head = Buffer.alloc(34);
head.write("MMIDIDX\0\0", 0, "latin1");
head.writeBigUInt64LE(1n, 9);
head.writeUInt8(4, 17);
head.writeBigUInt64LE(BigInt(N), 18);
head.writeBigUInt64LE(BigInt(N + 1), 26);
const ptrs = new BigInt64Array(N);
for (let i = 0; i < N; i++) ptrs[i] = BigInt(offsets[i]) * 4n;
const docs = new BigInt64Array(N + 1);
for (let i = 0; i <= N; i++) docs[i] = BigInt(i);
const idx = openSync(join(dir, "meg", "corpus.idx"), "w");
writeSync(idx, head);
writeSync(idx, new Uint8Array(lens.buffer));
writeSync(idx, new Uint8Array(ptrs.buffer));
writeSync(idx, new Uint8Array(docs.buffer));
closeSync(idx);

// Parquet (parquet-wasm consumes its table: one per file).
const pw = require("parquet-wasm");
const ipc = A.tableToIPC(table, "stream");
for (const [sub, name, codec] of [["pq", "plain", pw.Compression.UNCOMPRESSED],
  ["pqs", "snappy", pw.Compression.SNAPPY]]) {
  mkdirSync(join(dir, sub), { recursive: true });
  const props = new pw.WriterPropertiesBuilder().setCompression(codec)
    .setMaxRowGroupSize(100000).setDataPageSizeLimit(1 << 20)
    .setDictionaryEnabled(false).build();
  const f = openSync(join(dir, sub, `${name}.parquet`), "w");
  writeSync(f, pw.writeParquet(pw.Table.fromIPCStream(ipc), props));
  closeSync(f);
}
// Parquet byte arrays: the same bytes as a binary column `text` (each
// row the little-endian bytes of its int32 tokens), PLAIN, uncompressed.
{
  const bt = [];
  const u8 = new Uint8Array(tokens.buffer);
  for (let b0 = 0; b0 < N; b0 += 1000) {
    const b1 = Math.min(N, b0 + 1000);
    const o = new Int32Array(b1 - b0 + 1);
    for (let i = b0; i <= b1; i++) o[i - b0] = 4 * (offsets[i] - offsets[b0]);
    const schema = new A.Schema([new A.Field("text", new A.Binary(), false)]);
    const col = A.makeData({ type: new A.Binary(), length: b1 - b0, nullCount: 0,
      valueOffsets: o, data: u8.subarray(4 * offsets[b0], 4 * offsets[b1]) });
    bt.push(new A.RecordBatch(schema, A.makeData({ type: new A.Struct(schema.fields),
      length: b1 - b0, nullCount: 0, children: [col] })));
  }
  mkdirSync(join(dir, "pqb"), { recursive: true });
  const props = new pw.WriterPropertiesBuilder()
    .setCompression(pw.Compression.UNCOMPRESSED).setMaxRowGroupSize(100000)
    .setDataPageSizeLimit(1 << 20).setDictionaryEnabled(false).build();
  const f = openSync(join(dir, "pqb", "binary.parquet"), "w");
  const bipc = A.tableToIPC(new A.Table(bt), "stream");
  writeSync(f, pw.writeParquet(pw.Table.fromIPCStream(bipc), props));
  closeSync(f);
}
console.log(`make_arrow_corpus.mjs: ${N} sequences, ${total} tokens, in ${dir}/hf and ${dir}/meg`);
