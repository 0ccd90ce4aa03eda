import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { ConfigError } from '@merx/kit';
import { loadApiReference } from './docs.js';

describe('loadApiReference', () => {
  let directory: string;
  before(async () => {
    directory = await mkdtemp(path.join(tmpdir(), 'merx-docs-'));
  });
  after(async () => {
    await rm(directory, { recursive: true, force: true });
  });

  it('serves the installed Redoc bundle without its one external URL, under a path naming its content', () => {
    const reference = loadApiReference();
    const script = reference.script.toString('utf8');
    assert.ok(!script.includes('https://cdn.redoc.ly/'), 'the CDN logo is gone');
    assert.ok(!/https?:\/\/fonts\.(googleapis|gstatic)\.com/.test(script), 'no web fonts');
    assert.match(reference.scriptPath, /^\/docs\/assets\/redoc\.standalone\.[0-9a-f]{16}\.js$/);
    assert.ok(reference.html.includes(`<script src="${reference.scriptPath}"></script>`));
    assert.equal(loadApiReference().scriptPath, reference.scriptPath, 'the same bundle, the same path');
  });

  it('stops start-up with one line when the bundle is missing', () => {
    assert.throws(
      () => loadApiReference(path.join(directory, 'nothing.js')),
      (error: unknown) => {
        assert.ok(error instanceof ConfigError);
        assert.match(error.message, /^gateway: configuration error: the API reference renderer redoc\/bundles\/redoc\.standalone\.js is missing \(ENOENT/);
        assert.ok(!error.message.includes('\n'));
        return true;
      },
    );
  });

  it('stops start-up when the bundle names the CDN logo other than once, so a Redoc upgrade is checked', async () => {
    const twice = path.join(directory, 'twice.js');
    await writeFile(twice, 'a("https://cdn.redoc.ly/redoc/logo-mini.svg");b("https://cdn.redoc.ly/redoc/logo-mini.svg")');
    assert.throws(() => loadApiReference(twice), /names Redocly's CDN logo 2 times instead of once/);
    const none = path.join(directory, 'none.js');
    await writeFile(none, 'console.log(1)');
    assert.throws(() => loadApiReference(none), /0 times instead of once/);
  });
});
