import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { openApiDocument } from '@merx/contracts';
import { chromium } from 'playwright-core';
import { sharedStack, type Stack } from '../src/harness/index.js';

const CHROMIUM = '/usr/bin/chromium';
const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

const operationIds = Object.values(openApiDocument.paths).flatMap((item) =>
  (['get', 'post', 'put', 'patch', 'delete'] as const).flatMap((method) => (item[method] ? [item[method].operationId] : [])),
);
const webhookNames = Object.keys(openApiDocument.webhooks);

describe('the API reference at /docs', () => {
  let stack: Stack;

  before(async function () {
    this.timeout(90_000);
    stack = await sharedStack();
  });

  it('serves the page without a token or throttle, under a strict Content-Security-Policy, with a script of its own origin cached for a year', async () => {
    const page = await fetch(`${stack.baseUrl}/docs`);
    const html = await page.text();
    assert.equal(page.status, 200, html);
    assert.equal(page.headers.get('content-type'), 'text/html; charset=utf-8');
    assert.equal(page.headers.get('cache-control'), 'no-cache');
    assert.equal(page.headers.get('x-content-type-options'), 'nosniff');
    assert.equal(page.headers.get('ratelimit'), null, 'not throttled');
    assert.match(page.headers.get('x-request-id') ?? '', /^req_/);
    const csp = new Map(
      (page.headers.get('content-security-policy') ?? '').split(/;\s*/).map((directive) => {
        const [name, ...sources] = directive.split(' ');
        return [name!, sources.join(' ')] as const;
      }),
    );
    assert.equal(csp.get('default-src'), "'none'");
    assert.equal(csp.get('script-src'), "'self'", 'no inline script, no eval, no other origin');
    assert.equal(csp.get('connect-src'), "'self'");
    assert.equal(csp.get('frame-ancestors'), "'none'");
    assert.doesNotMatch(html, /<script>|<script [^>]*>[^<]/, 'no inline script');
    assert.match(html, /<redoc spec-url="\/api\/v1\/openapi\.json"/);

    const scriptPath = /<script src="([^"]+)"><\/script>/.exec(html)?.[1];
    assert.ok(scriptPath?.startsWith('/docs/assets/'), html);
    const script = await fetch(`${stack.baseUrl}${scriptPath}`);
    const source = await script.text();
    assert.equal(script.status, 200);
    assert.equal(script.headers.get('content-type'), 'text/javascript; charset=utf-8');
    assert.equal(script.headers.get('cache-control'), 'public, max-age=31536000, immutable');
    assert.ok(source.length > 500_000, 'the whole Redoc bundle');
    assert.ok(!source.includes('cdn.redoc.ly'), 'the served bundle names no CDN');

    const head = await fetch(`${stack.baseUrl}/docs/`, { method: 'HEAD' });
    assert.equal(head.status, 200);
    assert.equal(head.headers.get('content-security-policy'), page.headers.get('content-security-policy'));
    const stale = await fetch(`${stack.baseUrl}/docs/assets/redoc.standalone.0000000000000000.js`);
    assert.equal(stale.status, 404, 'only the current bundle is served');
    assert.equal(stale.headers.get('content-type'), 'application/problem+json');
  });

  it('renders every operation and every webhook in headless Chromium without a request to another origin or a policy violation', async function () {
    this.timeout(180_000);
    const profile = await mkdtemp(path.join(tmpdir(), 'merx-chromium-'));
    const browser = await chromium.launchPersistentContext(profile, { executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS });
    try {
      const page = await browser.newPage();
      const requested: string[] = [];
      page.on('request', (request) => requested.push(request.url()));
      // Browser code as text: this suite compiles without the DOM's types.
      await page.addInitScript({
        content:
          "window.merxViolations = []; document.addEventListener('securitypolicyviolation', (event) => window.merxViolations.push(event.violatedDirective + ' ' + event.blockedURI));",
      });
      const response = await page.goto(`${stack.baseUrl}/docs`);
      assert.equal(response?.status(), 200);
      const lastOperation = operationIds[operationIds.length - 1]!;
      await page.waitForSelector(`[data-section-id="operation/${lastOperation}"]`, { timeout: 120_000, state: 'attached' });

      const sections = new Set(
        await page.evaluate<string[]>("[...document.querySelectorAll('[data-section-id]')].map((element) => element.getAttribute('data-section-id'))"),
      );
      const missing = [...operationIds, ...webhookNames.map((name) => `events.${name}`)].filter((id) => !sections.has(`operation/${id}`));
      assert.deepEqual(missing, [], 'every operation and webhook has its section');
      const text = await page.evaluate<string>('document.body.innerText');
      for (const name of webhookNames) assert.ok(text.includes(name), `webhook ${name} is named on the page`);

      const origin = new URL(stack.baseUrl).origin;
      const elsewhere = requested.filter((url) => !url.startsWith('blob:') && !url.startsWith('data:') && new URL(url).origin !== origin);
      assert.deepEqual(elsewhere, [], "no request left the gateway's origin");
      assert.ok(
        requested.some((url) => url.endsWith('/api/v1/openapi.json')),
        'the document was fetched from the gateway',
      );
      assert.deepEqual(await page.evaluate<string[]>('window.merxViolations'), [], 'no Content-Security-Policy violation');
    } finally {
      await browser.close();
      await rm(profile, { recursive: true, force: true });
    }
  });
});
