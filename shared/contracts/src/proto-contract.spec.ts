import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { create, toBinary } from '@bufbuild/protobuf';
import {
  BatchCreateProductsRequestSchema,
  bulkItemsInMessage,
  grpcFiles,
  grpcMethodScopes,
  grpcPathOf,
  grpcServices,
  IngestRecordsRequestSchema,
  UpsertProductsRequestSchema,
} from './grpc.js';
import { scopeNames } from './scopes.js';

const run = promisify(execFile);
/** dist/src → the package root, where buf.yaml and proto/ are. */
const packageRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
/** The buf binary the @bufbuild/buf package ships (no download at run time). */
const buf = path.join(path.dirname(createRequire(import.meta.url).resolve('@bufbuild/buf/package.json')), 'bin', 'buf');

async function bufSays(...args: string[]): Promise<{ code: number; output: string }> {
  try {
    const { stdout, stderr } = await run(buf, args, { cwd: packageRoot });
    return { code: 0, output: stdout + stderr };
  } catch (error) {
    const failed = error as { code?: number; stdout?: string; stderr?: string };
    return { code: failed.code ?? 1, output: `${failed.stdout ?? ''}${failed.stderr ?? ''}` };
  }
}

describe('the gRPC contract (proto/merx/v1)', function () {
  this.timeout(60_000);

  it('passes buf lint', async () => {
    const lint = await bufSays('lint');
    assert.equal(lint.code, 0, lint.output);
  });

  it('breaks nothing a client of the baseline relies on (buf breaking against proto/baseline.binpb)', async () => {
    const breaking = await bufSays('breaking', '--against', 'proto/baseline.binpb');
    assert.equal(breaking.code, 0, `${breaking.output}\nA breaking change needs a new package version (merx.v2), not an edit of merx.v1.`);
  });

  it('names a REST scope for every method', () => {
    const paths = Object.values(grpcServices).flatMap((service) => service.methods.map(grpcPathOf));
    assert.deepEqual(Object.keys(grpcMethodScopes).sort(), paths.sort());
    for (const scope of Object.values(grpcMethodScopes)) assert.ok((scopeNames as string[]).includes(scope), `${scope} is not a scope`);
    assert.ok(grpcFiles.length >= 4);
  });
});

describe('bulkItemsInMessage: the items a bulk message carries, read off its tags', () => {
  const upsert = '/merx.v1.ProductService/UpsertProducts';
  const ingest = '/merx.v1.RecordService/IngestRecords';

  it('counts a page by its entries and a lone item as one', () => {
    const page = toBinary(
      UpsertProductsRequestSchema,
      create(UpsertProductsRequestSchema, { products: [{ sku: 'A' }, { sku: 'B', attributes: { x: 'y' } }, {}] }),
    );
    assert.equal(bulkItemsInMessage(upsert, page), 3);
    assert.equal(bulkItemsInMessage(upsert, toBinary(UpsertProductsRequestSchema, create(UpsertProductsRequestSchema, { product: { sku: 'A' } }))), 1);
    // An empty message is still an item: the catalog answers it as a product without a sku.
    assert.equal(bulkItemsInMessage(upsert, new Uint8Array()), 1);
    const records = toBinary(
      IngestRecordsRequestSchema,
      create(IngestRecordsRequestSchema, { sourceId: 'src_x', records: [{ externalId: '1' }, { externalId: '2' }] }),
    );
    assert.equal(bulkItemsInMessage(ingest, records), 2);
    const batch = toBinary(
      BatchCreateProductsRequestSchema,
      create(BatchCreateProductsRequestSchema, { products: [{ sku: 'A' }, { sku: 'B' }, { sku: 'C' }, {}] }),
    );
    assert.equal(bulkItemsInMessage('/merx.v1.ProductService/BatchCreateProducts', batch), 4, 'a unary batch counts its products');
  });

  it('counts bytes that are no message as one item, for the service to refuse', () => {
    assert.equal(bulkItemsInMessage(upsert, Uint8Array.from([0x12, 0x7f, 0x01])), 1);
    assert.equal(bulkItemsInMessage(upsert, Uint8Array.from([0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff])), 1);
  });
});
