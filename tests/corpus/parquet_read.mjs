// parquet_read.mjs - the corpus' reference reader of Parquet files
// (tests/corpus/corpus.py): the npm hyparquet package, an implementation of
// Parquet independent of ferry's.  Prints one JSON object: each column
// asked for, its values in row order -- numbers (-0 and non-finite ones as
// the strings "-0", "NaN", "Infinity", "-Infinity"), 64-bit integers as decimal
// strings, booleans, byte arrays as {"b64": ...} (strings too: their bytes,
// never decoded), lists as arrays, null as null.
//
// Usage: node parquet_read.mjs NODE_MODULES FILE COLUMN[,COLUMN...]
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

const [nm, file, cols] = process.argv.slice(2);
const hq = await import(pathToFileURL(join(nm, 'hyparquet', 'src', 'index.js')).href);
const buf = readFileSync(file);
const ab = buf.buffer.slice(buf.byteOffset, buf.byteOffset + buf.byteLength);
const raw = (b) => b; // keep a byte array's bytes
const rows = await hq.parquetReadObjects({
  file: ab, columns: cols.split(','), utf8: false,
  parsers: { stringFromBytes: raw, jsonFromBytes: raw, geometryFromBytes: raw,
    geographyFromBytes: raw, uuidFromBytes: raw },
});
function enc(v) {
  if (v === null || v === undefined) return null;
  if (typeof v === 'bigint') return v.toString();
  if (typeof v === 'number') /* JSON keeps neither -0 nor non-finite ones */
    return Object.is(v, -0) ? '-0' : Number.isFinite(v) ? v : String(v);
  if (typeof v === 'boolean') return v;
  if (v instanceof Uint8Array) return { b64: Buffer.from(v).toString('base64') };
  if (Array.isArray(v) || ArrayBuffer.isView(v)) return Array.from(v, enc);
  throw new Error(`a value of type ${Object.prototype.toString.call(v)}`);
}
const out = {};
for (const c of cols.split(',')) out[c] = rows.map((r) => enc(r[c]));
process.stdout.write(JSON.stringify(out));
