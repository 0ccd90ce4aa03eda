/** `merx listen`, `merx events tail`, `merx webhooks deliveries tail`, `merx trigger`. */
import type { Command } from 'commander';
import pc from 'picocolors';
import { create } from '@bufbuild/protobuf';
import { timestampDate, timestampFromDate } from '@bufbuild/protobuf/wkt';
import type { Context } from '../context.js';
import { UsageError } from '../errors.js';
import { examples } from '../help.js';
import { claimsOf } from '../session.js';
import { EventService, StreamEventsRequestSchema, type Event } from '../gen/merx/v1/events_pb.js';
import { GrpcClients, grpc, grpcErrorOf } from '../grpc.js';
import { forward, newSessionSecret, type StreamedEvent } from '../forwarding.js';
import { groupAt } from './resources.js';
import { TRIGGERS, trigger } from '../triggers.js';

/** `10m`, `2h`, `30s`, `1d`, or an ISO 8601 time: when to start from. */
export function parseSince(value: string): Date {
  const relative = /^(\d+)(s|m|h|d)$/.exec(value);
  if (relative) return new Date(Date.now() - Number(relative[1]) * { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 }[relative[2] as 's' | 'm' | 'h' | 'd']);
  const time = new Date(value);
  if (Number.isNaN(time.getTime())) throw new UsageError(`--since takes a duration (30s, 10m, 2h, 1d) or an ISO 8601 time, not ${value}`);
  return time;
}

const listOf = (value: string, previous: string[] = []) => [
  ...previous,
  ...value
    .split(',')
    .map((item) => item.trim())
    .filter(Boolean),
];
const positive = (flag: string) => (value: string) => {
  if (!/^\d+$/.test(value) || Number(value) < 1) throw new UsageError(`${flag} takes a whole number of at least 1`);
  return Number(value);
};

interface FollowOptions {
  topics?: string[];
  since?: string;
  after?: string;
  maxEvents?: number;
}

function streamedEventOf(event: Event): StreamedEvent {
  return {
    id: event.id,
    topic: event.type,
    created_at: (event.createTime ? timestampDate(event.createTime) : new Date()).toISOString(),
    data: event.data ?? {},
  };
}

/**
 * Follows the merchant's event stream until interrupted (or `maxEvents`), handing each event to
 * `onEvent` in order; a dropped stream is resumed after the last event received, so nothing is
 * missed or repeated.
 */
async function followEvents(context: Context, options: FollowOptions, onEvent: (event: StreamedEvent) => Promise<void>, onReady: () => void): Promise<void> {
  const clients = new GrpcClients(context.session);
  const events = clients.client(EventService);
  let lastId = options.after;
  // From the moment the command started, not from when the server took the call: an event made
  // while the stream was being set up is still printed.
  const startedAt = new Date();
  let count = 0;
  let stopped = false;
  let current: grpc.ClientReadableStream<unknown> | undefined;
  const stop = () => {
    stopped = true;
    current?.cancel();
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  let attempt = 0;
  let readyAnnounced = false;
  try {
    while (!stopped) {
      const request = create(StreamEventsRequestSchema, {
        topics: options.topics ?? [],
        cursor: lastId
          ? { case: 'afterEventId', value: lastId }
          : options.since
            ? { case: 'startTime', value: timestampFromDate(parseSince(options.since)) }
            : { case: 'startTime', value: timestampFromDate(startedAt) },
      });
      const outcome = await clients
        .withToken(
          (metadata) =>
            new Promise<'ended'>((resolve, reject) => {
              const stream = events.StreamEvents(request, metadata) as grpc.ClientReadableStream<{ event?: Event }>;
              current = stream;
              let chain = Promise.resolve();
              // The first message or a quiet second means the server accepted the call.
              const readyTimer = setTimeout(() => announce(), 300);
              const announce = () => {
                clearTimeout(readyTimer);
                attempt = 0;
                if (!readyAnnounced) {
                  readyAnnounced = true;
                  onReady();
                }
              };
              stream.on('metadata', announce);
              stream.on('data', (message: { event?: Event }) => {
                announce();
                if (!message.event) return;
                const event = streamedEventOf(message.event);
                stream.pause();
                chain = chain
                  .then(() => onEvent(event))
                  .then(() => {
                    lastId = event.id;
                    count += 1;
                    if (options.maxEvents && count >= options.maxEvents) stop();
                    else stream.resume();
                  });
              });
              stream.on('error', (error: grpc.ServiceError) => {
                clearTimeout(readyTimer);
                void chain.then(() => (error.code === grpc.status.CANCELLED && stopped ? resolve('ended') : reject(grpcErrorOf(error))));
              });
              stream.on('end', () => {
                clearTimeout(readyTimer);
                void chain.then(() => resolve('ended'));
              });
            }),
        )
        .catch((error: unknown) => error);
      if (outcome === 'ended' || stopped) continue;
      const retriable = (outcome as { code?: number }).code === grpc.status.UNAVAILABLE && attempt < 5;
      if (!retriable) throw outcome;
      attempt += 1;
      context.output.note(pc.yellow(`the event stream dropped; resuming after ${lastId ?? 'now'} (attempt ${attempt})`));
      await new Promise((resolve) => setTimeout(resolve, 500 * 2 ** attempt));
    }
  } finally {
    process.off('SIGINT', stop);
    process.off('SIGTERM', stop);
    clients.close();
  }
}

function eventLine(event: StreamedEvent): string {
  return `${pc.dim(event.created_at)}  ${pc.cyan(event.topic.padEnd(30))} ${event.id}`;
}

export function addEventCommands(program: Command, context: Context): void {
  program
    .command('listen')
    .description('follow the live event stream (gRPC) and print each event, or forward it signed to a local URL')
    .option('--topics <names>', 'event names (products.created) or topics (products), comma-separated; default every event', listOf)
    .option('-f, --forward-to <url>', 'POST each event to this URL as a webhook delivery, signed with a secret of this session')
    .option('--secret <whsec>', 'sign with this whsec_ secret instead of a new one (so a receiver keeps its setting between runs)')
    .option('--since <time>', 'start with the events since this duration (10m) or ISO time, not only new ones')
    .option('--max-events <n>', 'stop after this many events', positive('--max-events'))
    .addHelpText(
      'after',
      examples(
        'merx listen',
        'merx listen --topics products,orders.created --forward-to http://localhost:3000/hooks',
        'merx listen --json | jq -c "{id, topic}"',
      ),
    )
    .action(async (options: FollowOptions & { forwardTo?: string; secret?: string }) => {
      const { output, session } = context;
      if (options.forwardTo && !/^https?:\/\//.test(options.forwardTo)) throw new UsageError('--forward-to takes an http:// or https:// URL');
      if (options.secret && !/^whsec_[A-Za-z0-9+/]+={0,2}$/.test(options.secret)) throw new UsageError('--secret is whsec_ followed by base64');
      const secret = options.forwardTo ? (options.secret ?? newSessionSecret()) : undefined;
      let merchantId = '';
      if (options.forwardTo) merchantId = String(claimsOf(await session.accessToken()).merchant_id ?? '');
      await followEvents(
        context,
        options,
        async (event) => {
          if (!options.forwardTo || !secret) {
            if (output.json) output.stdout.write(`${JSON.stringify(event)}\n`);
            else output.stdout.write(`${eventLine(event)}\n`);
            return;
          }
          const result = await forward(options.forwardTo, event, merchantId, secret);
          const answer =
            result.status === null ? pc.red(`failed: ${result.error}`) : result.status < 300 ? pc.green(`[${result.status}]`) : pc.red(`[${result.status}]`);
          if (output.json)
            output.stdout.write(
              `${JSON.stringify({ ...event, forwarded: { url: options.forwardTo, status: result.status, ms: result.ms, error: result.error ?? null } })}\n`,
            );
          else output.stdout.write(`${eventLine(event)}  --> POST ${options.forwardTo} ${answer} ${result.ms} ms\n`);
        },
        () => {
          const what = options.forwardTo ? `forwarding events to ${options.forwardTo}` : 'listening for events';
          output.note(`${pc.green('Ready!')} ${what}${options.topics?.length ? ` (${options.topics.join(', ')})` : ''}. Ctrl-C to stop.`);
          if (secret) output.note(`Webhook signing secret of this session: ${pc.bold(secret)}`);
        },
      );
    });

  groupAt(program, ['events'])
    .description("the merchant's event log")
    .command('tail')
    .description('print events as they happen (from --since, else from now), one line each or JSON lines')
    .option('--topics <names>', 'event names or topics, comma-separated', listOf)
    .option('--since <time>', 'start with the events since this duration (10m) or ISO time')
    .option('--max-events <n>', 'stop after this many events', positive('--max-events'))
    .addHelpText('after', examples('merx events tail', 'merx events tail --since 1h --topics orders --json'))
    .action(async (options: FollowOptions) => {
      const { output } = context;
      await followEvents(
        context,
        options,
        async (event) => void output.stdout.write(output.json ? `${JSON.stringify(event)}\n` : `${eventLine(event)}\n`),
        () => output.note(pc.dim('Following the event log. Ctrl-C to stop.')),
      );
    });

  groupAt(program, ['webhooks', 'deliveries'])
    .command('tail')
    .description('print webhook delivery attempts as they change (polls the deliveries list)')
    .option('--subscription-id <id>', "only this subscription's deliveries")
    .option('--since <time>', 'start with the deliveries since this duration (10m) or ISO time; default now')
    .option('--interval <seconds>', 'seconds between polls', positive('--interval'), 1)
    .option('--max-deliveries <n>', 'stop after this many deliveries have ended (succeeded or dead)', positive('--max-deliveries'))
    .addHelpText('after', examples('merx webhooks deliveries tail', 'merx webhooks deliveries tail --subscription-id whs_... --json'))
    .action(async (options: { subscriptionId?: string; since?: string; interval: number; maxDeliveries?: number }) => {
      const { output, session } = context;
      const client = session.client();
      const since = options.since ? parseSince(options.since) : new Date(Date.now() - 1_000);
      const lastSeen = new Map<string, string>();
      let completed = 0;
      let stopped = false;
      const stop = () => void (stopped = true);
      process.once('SIGINT', stop);
      process.once('SIGTERM', stop);
      output.note(pc.dim('Following webhook deliveries. Ctrl-C to stop.'));
      try {
        while (!stopped) {
          const page = await client.webhooks.deliveries.list({
            since: since.toISOString(),
            limit: 100,
            ...(options.subscriptionId ? { subscription_id: options.subscriptionId } : {}),
          });
          for (const delivery of [...page.data].reverse() as unknown as Record<string, unknown>[]) {
            const state = `${delivery.status as string}/${delivery.attempt_count as number}`;
            if (lastSeen.get(delivery.id as string) === state) continue;
            lastSeen.set(delivery.id as string, state);
            if (output.json) output.stdout.write(`${JSON.stringify(delivery)}\n`);
            else {
              const status =
                delivery.status === 'succeeded'
                  ? pc.green(String(delivery.status))
                  : delivery.status === 'pending'
                    ? pc.yellow(String(delivery.status))
                    : pc.red(String(delivery.status));
              output.stdout.write(
                `${pc.dim(String(delivery.updated_at))}  ${String(delivery.topic).padEnd(30)} ${status} attempt ${delivery.attempt_count as number} ${delivery.last_status_code ?? ''}  ${delivery.id as string}\n`,
              );
            }
            if (delivery.status === 'succeeded' || delivery.status === 'dead') completed += 1;
            if (options.maxDeliveries && completed >= options.maxDeliveries) stopped = true;
          }
          if (!stopped) await new Promise((resolve) => setTimeout(resolve, options.interval * 1000));
        }
      } finally {
        process.off('SIGINT', stop);
        process.off('SIGTERM', stop);
      }
    });

  program
    .command('trigger <event>')
    .description(`cause a real state change in the sandbox that emits this event: ${Object.keys(TRIGGERS).join(', ')}`)
    .addHelpText('after', examples('merx trigger products.created', 'merx trigger orders.created --json'))
    .action(async (eventName: string) => {
      const { session, output } = context;
      if (!(eventName in TRIGGERS)) throw new UsageError(`cannot trigger ${eventName}: known events are ${Object.keys(TRIGGERS).join(', ')}`);
      if (session.apiKey().startsWith('mx_live_')) throw new UsageError('trigger makes changes for show: it runs in the sandbox only (mx_test_ keys)');
      const made = await trigger(session.client(), eventName);
      if (output.json) output.object({ event: eventName, ...made });
      else output.note(`${pc.green('✔')} Triggered ${eventName}: ${made.steps.join(', ')}`);
    });
}
