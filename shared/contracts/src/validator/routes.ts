import type { PathItem } from '../openapi/types.js';

export interface Route {
  template: string;
  item: PathItem;
}

const compiledTemplates = new Map<string, RegExp>();

function templatePattern(template: string): RegExp {
  let pattern = compiledTemplates.get(template);
  if (!pattern) {
    const source = template
      .split(/(\{[^}]+\})/)
      .map((part) => (part.startsWith('{') ? '[^/]+' : part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')))
      .join('');
    pattern = new RegExp(`^${source}$`);
    compiledTemplates.set(template, pattern);
  }
  return pattern;
}

const literalLength = (template: string) => template.replace(/\{[^}]+\}/g, '').length;

interface CompiledRoute {
  route: Route;
  pattern: RegExp;
}

/** Each route list's routes with their patterns, most literal first: ordered once, not on every lookup. */
const orderedRoutes = new WeakMap<Route[], CompiledRoute[]>();

/** A literal path wins over a template that would also match it (`/a/new` over `/a/{id}`). */
export function findRoute(routes: Route[], path: string): Route | undefined {
  let ordered = orderedRoutes.get(routes);
  if (!ordered || ordered.length !== routes.length) {
    // A stable sort: among templates as literal, the first listed wins, as before.
    ordered = routes
      .map((route) => ({ route, pattern: templatePattern(route.template) }))
      .sort((a, b) => literalLength(b.route.template) - literalLength(a.route.template));
    orderedRoutes.set(routes, ordered);
  }
  for (const { route, pattern } of ordered) if (pattern.test(path)) return route;
  return undefined;
}

/** `http://h/api/v1/products/?limit=5` → `/api/v1/products`. */
export function normalizeRequestPath(path: string): string {
  let result = /^https?:\/\//i.test(path) ? new URL(path).pathname : path;
  result = result.split(/[?#]/)[0] ?? '';
  if (result.length > 1 && result.endsWith('/')) result = result.slice(0, -1);
  return result || '/';
}

/** `application/problem+json; charset=utf-8` → `application/problem+json`. */
export function normalizeMediaType(contentType: string | null | undefined): string | undefined {
  const media = contentType?.split(';')[0]?.trim().toLowerCase();
  return media ? media : undefined;
}
