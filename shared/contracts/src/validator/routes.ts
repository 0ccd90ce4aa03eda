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

/** A literal path wins over a template that would also match it (`/a/new` over `/a/{id}`). */
export function findRoute(routes: Route[], path: string): Route | undefined {
  const matching = routes.filter((route) => templatePattern(route.template).test(path));
  return matching.sort((a, b) => literalLength(b.template) - literalLength(a.template))[0];
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
