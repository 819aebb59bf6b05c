// bad_groups.mjs SRC DST COLUMN GROUP... - a copy of SRC (written by
// hyparquet-writer) whose column COLUMN has, in each row group GROUP, its
// first data page's uncompressed_page_size changed by one, so that the page
// does not decompress to its stated size (tests/parquet/parquet_pool.sh: the
// error of the first bad row group, whatever the decode threads' timing).
// A GROUP written G:P changes data page P (0-based, in chunk order) of row
// group G instead: the error of the first bad page of one row group.
import fs from 'node:fs';
import { parquetMetadata } from 'hyparquet';
// not among hyparquet's exports: reached by its file
const { parquetHeader } = await import(new URL('./node_modules/hyparquet/src/column.js', import.meta.url));

const [src, dst, column, ...groups] = process.argv.slice(2);
const buf = fs.readFileSync(src);
const md = parquetMetadata(buf.buffer.slice(buf.byteOffset, buf.byteOffset + buf.length));
const out = Buffer.from(buf);
for (const gp of groups) {
  const [g, page] = gp.split(':').map(Number);
  const rg = md.row_groups[g];
  const col = rg && rg.columns.find((c) => c.meta_data.path_in_schema.join('.') === column);
  if (!col) throw new Error(`no column ${column} in row group ${g}`);
  let off = Number(col.meta_data.data_page_offset);
  for (let k = 0; k < (page || 0); k++) {
    const reader = { view: new DataView(buf.buffer, buf.byteOffset, buf.length), offset: off };
    const h = parquetHeader(reader);
    if (!h.type.startsWith('DATA_PAGE')) throw new Error(`page ${k} of row group ${g} is a ${h.type}`);
    off = reader.offset + h.compressed_page_size;
  }
  // PageHeader: field 1 type (i32), field 2 uncompressed_page_size (i32)
  if (buf[off] !== 0x15 || buf[off + 2] !== 0x15) throw new Error('unexpected page header');
  out[off + 3] ^= 0x02;
  console.log(`${gp} ${off}`); // the page header's offset
}
fs.writeFileSync(dst, out);
