import assert from 'node:assert/strict';
import { checkIfMatch, versionEtag } from './etag.js';
import { PreconditionFailed } from './errors.js';

describe('If-Match', () => {
  const current = versionEtag(3);

  it('passes without the header, with *, and with the current tag among others', () => {
    for (const header of [undefined, '', '*', '"v3"', '"v2", "v3"', ' "v3" ']) assert.doesNotThrow(() => checkIfMatch(header, current), String(header));
  });

  it('refuses another version, and a weak tag even of the current one (strong comparison)', () => {
    for (const header of ['"v2"', 'W/"v3"']) {
      assert.throws(
        () => checkIfMatch(header, current),
        (error: unknown) => error instanceof PreconditionFailed && /does not match the current version "v3"/.test(error.message),
      );
    }
  });

  it('says a tag must be quoted when it is not', () => {
    for (const header of ['v3', '"v2", v3', "'v3'"]) {
      assert.throws(
        () => checkIfMatch(header, current),
        (error: unknown) =>
          error instanceof PreconditionFailed && error.message.includes('must be * or quoted entity tags such as "v3" (with the double quotes)'),
        header,
      );
    }
  });
});
