import { create } from '@bufbuild/protobuf';
import { timestampFromDate } from '@bufbuild/protobuf/wkt';
import {
  ExportProductsRequestSchema,
  IngestRecordsRequestSchema,
  IngestRecordsResponse_Status,
  ProductResult_Outcome,
  RecordType,
  StreamEventsRequestSchema,
  UpsertProductsRequestSchema,
  type ExportProductsResponse,
  type IngestRecordsResponse,
  type StreamEventsResponse,
  type UpsertProductsResponse,
} from '@merx/contracts/grpc';
import { grpc } from '@merx/kit';
import { call, createMerchant, issueToken } from '../src/harness/client.js';
import { bearer, bidiAll, grpcClients, serverStreamAll } from '../src/harness/grpc.js';
import type { Stack } from '../src/harness/stack.js';
import { measureAuditLag } from './audit-lag.js';
import { cpuSnapshot, cpuUsage, msPerOperation, type CpuUsage } from './cpu.js';
import { startDistributedMode, startWebhookReceiver, type RunningMode } from './processes.js';
import { ReceiverControl, WEBHOOK_BENCH_ENV } from './webhook-delivery.js';

export interface GrpcBenchDeps {
  started<T extends RunningMode>(start: Promise<T>): Promise<T>;
  progress(text: string): void;
  /** The same run's REST POST /api/v1/products through the gateway, products/s, when it was measured. */
  restPostPerSecond?: number;
}

/**
 * Items per scenario: BENCH_GRPC_ITEMS (default 100,000, issue 14's "a merchant loads 100,000
 * products over one gRPC stream"). A stream of 20,000 lasts two seconds, and warming up (the
 * services' JIT, the followers starting) is then much of what it measures.
 */
const items = Number(process.env.BENCH_GRPC_ITEMS ?? 100_000);
/** The page size the SDK and CLI ask for by default. */
const EXPORT_PAGE_SIZE = 500;
/** Items per UpsertProducts and IngestRecords message: pages, as a bulk client sends them; 0 sends one item per message. */
const WRITE_PAGE_SIZE = Number(process.env.BENCH_GRPC_WRITE_PAGE ?? 500);

/** The items in messages of WRITE_PAGE_SIZE (`page`), or one per message (`single`). */
function framed<Input, Request>(inputs: Input[], single: (input: Input) => Request, page: (inputs: Input[]) => Request): Request[] {
  if (WRITE_PAGE_SIZE <= 0) return inputs.map(single);
  const requests: Request[] = [];
  for (let first = 0; first < inputs.length; first += WRITE_PAGE_SIZE) requests.push(page(inputs.slice(first, first + WRITE_PAGE_SIZE)));
  return requests;
}
const writeFraming = () => (WRITE_PAGE_SIZE > 0 ? `in pages of ${WRITE_PAGE_SIZE}` : 'one per message');
/** Exports each way, alternated; the median is reported. */
const EXPORT_RUNS = 3;
const perSecond = (count: number, ms: number) => Math.round((count / ms) * 1000).toLocaleString('en-US');

/**
 * The gRPC sub-APIs end to end through the public port, on a fresh start of the mode with the
 * bulk class out of the way: products/s through UpsertProducts (answered once committed with their
 * events; in pages of BENCH_GRPC_WRITE_PAGE, as IngestRecords), ExportProducts (one product per message, then pages of 500), records/s through IngestRecords, and events/s through StreamEvents
 * reading back what the upsert announced. Returned as notes for the report.
 */
export async function benchGrpc(name: 'distributed', deps: GrpcBenchDeps): Promise<string[]> {
  const env = { MERX_THROTTLE_BULK: '{"sandbox":1000000,"standard":1000000,"scale":1000000}' };
  deps.progress(`${name} mode: gRPC (${items} items)`);
  const receiverProcess = await startWebhookReceiver();
  try {
    return await upsertExportIngestStream(name, env, receiverProcess.url, deps);
  } finally {
    await receiverProcess.stop();
  }
}

async function upsertExportIngestStream(name: 'distributed', env: Record<string, string>, receiverUrl: string, deps: GrpcBenchDeps): Promise<string[]> {
  const mode = await deps.started(startDistributedMode(env, WEBHOOK_BENCH_ENV));
  const stack = { baseUrl: mode.publicUrl, operatorToken: mode.operatorToken, grpcAddress: mode.grpcAddress } as Stack;
  const clients = grpcClients(stack);
  try {
    const token = mode.apiKey ? await issueToken(stack, mode.apiKey) : (await createMerchant(stack)).token;
    // One subscription to products.created: the webhooks half of "the audit log and webhooks keep up".
    const receiver = new ReceiverControl(receiverUrl);
    const subscribed = await call(stack, 'POST', '/api/v1/webhooks/subscriptions', {
      token,
      body: { url: `${receiverUrl}/hooks/grpc`, topics: ['products.created'] },
      unchecked: true,
    });
    if (subscribed.status !== 201) throw new Error(`could not subscribe the receiver: ${subscribed.status} ${subscribed.text}`);
    await receiver.settle();
    await receiver.reset(0);
    const startTime = new Date();
    const requests = framed(
      Array.from({ length: items }, (_, index) => ({ sku: `bench-grpc-${index}`, title: 'Bench', price: '19.99', currency: 'USD' })),
      (product) => create(UpsertProductsRequestSchema, { product }),
      (products) => create(UpsertProductsRequestSchema, { products }),
    );
    const named = { bench: process.pid, ...mode.processes };
    let cpuBefore = cpuSnapshot();
    let started = Date.now();
    const upserted = await bidiAll<UpsertProductsResponse>(clients.products, 'UpsertProducts', requests, bearer(token));
    const upsertMs = Date.now() - started;
    const upsertEnded = new Date();
    const upsertCpu = cpuUsage(cpuBefore, cpuSnapshot(), named, mode.databaseName);
    const results = upserted.flatMap((answer) => (answer.result ? [answer.result] : answer.results));
    if (results.length !== items || results.some((result) => result.outcome !== ProductResult_Outcome.CREATED))
      throw new Error('an upserted product was not created');

    // Both followers measured before the next scenario starts, so their figures are the upsert's alone.
    const audit = await measureAuditLag(mode.databaseUrl, upsertEnded, 300_000);
    const webhooks = await webhookLag(receiver, items, upsertEnded.getTime());
    // The whole pipeline's cost: from the upsert's start until audit and webhooks have every
    // product's event (the followers' catch-up included; so is the machine's idle burn meanwhile).
    const pipelineCpu = cpuUsage(cpuBefore, cpuSnapshot(), named, mode.databaseName);
    const pipelineMs = Date.now() - started;

    // Export both ways: one product per message (as before pages), then pages of EXPORT_PAGE_SIZE.
    const exportAll = async (pageSize: number) => {
      const before = cpuSnapshot();
      const began = Date.now();
      const messages = await serverStreamAll<ExportProductsResponse>(
        clients.products,
        'ExportProducts',
        create(ExportProductsRequestSchema, { pageSize }),
        bearer(token),
      );
      const ms = Date.now() - began;
      const count = messages.reduce((sum, message) => sum + (message.product ? 1 : message.products.length), 0);
      if (count !== items) throw new Error(`the export with page_size ${pageSize} gave ${count} products, not ${items}`);
      return { count, ms, cpu: cpuUsage(before, cpuSnapshot(), named, mode.databaseName) };
    };
    // Alternated, EXPORT_RUNS of each, the median kept: an export of N takes a second or two, so one
    // run alone is at the mercy of whatever else the machine does in that second.
    const oneRuns: Array<Awaited<ReturnType<typeof exportAll>>> = [];
    const pagedRuns: typeof oneRuns = [];
    for (let run = 0; run < EXPORT_RUNS; run += 1) {
      oneRuns.push(await exportAll(0));
      pagedRuns.push(await exportAll(EXPORT_PAGE_SIZE));
    }
    const median = (runs: typeof oneRuns) => [...runs].sort((a, b) => a.ms - b.ms)[Math.floor(runs.length / 2)]!;
    const exportedOne = median(oneRuns);
    const exportedPaged = median(pagedRuns);

    const source = await call(stack, 'POST', '/api/v1/sources', { token, body: { name: 'Bench', kind: 'storefront' }, unchecked: true });
    const occurTime = timestampFromDate(new Date());
    const records = framed(
      Array.from({ length: items }, (_, index) => ({ type: RecordType.ORDER, externalId: `bench-${index}`, occurTime, data: { total: 10, currency: 'USD' } })),
      (record) => create(IngestRecordsRequestSchema, { sourceId: source.body.id, record }),
      (page) => create(IngestRecordsRequestSchema, { sourceId: source.body.id, records: page }),
    );
    cpuBefore = cpuSnapshot();
    started = Date.now();
    const acks = await bidiAll<IngestRecordsResponse>(clients.records, 'IngestRecords', records, bearer(token));
    const ingestMs = Date.now() - started;
    const ingestCpu = cpuUsage(cpuBefore, cpuSnapshot(), named, mode.databaseName);
    const recordAcks = acks.flatMap((answer) => (answer.acks.length > 0 ? answer.acks : [answer]));
    if (recordAcks.length !== items || recordAcks.some((ack) => ack.status !== IngestRecordsResponse_Status.ACCEPTED))
      throw new Error('an ingested record was not accepted');

    // Every products.created of the upsert, read back from the start of the run.
    started = Date.now();
    const events = await new Promise<number>((resolve, reject) => {
      const stream: grpc.ClientReadableStream<StreamEventsResponse> = clients.events.StreamEvents(
        create(StreamEventsRequestSchema, { cursor: { case: 'startTime', value: timestampFromDate(startTime) }, topics: ['products.created'] }),
        bearer(token),
      );
      let seen = 0;
      stream.on('data', () => {
        seen += 1;
        if (seen === items) {
          stream.cancel();
          resolve(seen);
        }
      });
      stream.on('error', (error: grpc.ServiceError) => (error.code === grpc.status.CANCELLED ? undefined : reject(error)));
    });
    const eventsMs = Date.now() - started;
    const upsertPerSecond = (items / upsertMs) * 1000;
    const ratio = deps.restPostPerSecond
      ? ` — ${(upsertPerSecond / deps.restPostPerSecond).toFixed(1)}× the same run's REST POST (${Math.round(deps.restPostPerSecond).toLocaleString('en-US')} products/s)`
      : '';
    return [
      `gRPC, ${name}: UpsertProducts ${perSecond(items, upsertMs)} products/s (${items} ${writeFraming()} in ${upsertMs} ms, each answered once committed with its event; target ≥ 10,000)${ratio}; ` +
        `ExportProducts ${perSecond(exportedPaged.count, exportedPaged.ms)} products/s in pages of ${EXPORT_PAGE_SIZE} (target ≥ 50,000), ` +
        `${perSecond(exportedOne.count, exportedOne.ms)} products/s one per message (medians of ${EXPORT_RUNS} alternated runs: ` +
        `${pagedRuns.map((run) => run.ms).join(', ')} ms and ${oneRuns.map((run) => run.ms).join(', ')} ms); IngestRecords ${perSecond(items, ingestMs)} records/s ${writeFraming()} (target ≥ 5,000); ` +
        `StreamEvents ${perSecond(events, eventsMs)} events/s (the upsert's ${events} products.created, read back from the start of the run, including waiting for them to reach the events store).`,
      `gRPC upsert, followers: audit wrote ${audit.entries} entries at ${Math.round(audit.entriesPerSecond).toLocaleString('en-US')}/s, lag behind the event p50 ${Math.round(audit.lagP50Ms)} ms, p99 ${Math.round(audit.lagP99Ms)} ms, ` +
        `caught up ${Math.round(audit.catchUpMs)} ms after the last answer; webhooks delivered ${webhooks.delivered} products.created to one subscription, ` +
        `event-to-arrival p50 ${webhooks.p50 ?? 'n/a'} ms, p99 ${webhooks.p99 ?? 'n/a'} ms, caught up ${webhooks.catchUpMs} ms after the last answer. ` +
        `From the upsert's start until both had every event: ${pipelineMs} ms (${perSecond(items, pipelineMs)} products/s end to end), CPU ms per product ${cpuLine(pipelineCpu, items)}.`,
      `gRPC CPU ms per item while each call ran (sum = the run's own processes; other = the rest of the machine, steal = the hypervisor's): ` +
        `upsert ${cpuLine(upsertCpu, items)}; export in pages of ${EXPORT_PAGE_SIZE} ${cpuLine(exportedPaged.cpu, exportedPaged.count)}; ` +
        `export one per message ${cpuLine(exportedOne.cpu, exportedOne.count)}; ingest ${cpuLine(ingestCpu, items)}.`,
    ];
  } finally {
    clients.close();
    await mode.stop();
  }
}

/** CPU ms per item by process, busiest first, then the sum of the run's own and what the rest of the machine did meanwhile. */
function cpuLine(usage: CpuUsage | undefined, count: number): string {
  const perItem = usage && msPerOperation(usage, count);
  if (!perItem) return 'n/a (needs /proc)';
  const totals = ['sum', 'other', 'steal', 'total'];
  const processes = Object.entries(perItem)
    .filter(([name, ms]) => !totals.includes(name) && ms >= 0.005)
    .sort(([, a], [, b]) => b - a);
  return [...processes, ...totals.map((name) => [name, perItem[name] ?? 0] as const)].map(([name, ms]) => `${name} ${ms.toFixed(3)}`).join(', ');
}

/** Waits (bounded) until every product's products.created reached the receiver, then reads how late they came. */
async function webhookLag(
  receiver: ReceiverControl,
  expected: number,
  upsertEndedAt: number,
): Promise<{ delivered: number; p50: number | null; p99: number | null; catchUpMs: number }> {
  const deadline = Date.now() + 300_000;
  let count = await receiver.count();
  while (count.succeeded < expected) {
    if (Date.now() > deadline) throw new Error(`webhooks did not catch up: ${count.succeeded} of ${expected} deliveries`);
    await new Promise((resolve) => setTimeout(resolve, 200));
    count = await receiver.count();
  }
  const stats = await receiver.stats(0, Number.MAX_SAFE_INTEGER);
  const latency = stats.window.firstAttempt;
  return {
    delivered: count.succeeded,
    p50: latency.p50 === null ? null : Math.round(latency.p50),
    p99: latency.p99 === null ? null : Math.round(latency.p99),
    catchUpMs: Math.max(0, (count.lastArrivalAt ?? upsertEndedAt) - upsertEndedAt),
  };
}
