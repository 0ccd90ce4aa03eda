import assert from 'node:assert/strict';

interface StoredCookie {
  value: string;
  path: string;
}

/**
 * Just enough of a browser for the consent pages: a cookie jar that honours Path and deletion,
 * and navigation that follows redirects by hand so each hop (and its Set-Cookie) is seen.
 */
export class Browser {
  private readonly cookies = new Map<string, StoredCookie>();

  constructor(private readonly origin: string) {}

  private store(response: Response): void {
    for (const header of response.headers.getSetCookie()) {
      const [pair, ...attributes] = header.split(';').map((part) => part.trim());
      const eq = pair!.indexOf('=');
      const name = pair!.slice(0, eq);
      const value = pair!.slice(eq + 1);
      const attrs = new Map(attributes.map((attr) => {
        const [key, ...rest] = attr.split('=');
        return [key!.toLowerCase(), rest.join('=')] as const;
      }));
      const expires = attrs.get('expires');
      const deleted = value === '' || attrs.get('max-age') === '0' || (expires !== undefined && Date.parse(expires) <= Date.now());
      const key = `${name}@${attrs.get('path') ?? '/'}`;
      if (deleted) this.cookies.delete(key);
      else this.cookies.set(key, { value, path: attrs.get('path') ?? '/' });
    }
  }

  private cookieHeader(path: string): string {
    return [...this.cookies.entries()]
      .filter(([, cookie]) => path === cookie.path || path.startsWith(cookie.path.endsWith('/') ? cookie.path : `${cookie.path}/`))
      .map(([key, cookie]) => `${key.slice(0, key.lastIndexOf('@'))}=${cookie.value}`)
      .join('; ');
  }

  async request(url: string, init: { method?: string; form?: Record<string, string> } = {}): Promise<{ status: number; location: string | undefined; text: string; headers: Headers }> {
    const target = new URL(url, this.origin);
    const headers: Record<string, string> = { accept: 'text/html' };
    const cookie = this.cookieHeader(target.pathname);
    if (cookie) headers.cookie = cookie;
    let body: string | undefined;
    if (init.form) {
      headers['content-type'] = 'application/x-www-form-urlencoded';
      body = new URLSearchParams(init.form).toString();
    }
    const response = await fetch(target, { method: init.method ?? 'GET', headers, body, redirect: 'manual' });
    this.store(response);
    const location = response.headers.get('location') ?? undefined;
    return { status: response.status, location: location && new URL(location, target).toString(), text: await response.text(), headers: response.headers };
  }

  /** GETs `url` and follows redirects while they stay on this origin; returns the last answer. */
  async navigate(url: string, init: { method?: string; form?: Record<string, string> } = {}) {
    let answer = await this.request(url, init);
    for (let hops = 0; answer.location && new URL(answer.location).origin === new URL(this.origin).origin; hops += 1) {
      assert.ok(hops < 10, 'too many redirects');
      answer = await this.request(answer.location);
    }
    return answer;
  }
}

export function hiddenField(html: string, name: string): string {
  const match = new RegExp(`<input type="hidden" name="${name}" value="([^"]*)">`).exec(html);
  assert.ok(match, `no hidden ${name} field in the page`);
  return match[1]!;
}

export function formAction(html: string, endsWith: string): string {
  const match = [...html.matchAll(/<form method="post" action="([^"]+)"/g)].map((found) => found[1]!).find((action) => action.endsWith(endsWith));
  assert.ok(match, `no form posting to …${endsWith}`);
  return match;
}

/**
 * Registers an app and installs it for `owner` through the real login and consent pages, as
 * the merchant's browser would; the code is left unexchanged. For tests that need an installed app.
 */
export async function installTestApp(stack: { baseUrl: string; operatorToken: string }, owner: { ownerEmail: string; ownerPassword: string }, scopes = ['products:read']): Promise<{ appId: string; clientId: string }> {
  const redirectUri = 'http://127.0.0.1:9/callback';
  const registered = await fetch(`${stack.baseUrl}/admin/v1/apps`, {
    method: 'POST',
    headers: { authorization: `Bearer ${stack.operatorToken}`, 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'Fixture app', redirect_uris: [redirectUri], scopes }),
  });
  const app = (await registered.json()) as { id: string; client_id: string };
  assert.equal(registered.status, 201, JSON.stringify(app));
  const { createHash, randomBytes } = await import('node:crypto');
  const challenge = createHash('sha256').update(randomBytes(32).toString('base64url')).digest('base64url');
  const authorize = `/oauth/auth?${new URLSearchParams({ response_type: 'code', client_id: app.client_id, redirect_uri: redirectUri, scope: scopes.join(' '), state: 'fixture', code_challenge: challenge, code_challenge_method: 'S256' })}`;
  const browser = new Browser(stack.baseUrl);
  const login = await browser.navigate(authorize);
  const consent = await browser.navigate(formAction(login.text, '/login'), { method: 'POST', form: { csrf: hiddenField(login.text, 'csrf'), email: owner.ownerEmail, password: owner.ownerPassword } });
  const landed = await browser.navigate(formAction(consent.text, '/confirm'), { method: 'POST', form: { csrf: hiddenField(consent.text, 'csrf') } });
  assert.ok(landed.location?.startsWith(redirectUri) && new URL(landed.location).searchParams.has('code'), `installing the fixture app failed: ${landed.status}`);
  return { appId: app.id, clientId: app.client_id };
}
