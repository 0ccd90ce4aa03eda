/** `merx import products FILE` and `merx export products` over the gRPC bulk API. */
import { once } from 'node:events';
import { createWriteStream } from 'node:fs';
import type { Command } from 'commander';
import cliProgress from 'cli-progress';
import pc from 'picocolors';
import { create } from '@bufbuild/protobuf';
import { timestampDate } from '@bufbuild/protobuf/wkt';
import type { Context } from '../context.js';
import { EXIT_API_ERROR, ReportedFailure, UsageError } from '../errors.js';
import { examples } from '../help.js';
import { GrpcCallError, GrpcClients, grpc, grpcErrorOf } from '../grpc.js';
import {
  ExportProductsRequestSchema,
  ProductResult_Outcome,
  ProductService,
  ProductStatus,
  UpsertProductsRequestSchema,
  type ExportProductsResponse,
  type Product,
  type ProductResult,
} from '../gen/merx/v1/products_pb.js';
import { formatOf, readProductLines, type LineFailure, type ProductLine } from '../product-lines.js';
import { groupAt } from './resources.js';

/** How many times a dropped or throttled stream is resumed from the first unanswered line. */
const MAX_RESUMES = 5;
/** Products per message of an export: framing one message per product costs several times more per product. */
const EXPORT_PAGE_SIZE = 500;

interface ImportSummary {
  file: string;
  lines: number;
  created: number;
  updated: number;
  unchanged: number;
  failed: number;
  failures: (LineFailure & { violations?: { field: string; code: string; message: string }[] })[];
}

const STATUS_NAMES: Record<number, string> = { [ProductStatus.DRAFT]: 'draft', [ProductStatus.ACTIVE]: 'active', [ProductStatus.ARCHIVED]: 'archived' };

/** A gRPC Product in the REST shape, so an export reads like `merx products list --json`. */
export function restProductOf(product: Product): Record<string, unknown> {
  return {
    id: product.id,
    object: 'product',
    sku: product.sku,
    title: product.title,
    description: product.description ?? null,
    price: product.price,
    currency: product.currency,
    status: STATUS_NAMES[product.status] ?? 'active',
    inventory_quantity: product.inventoryQuantity ?? null,
    attributes: product.attributes,
    version: product.version,
    created_at: product.createTime ? timestampDate(product.createTime).toISOString() : null,
    updated_at: product.updateTime ? timestampDate(product.updateTime).toISOString() : null,
  };
}

const csvCell = (value: unknown) => {
  const text = value === null || value === undefined ? '' : typeof value === 'object' ? JSON.stringify(value) : String(value);
  return /[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
};
const CSV_COLUMNS = [
  'id',
  'sku',
  'title',
  'description',
  'price',
  'currency',
  'status',
  'inventory_quantity',
  'attributes',
  'version',
  'created_at',
  'updated_at',
];

/** Lines per UpsertProducts message: one page each (the server takes up to 1,000). */
const IMPORT_PAGE_SIZE = 500;

/**
 * Sends `lines` (those that parsed) over one UpsertProducts stream, in pages, writing only as fast as the
 * server reads (it holds back a merchant over its bulk rate), and hands each result to `onResult`.
 * Returns how many items were answered, so a dropped stream resumes after them.
 */
async function upsertStream(
  clients: GrpcClients,
  items: ProductLine[],
  onResult: (result: ProductResult, item: ProductLine) => void,
  signal: AbortSignal,
): Promise<void> {
  const products = clients.client(ProductService);
  let answered = 0;
  await clients.withToken(async (metadata) => {
    const call = products.UpsertProducts(metadata) as grpc.ClientDuplexStream<unknown, { result?: ProductResult; results: ProductResult[] }>;
    const abort = () => call.cancel();
    signal.addEventListener('abort', abort, { once: true });
    const finished = new Promise<void>((resolve, reject) => {
      call.on('data', (message: { result?: ProductResult; results: ProductResult[] }) => {
        for (const result of message.result ? [message.result] : message.results) {
          const item = items[answered];
          answered += 1;
          if (item) onResult(result, item);
        }
      });
      call.on('error', (error: grpc.ServiceError) => reject(grpcErrorOf(error)));
      call.on('end', () => resolve());
    });
    finished.catch(() => undefined);
    try {
      const inputs = items.flatMap((item) => ('input' in item ? [item.input] : []));
      // Pages of IMPORT_PAGE_SIZE lines per message: framing a message per line was most of an import's cost.
      for (let first = 0; first < inputs.length; first += IMPORT_PAGE_SIZE) {
        if (signal.aborted) break;
        if (!call.write(create(UpsertProductsRequestSchema, { products: inputs.slice(first, first + IMPORT_PAGE_SIZE) }))) {
          await Promise.race([once(call, 'drain'), finished]);
        }
      }
      call.end();
      await finished;
    } finally {
      signal.removeEventListener('abort', abort);
    }
  });
}

export function addBulkCommands(program: Command, context: Context): void {
  groupAt(program, ['import'])
    .description('load many objects at once over the gRPC bulk API')
    .command('products <file>')
    .description('create or update products by sku from a CSV (header row) or JSON lines file; one result per line, a summary of every failed line')
    .option('--format <format>', 'csv or jsonl (else told by the file name)')
    .option('--from-line <n>', "skip the file's lines before this one (to resume an import that stopped)", (value) => {
      if (!/^\d+$/.test(value) || Number(value) < 1) throw new UsageError('--from-line takes a line number');
      return Number(value);
    })
    .option('--no-progress', 'no progress bar even on a terminal')
    .addHelpText(
      'after',
      `${examples('merx import products catalogue.csv', 'merx import products products.jsonl --json > summary.json', 'merx import products catalogue.csv --from-line 5001')}
CSV columns (JSON lines members): sku, title, price, currency (required), description, status
(draft|active|archived), inventory_quantity, attributes (a JSON object) or attributes.<key> columns.
Importing is idempotent by sku: a line sent again changes nothing. Exit 1 when any line failed.
`,
    )
    .action(async (file: string, options: { format?: string; fromLine?: number; progress: boolean }) => {
      const { output, session, streams } = context;
      const format = formatOf(file, options.format);
      const lines = readProductLines(file, format, options.fromLine);
      session.apiKey();
      const summary: ImportSummary = { file, lines: lines.length, created: 0, updated: 0, unchanged: 0, failed: 0, failures: [] };
      const showProgress = options.progress && Boolean(streams.stderr.isTTY);
      const started = Date.now();
      const bar = showProgress
        ? new cliProgress.SingleBar(
            {
              format: 'Importing |{bar}| {percentage}% | {value}/{total} lines | {rate} items/s | ETA {eta_formatted}',
              stream: streams.stderr,
              hideCursor: true,
              etaBuffer: 200,
            },
            cliProgress.Presets.shades_classic,
          )
        : undefined;
      bar?.start(lines.length, 0, { rate: '0' });
      const tick = () => bar?.increment(1, { rate: String(Math.round((bar.getProgress() * lines.length) / Math.max(0.001, (Date.now() - started) / 1000))) });
      const remaining: ProductLine[] = [];
      for (const item of lines) {
        if ('failure' in item) {
          summary.failures.push(item.failure);
          tick();
        } else remaining.push(item);
      }
      const controller = new AbortController();
      const interrupt = () => controller.abort();
      process.once('SIGINT', interrupt);
      process.once('SIGTERM', interrupt);
      const clients = new GrpcClients(session);
      let pending = remaining;
      let resumes = 0;
      try {
        for (;;) {
          let answered = 0;
          try {
            await upsertStream(
              clients,
              pending,
              (result, item) => {
                answered += 1;
                if (result.outcome === ProductResult_Outcome.CREATED) summary.created += 1;
                else if (result.outcome === ProductResult_Outcome.UPDATED) summary.updated += 1;
                else if (result.outcome === ProductResult_Outcome.UNCHANGED) summary.unchanged += 1;
                else {
                  summary.failures.push({
                    line: item.line,
                    sku: result.sku || null,
                    code: result.problem?.code ?? 'failed',
                    detail: result.problem?.detail ?? '',
                    ...(result.problem?.violations.length
                      ? { violations: result.problem.violations.map(({ field, code, message }) => ({ field, code, message })) }
                      : {}),
                  });
                }
                tick();
              },
              controller.signal,
            );
            pending = pending.slice(answered);
            if (controller.signal.aborted && pending.length) throw new GrpcCallError(grpc.status.CANCELLED, undefined, 'interrupted');
            break;
          } catch (error) {
            pending = pending.slice(answered);
            const retriable = error instanceof GrpcCallError && [grpc.status.UNAVAILABLE, grpc.status.RESOURCE_EXHAUSTED].includes(error.code);
            if (!retriable || controller.signal.aborted || resumes >= MAX_RESUMES || pending.length === 0) {
              bar?.stop();
              const next = pending[0]?.line;
              output.note(pc.red(`Import stopped: ${(error as Error).message}`));
              if (next !== undefined) output.note(`Resume with: merx import products ${file} --from-line ${next}   (lines sent again are not duplicated)`);
              throw new ReportedFailure(EXIT_API_ERROR);
            }
            resumes += 1;
            const waitSeconds = error.retryAfterSeconds ?? 2 ** resumes / 2;
            output.note(pc.yellow(`\n${error.message}; resuming at line ${pending[0]!.line} in ${waitSeconds} s`));
            await new Promise((resolve) => setTimeout(resolve, waitSeconds * 1000));
          }
        }
      } finally {
        process.off('SIGINT', interrupt);
        process.off('SIGTERM', interrupt);
        clients.close();
      }
      bar?.stop();
      summary.failures.sort((a, b) => a.line - b.line);
      summary.failed = summary.failures.length;
      const seconds = (Date.now() - started) / 1000;
      if (output.json) output.stdout.write(`${JSON.stringify(summary, null, 2)}\n`);
      else {
        output.stdout.write(
          `${pc.bold(`${summary.lines} lines`)} in ${seconds.toFixed(1)} s: ${pc.green(`${summary.created} created`)}, ${summary.updated} updated, ${summary.unchanged} unchanged, ${summary.failed ? pc.red(`${summary.failed} failed`) : '0 failed'}\n`,
        );
        for (const failure of summary.failures) {
          // The detail names the fields already; the violations are said only when it is empty.
          const violations = failure.detail ? undefined : failure.violations?.map((violation) => `${violation.field}: ${violation.message}`).join('; ');
          output.stdout.write(
            `  line ${failure.line}${failure.sku ? ` (${failure.sku})` : ''}: ${pc.red(failure.code)} ${failure.detail}${violations ? ` [${violations}]` : ''}\n`,
          );
        }
      }
      if (summary.failed) throw new ReportedFailure(EXIT_API_ERROR);
    });

  groupAt(program, ['export'])
    .description('read many objects at once over the gRPC bulk API')
    .command('products')
    .description('every product (or those matching the filters) once, oldest first, as JSON lines (or CSV) on stdout or into a file')
    .option('--status <status>', 'draft, active or archived')
    .option('--sku <sku>', 'only this sku')
    .option('--currency <code>', 'only products priced in this currency')
    .option('--format <format>', 'jsonl (default) or csv', 'jsonl')
    .option('-o, --output <file>', 'write here instead of stdout')
    .option('--page-size <n>', `products per gRPC message, 1 to 1000 (the output is the same; fewer per message is slower)`, String(EXPORT_PAGE_SIZE))
    .addHelpText('after', examples('merx export products > products.jsonl', 'merx export products --status active --format csv -o active.csv'))
    .action(async (options: { status?: string; sku?: string; currency?: string; format: string; output?: string; pageSize: string }) => {
      const { session, output } = context;
      if (options.format !== 'jsonl' && options.format !== 'csv') throw new UsageError('--format is jsonl or csv');
      const pageSize = Number(options.pageSize);
      if (!/^\d+$/.test(options.pageSize) || pageSize < 1) throw new UsageError('--page-size is a whole number of products, 1 to 1000');
      const statusValue =
        options.status === undefined
          ? ProductStatus.UNSPECIFIED
          : { draft: ProductStatus.DRAFT, active: ProductStatus.ACTIVE, archived: ProductStatus.ARCHIVED }[options.status];
      if (statusValue === undefined) throw new UsageError('--status is draft, active or archived');
      session.apiKey();
      const target: NodeJS.WritableStream = options.output ? createWriteStream(options.output) : output.stdout;
      const clients = new GrpcClients(session);
      let count = 0;
      try {
        if (options.format === 'csv') target.write(`${CSV_COLUMNS.join(',')}\n`);
        await clients.withToken(
          (metadata) =>
            new Promise<void>((resolve, reject) => {
              const request = create(ExportProductsRequestSchema, {
                status: statusValue,
                ...(options.sku ? { sku: options.sku } : {}),
                ...(options.currency ? { currency: options.currency } : {}),
                pageSize,
              });
              const stream = clients.client(ProductService).ExportProducts(request, metadata) as grpc.ClientReadableStream<ExportProductsResponse>;
              stream.on('data', (message: ExportProductsResponse) => {
                let text = '';
                // A server from before pages answers with `product`, one per message.
                for (const wire of message.product ? [message.product] : message.products) {
                  const product = restProductOf(wire);
                  text += options.format === 'csv' ? `${CSV_COLUMNS.map((column) => csvCell(product[column])).join(',')}\n` : `${JSON.stringify(product)}\n`;
                  count += 1;
                }
                if (!text) return;
                // A slow consumer (a pipe into another program) holds the server back instead of filling memory.
                if (!target.write(text)) {
                  stream.pause();
                  target.once('drain', () => stream.resume());
                }
              });
              stream.on('error', (error: grpc.ServiceError) => reject(grpcErrorOf(error)));
              stream.on('end', () => resolve());
            }),
        );
      } finally {
        clients.close();
        if (options.output) await new Promise((resolve) => (target as NodeJS.WritableStream & { end(cb: () => void): void }).end(() => resolve(undefined)));
      }
      output.note(pc.dim(`exported ${count} products${options.output ? ` to ${options.output}` : ''}`));
    });
}
