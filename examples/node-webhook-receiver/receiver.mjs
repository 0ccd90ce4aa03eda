// A Merx webhook receiver on node:http.
//
// Every delivery is verified with the subscription's secret before anything else; a delivery that
// fails verification gets 400 and is not processed. Merx retries a delivery until it gets a 2xx and
// keeps the event id (`webhook-id`) on every retry, so the receiver remembers the ids it handled and
// acknowledges a repeat without handling it twice.
//
//   MERX_WEBHOOK_SECRET=whsec_... PORT=3000 node receiver.mjs
//
// Each handled (or refused) delivery is printed as one JSON line on stdout.
import { createServer } from 'node:http';
import { WebhookVerificationError, webhooks } from '@merx/sdk';

const secret = process.env.MERX_WEBHOOK_SECRET; // whsec_..., shown once when the subscription is created
if (!secret) {
  console.error('Set MERX_WEBHOOK_SECRET to the subscription secret (whsec_...)');
  process.exit(2);
}
const port = Number(process.env.PORT ?? 3000);
const MAX_BODY_BYTES = 1024 * 1024;
const handledIds = new Set(); // in production: a unique key in your database

/** Your business logic. Here: print what arrived. */
function handle(event) {
  console.log(JSON.stringify({ verified: true, id: event.id, topic: event.topic, object_id: event.data?.object?.id ?? null }));
}

async function rawBody(req) {
  const chunks = [];
  let size = 0;
  for await (const chunk of req) {
    size += chunk.length;
    if (size > MAX_BODY_BYTES) return null;
    chunks.push(chunk);
  }
  return Buffer.concat(chunks); // the raw bytes: verification needs them exactly as sent
}

const server = createServer(async (req, res) => {
  if (req.method !== 'POST' || req.url !== '/webhooks') return res.writeHead(404).end();
  const body = await rawBody(req);
  if (body === null) return res.writeHead(413).end();
  let event;
  try {
    event = webhooks.verify(body, req.headers, secret);
  } catch (error) {
    if (!(error instanceof WebhookVerificationError)) throw error;
    console.log(JSON.stringify({ verified: false, reason: error.message }));
    return res.writeHead(400).end();
  }
  if (!handledIds.has(event.id)) {
    handledIds.add(event.id);
    handle(event);
  }
  res.writeHead(204).end();
});

server.listen(port, '127.0.0.1', () => console.log(JSON.stringify({ listening: `http://127.0.0.1:${port}/webhooks` })));
for (const signal of ['SIGINT', 'SIGTERM']) process.once(signal, () => server.close(() => process.exit(0)));
