import assert from 'node:assert/strict';
import { mkdirSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { chromium, type BrowserContext, type Page } from 'playwright-core';

/** Debian's Chromium, driven by playwright-core: nothing is downloaded. */
export const CHROMIUM = '/usr/bin/chromium';
export const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

const axeSource = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

/** Where the console tests save their screenshots: MERX_CONSOLE_SCREENSHOTS, else a directory of the run. */
export const screenshotDir = process.env.MERX_CONSOLE_SCREENSHOTS ?? path.join(tmpdir(), `merx-console-screenshots-${process.pid}`);

export interface AxeViolation {
  id: string;
  impact: string | null;
  help: string;
  nodes: Array<{ target: string[] }>;
}

/**
 * A fresh Chromium profile signed in to nothing, on the stack's public origin. Every page opened
 * records Content-Security-Policy violations, so a test can prove the console needs no exception.
 */
export class ConsoleBrowser {
  private constructor(
    readonly context: BrowserContext,
    readonly page: Page,
    private readonly profile: string,
    readonly baseUrl: string,
  ) {}

  static async open(baseUrl: string): Promise<ConsoleBrowser> {
    const profile = await mkdtemp(path.join(tmpdir(), 'merx-console-chromium-'));
    const context = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM,
      headless: true,
      args: CHROMIUM_ARGS,
      viewport: { width: 1280, height: 900 },
    });
    await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: new URL(baseUrl).origin });
    // Browser code as text: this suite compiles without the DOM's types.
    await context.addInitScript({
      content:
        "window.merxViolations = []; document.addEventListener('securitypolicyviolation', (event) => window.merxViolations.push(event.violatedDirective + ' ' + event.blockedURI));",
    });
    const page = context.pages()[0] ?? (await context.newPage());
    return new ConsoleBrowser(context, page, profile, baseUrl);
  }

  async close(): Promise<void> {
    await this.context.close();
    await rm(this.profile, { recursive: true, force: true });
  }

  async goto(pathname: string) {
    const response = await this.page.goto(`${this.baseUrl}${pathname}`);
    assert.ok(response, `no response for ${pathname}`);
    return response;
  }

  /** From any console page: through Merx's own login page and straight back (no consent screen). */
  async signIn(email: string, password: string, start = '/console'): Promise<void> {
    await this.goto(start);
    assert.match(this.page.url(), /\/oauth\/interaction\//, `the console sent the browser to the login page, not ${this.page.url()}`);
    assert.match((await this.page.textContent('body')) ?? '', /the Merx console/);
    await this.page.getByLabel('Email').fill(email);
    await this.page.getByLabel('Password').fill(password);
    await this.page.getByRole('button', { name: 'Sign in' }).click();
    await this.page.waitForURL((url) => url.pathname.startsWith('/console'));
  }

  /** axe-core's scan of the current page; only serious and critical violations are returned. */
  async seriousAccessibilityViolations(): Promise<AxeViolation[]> {
    // Evaluated over the DevTools protocol, which the page's CSP does not govern: the page itself never runs inline script.
    await this.page.evaluate(axeSource);
    const violations = await this.page.evaluate<AxeViolation[]>(
      'axe.run(document, { resultTypes: ["violations"] }).then((result) => result.violations.map((v) => ({ id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.map((n) => ({ target: n.target })) })))',
    );
    return violations.filter((violation) => violation.impact === 'serious' || violation.impact === 'critical');
  }

  async policyViolations(): Promise<string[]> {
    return this.page.evaluate<string[]>('window.merxViolations');
  }

  /** Total bytes of script the current page loaded. */
  async scriptBytes(): Promise<number> {
    return this.page.evaluate<number>(
      "performance.getEntriesByType('resource').filter((entry) => entry.initiatorType === 'script').reduce((sum, entry) => sum + (entry.decodedBodySize || entry.transferSize || 0), 0)",
    );
  }

  async screenshot(name: string): Promise<string> {
    mkdirSync(screenshotDir, { recursive: true });
    const file = path.join(screenshotDir, `${name}.png`);
    await this.page.screenshot({ path: file, fullPage: true });
    return file;
  }

  async text(selector = 'main'): Promise<string> {
    return (await this.page.textContent(selector)) ?? '';
  }
}
