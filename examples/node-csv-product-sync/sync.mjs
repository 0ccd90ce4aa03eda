// Syncs products from a CSV file into Merx: creates the SKUs that are new, updates the ones whose
// title, price, currency or stock changed, and leaves the rest alone. Prints progress on stderr
// and a JSON summary on stdout; exits 1 when a row failed.
//
//   MERX_API_KEY=mx_test_... node sync.mjs products.csv
//
// Columns: sku, title, price (a decimal string), currency, inventory_quantity (empty: not tracked).
import { createReadStream } from 'node:fs';
import { parse } from 'csv-parse';
import Merx, { MerxError } from '@merx/sdk';

const file = process.argv[2];
if (!file) {
  console.error('usage: node sync.mjs FILE.csv');
  process.exit(2);
}
const merx = new Merx(); // MERX_API_KEY and MERX_BASE_URL from the environment

// What is there now, by SKU: `for await` walks every page.
const existing = new Map();
for await (const product of merx.products.list({ limit: 100 })) existing.set(product.sku, product);

const summary = { rows: 0, created: 0, updated: 0, unchanged: 0, failed: [] };
const progress = () =>
  process.stderr.write(
    `\r${summary.rows} rows: ${summary.created} created, ${summary.updated} updated, ${summary.unchanged} unchanged, ${summary.failed.length} failed`,
  );

const rows = createReadStream(file).pipe(parse({ columns: true, skip_empty_lines: true, trim: true }));
for await (const row of rows) {
  summary.rows += 1;
  const line = summary.rows + 1; // the header is line 1
  const wanted = {
    title: row.title,
    price: row.price,
    currency: row.currency,
    inventory_quantity: row.inventory_quantity === '' || row.inventory_quantity === undefined ? null : Number(row.inventory_quantity),
  };
  try {
    const listed = existing.get(row.sku);
    if (!listed) {
      // A retried create carries the same Idempotency-Key (the SDK adds one), so it never creates twice.
      await merx.products.create({ sku: row.sku, ...wanted });
      summary.created += 1;
    } else if (Object.entries(wanted).some(([field, value]) => listed[field] !== value)) {
      // If-Match with the version just read: a change made in between is a 412, not silently overwritten.
      const current = await merx.products.retrieve(listed.id);
      await merx.products.update(current.id, wanted, { ifMatch: current.lastResponse.etag });
      summary.updated += 1;
    } else {
      summary.unchanged += 1;
    }
  } catch (error) {
    if (!(error instanceof MerxError)) throw error;
    summary.failed.push({ line, sku: row.sku, status: error.status ?? null, code: error.code ?? null, detail: error.detail ?? error.message });
  }
  progress();
}
process.stderr.write('\n');
console.log(JSON.stringify(summary));
process.exitCode = summary.failed.length ? 1 : 0;
