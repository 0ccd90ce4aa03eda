/** Markup that is already safe: made by `html` or `raw`, never by concatenating input. */
export class Html {
  constructor(readonly value: string) {}
  toString(): string {
    return this.value;
  }
}

export type Child = Html | string | number | boolean | null | undefined | readonly Child[];

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

export const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (character) => ESCAPES[character]!);

function render(child: Child): string {
  if (child instanceof Html) return child.value;
  if (Array.isArray(child)) return child.map(render).join('');
  if (child === null || child === undefined || child === false || child === true) return '';
  return escapeHtml(String(child));
}

/**
 * Every page is built with this tag: each interpolated value is escaped unless it is `Html`
 * itself, so an event payload or a merchant-chosen name can never become markup.
 */
export function html(strings: TemplateStringsArray, ...values: Child[]): Html {
  let out = strings[0]!;
  values.forEach((value, index) => {
    out += render(value) + strings[index + 1]!;
  });
  return new Html(out);
}

/** Only for markup this code wrote itself (an inline SVG built from numbers). */
export const raw = (markup: string) => new Html(markup);
