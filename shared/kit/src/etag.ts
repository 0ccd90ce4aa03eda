import { PreconditionFailed } from './errors.js';

/** The strong entity tag of a versioned resource: `"v3"`. */
export const versionEtag = (version: number) => `"v${version}"`;

const ENTITY_TAG = /^(W\/)?"[\x21\x23-\x7e\x80-\xff]*"$/;

/**
 * `If-Match` (RFC 9110 §13.1.1): `*` or a list of entity tags, compared strongly, so a weak tag
 * never matches. A tag written without its quotes (`v3`) is a client's mistake worth naming,
 * not a mismatch to puzzle over.
 */
export function checkIfMatch(ifMatch: string | undefined, currentEtag: string): void {
  if (ifMatch === undefined || ifMatch.trim() === '') return;
  const tags = ifMatch
    .split(',')
    .map((tag) => tag.trim())
    .filter(Boolean);
  const unquoted = tags.filter((tag) => tag !== '*' && !ENTITY_TAG.test(tag));
  if (unquoted.length > 0) {
    throw new PreconditionFailed(
      `If-Match must be * or quoted entity tags such as ${currentEtag} (with the double quotes); ${unquoted.join(', ')} is not one.`,
    );
  }
  if (tags.includes('*') || tags.includes(currentEtag)) return;
  throw new PreconditionFailed(`If-Match ${ifMatch} does not match the current version ${currentEtag}.`);
}
