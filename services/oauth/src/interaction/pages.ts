import { scopeDescriptions, type Scope } from '@merx/contracts';

const escapeHtml = (value: string) => value.replace(/[&<>"']/g, (char) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[char]!);

/** Tagged template that escapes every interpolated value unless it is already `Html`. */
class Html {
  constructor(readonly value: string) {}
  toString() {
    return this.value;
  }
}

function html(strings: TemplateStringsArray, ...values: unknown[]): Html {
  let out = strings[0]!;
  values.forEach((value, index) => {
    const parts = Array.isArray(value) ? value : [value];
    out += parts
      .map((part) => (part instanceof Html ? part.value : part === undefined || part === null || part === false ? '' : escapeHtml(String(part))))
      .join('');
    out += strings[index + 1]!;
  });
  return new Html(out);
}

const STYLE = `
:root{--ink:#0f172a;--muted:#475569;--line:#e2e8f0;--bg:#f1f5f9;--card:#fff;--brand:#4338ca;--brand-ink:#fff;--danger:#b91c1c;--danger-bg:#fef2f2;--focus:#f59e0b}
*{box-sizing:border-box}
html{font:16px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif;color:var(--ink);background:var(--bg)}
body{margin:0;min-height:100vh;display:flex;flex-direction:column}
header{padding:20px 24px}
.brand{display:inline-flex;align-items:center;gap:10px;font-weight:700;font-size:1.125rem;letter-spacing:-.01em;color:var(--ink);text-decoration:none}
.brand-mark{width:28px;height:28px;border-radius:8px;background:linear-gradient(135deg,#6366f1,#4338ca);display:grid;place-items:center;color:#fff;font-size:.875rem}
main{flex:1;display:flex;align-items:flex-start;justify-content:center;padding:24px 16px 48px}
.card{width:100%;max-width:440px;background:var(--card);border:1px solid var(--line);border-radius:16px;padding:32px;box-shadow:0 1px 2px rgba(15,23,42,.04),0 8px 24px rgba(15,23,42,.06)}
h1{font-size:1.5rem;line-height:1.25;margin:0 0 8px;letter-spacing:-.02em}
.lead{margin:0 0 24px;color:var(--muted)}
label{display:block;font-weight:600;font-size:.9375rem;margin:0 0 6px}
.field{margin:0 0 18px}
input[type=email],input[type=password]{width:100%;font:inherit;padding:11px 12px;border:1px solid #cbd5e1;border-radius:10px;background:#fff;color:var(--ink)}
input[aria-invalid=true]{border-color:var(--danger)}
.error{margin:6px 0 0;color:var(--danger);font-size:.875rem}
.alert{margin:0 0 20px;padding:12px 14px;border-radius:10px;background:var(--danger-bg);color:var(--danger);border:1px solid #fecaca}
button{font:inherit;font-weight:600;border-radius:10px;padding:11px 16px;cursor:pointer;border:1px solid transparent;width:100%}
.primary{background:var(--brand);color:var(--brand-ink)}
.primary:hover{background:#3730a3}
.secondary{background:#fff;color:var(--ink);border-color:#cbd5e1}
.secondary:hover{background:#f8fafc}
:focus-visible{outline:3px solid var(--focus);outline-offset:2px}
.actions{display:flex;gap:12px;margin-top:24px}
.actions form{flex:1}
.scopes{list-style:none;margin:0;padding:0;border:1px solid var(--line);border-radius:12px}
.scopes li{padding:12px 14px;display:flex;gap:12px}
.scopes li+li{border-top:1px solid var(--line)}
.tick{flex:none;width:20px;height:20px;border-radius:50%;background:#e0e7ff;color:var(--brand);display:grid;place-items:center;font-size:.75rem;margin-top:2px}
.scope-name{display:block;font-family:ui-monospace,SFMono-Regular,Menlo,monospace;font-size:.8125rem;color:var(--muted)}
.app{display:flex;align-items:center;gap:12px;margin:0 0 20px}
.app-mark{width:44px;height:44px;border-radius:12px;background:#eef2ff;color:var(--brand);display:grid;place-items:center;font-weight:700;font-size:1.125rem}
.note{margin:20px 0 0;font-size:.875rem;color:var(--muted)}
footer{padding:16px 24px;color:var(--muted);font-size:.8125rem;text-align:center}
@media (max-width:480px){.card{padding:24px 20px;border-radius:12px}.actions{flex-direction:column-reverse}}
@media (prefers-color-scheme:dark){:root{--ink:#e2e8f0;--muted:#94a3b8;--line:#1e293b;--bg:#020617;--card:#0f172a;--danger:#fca5a5;--danger-bg:#450a0a}input[type=email],input[type=password],.secondary{background:#020617;color:var(--ink);border-color:#334155}.secondary:hover{background:#0f172a}.tick,.app-mark{background:#1e1b4b;color:#c7d2fe}}
`;

function layout(title: string, body: Html): string {
  return `<!doctype html>${html`<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<meta name="robots" content="noindex">
<title>${title} · Merx</title>
<style>${new Html(STYLE)}</style>
</head>
<body>
<header><a class="brand" href="#main"><span class="brand-mark" aria-hidden="true">M</span>Merx</a></header>
<main id="main">
${body}
</main>
<footer>Merx · secure sign-in for merchants</footer>
</body>
</html>`}`;
}

export interface LoginPageInput {
  appName: string;
  action: string;
  csrf: string;
  email?: string;
  error?: string;
}

export function loginPage(input: LoginPageInput): string {
  const invalid = input.error !== undefined;
  return layout(
    'Sign in',
    html`<section class="card" aria-labelledby="title">
<h1 id="title">Sign in to Merx</h1>
<p class="lead">to continue to <strong>${input.appName}</strong></p>
${invalid ? html`<div class="alert" role="alert" id="login-error">${input.error}</div>` : ''}
<form method="post" action="${input.action}" novalidate>
<input type="hidden" name="csrf" value="${input.csrf}">
<div class="field">
<label for="email">Email</label>
<input id="email" name="email" type="email" autocomplete="username" required value="${input.email ?? ''}"${new Html(invalid ? ' aria-invalid="true" aria-describedby="login-error"' : '')}${new Html(invalid ? '' : ' autofocus')}>
</div>
<div class="field">
<label for="password">Password</label>
<input id="password" name="password" type="password" autocomplete="current-password" required${new Html(invalid ? ' aria-invalid="true" aria-describedby="login-error" autofocus' : '')}>
</div>
<button class="primary" type="submit">Sign in</button>
</form>
</section>`,
  );
}

export interface ConsentPageInput {
  appName: string;
  merchantName: string;
  email: string;
  scopes: string[];
  confirmAction: string;
  abortAction: string;
  csrf: string;
}

export function consentPage(input: ConsentPageInput): string {
  const initial = [...input.appName.trim()][0]?.toUpperCase() ?? '?';
  const items = input.scopes.map(
    (scope) =>
      html`<li><span class="tick" aria-hidden="true">✓</span><span>${scopeDescriptions[scope as Scope] ?? scope}<span class="scope-name">${scope}</span></span></li>`,
  );
  return layout(
    `Allow ${input.appName}`,
    html`<section class="card" aria-labelledby="title">
<div class="app"><span class="app-mark" aria-hidden="true">${initial}</span><div><strong>${input.appName}</strong><br><span class="scope-name">wants access to ${input.merchantName}</span></div></div>
<h1 id="title">Allow ${input.appName} to access your store?</h1>
<p class="lead">Signed in as ${input.email}. ${input.appName} will be able to:</p>
<ul class="scopes" aria-label="Requested permissions">${items}</ul>
<div class="actions">
<form method="post" action="${input.abortAction}"><input type="hidden" name="csrf" value="${input.csrf}"><button class="secondary" type="submit">Deny</button></form>
<form method="post" action="${input.confirmAction}"><input type="hidden" name="csrf" value="${input.csrf}"><button class="primary" type="submit">Allow access</button></form>
</div>
<p class="note">You can remove this app at any time; its access ends at once.</p>
</section>`,
  );
}

export function messagePage(title: string, message: string): string {
  return layout(title, html`<section class="card" aria-labelledby="title"><h1 id="title">${title}</h1><p class="lead" role="alert">${message}</p></section>`);
}
