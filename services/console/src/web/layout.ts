import { html, type Child, type Html } from './html.js';
import { csrfField } from './components.js';

export interface AssetUrls {
  css: string;
  js: string;
}

/** The signed-in part of every page's frame. */
export interface Viewer {
  merchantName: string;
  mode: string;
  userId: string;
  csrf: string;
}

export type Section =
  | 'overview'
  | 'api-keys'
  | 'webhooks'
  | 'deliveries'
  | 'dead-letters'
  | 'events'
  | 'audit'
  | 'sources'
  | 'destinations'
  | 'rules'
  | 'connections'
  | 'apps'
  | 'sandbox'
  | 'profile';

const NAVIGATION: Array<{ heading: string; items: Array<[Section, string, string]> }> = [
  {
    heading: 'Account',
    items: [
      ['overview', 'Overview', '/console'],
      ['profile', 'Profile', '/console/profile'],
      ['api-keys', 'API keys', '/console/api-keys'],
      ['apps', 'Installed apps', '/console/apps'],
    ],
  },
  {
    heading: 'Webhooks',
    items: [
      ['webhooks', 'Subscriptions', '/console/webhooks'],
      ['deliveries', 'Delivery log', '/console/webhooks/deliveries'],
      ['dead-letters', 'Dead letters', '/console/webhooks/dead-letters'],
      ['events', 'Events', '/console/events'],
    ],
  },
  {
    heading: 'Data routing',
    items: [
      ['sources', 'Sources', '/console/sources'],
      ['destinations', 'Destinations', '/console/destinations'],
      ['rules', 'Rules', '/console/rules'],
      ['connections', 'Connections', '/console/connections'],
    ],
  },
  {
    heading: 'Security',
    items: [
      ['audit', 'Audit log', '/console/audit'],
      ['sandbox', 'Sandbox', '/console/sandbox'],
    ],
  },
];

export interface PageOptions {
  title: string;
  section?: Section;
  /** A one-line confirmation of what the last action did. */
  notice?: string | undefined;
  /** Shown beside the title: the page's main action. */
  actions?: Child;
  body: Child;
  viewer?: Viewer;
  assets: AssetUrls;
}

function navigation(current: Section | undefined): Html {
  return html`<nav class="sidebar" aria-label="Console">
  ${NAVIGATION.map(
    (group) =>
      html`<h2 class="nav-heading">${group.heading}</h2><ul>${group.items.map(
        ([section, label, href]) => html`<li><a href="${href}"${section === current ? html` aria-current="page"` : ''}>${label}</a></li>`,
      )}</ul>`,
  )}
</nav>`;
}

function header(viewer: Viewer | undefined): Html {
  return html`<header class="topbar">
  <a class="brand" href="/console">Merx <span>console</span></a>
  ${
    viewer
      ? html`<div class="account">
    <span class="merchant">${viewer.merchantName}</span> <span class="badge badge-${viewer.mode}">${viewer.mode}</span>
    <form method="post" action="/console/sign-out" class="inline">${csrfField(viewer.csrf)}<button type="submit" class="link">Sign out</button></form>
  </div>`
      : ''
  }
</header>`;
}

export function page(options: PageOptions): string {
  return `<!doctype html>${
    html`<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${options.title} · Merx console</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="${options.assets.css}">
<script src="${options.assets.js}" defer></script>
</head>
<body>
<a class="skip-link" href="#main">Skip to content</a>
${header(options.viewer)}
<div class="${options.viewer ? 'shell' : 'shell bare'}">
${options.viewer ? navigation(options.section) : ''}
<main id="main" tabindex="-1">
<div class="page-head"><h1>${options.title}</h1>${options.actions ? html`<div class="page-actions">${options.actions}</div>` : ''}</div>
${options.notice ? html`<p class="notice" role="status">${options.notice}</p>` : ''}
${options.body}
</main>
</div>
</body>
</html>`.value
  }`;
}
