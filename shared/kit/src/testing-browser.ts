import assert from 'node:assert/strict';

/** Browser-like test support for the server-rendered pages (`@merx/kit/testing`). */

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

  /** `headers`: sent with every request (a test's X-Forwarded-For, say). */
  constructor(
    private readonly origin: string,
    private readonly headers: Record<string, string> = {},
  ) {}

  private store(response: Response): void {
    for (const header of response.headers.getSetCookie()) {
      const [pair, ...attributes] = header.split(';').map((part) => part.trim());
      const eq = pair!.indexOf('=');
      const name = pair!.slice(0, eq);
      const value = pair!.slice(eq + 1);
      const attrs = new Map(
        attributes.map((attr) => {
          const [key, ...rest] = attr.split('=');
          return [key!.toLowerCase(), rest.join('=')] as const;
        }),
      );
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

  async request(
    url: string,
    init: { method?: string; form?: Record<string, string> } = {},
  ): Promise<{ status: number; location: string | undefined; text: string; headers: Headers }> {
    const target = new URL(url, this.origin);
    const headers: Record<string, string> = { accept: 'text/html', ...this.headers };
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
