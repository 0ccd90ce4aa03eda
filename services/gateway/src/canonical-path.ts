/**
 * The one form of a path the edge classifies and forwards. Throttle classes, routing and every
 * service's router must agree on what a path means; otherwise `/api/v1/sandbox/RESET` or
 * `/api/v1/sandbox/r%65set` could reach an operation without counting as it. So:
 * percent-encoded unreserved characters (RFC 3986 §2.3: letters, digits, `-._~`) are decoded,
 * other escapes are written in upper case, and forms that different parsers read differently
 * (an encoded `/` or `\`, NUL, `.` or `..` segments, empty segments) are refused. Case is kept:
 * routing is case-sensitive everywhere.
 */
export type CanonicalPath = { path: string } | { refused: string };

const UNRESERVED = /^[A-Za-z0-9\-._~]$/;

export function canonicalPath(raw: string): CanonicalPath {
  if (!raw.startsWith('/')) return { refused: 'the path must start with /' };
  if (raw.includes('\\')) return { refused: 'the path may not contain a backslash' };
  let invalidEscape = false;
  const decoded = raw.replace(/%([0-9A-Fa-f]{2})|%/g, (escape, hex: string | undefined) => {
    if (hex === undefined) {
      invalidEscape = true;
      return escape;
    }
    const character = String.fromCharCode(Number.parseInt(hex, 16));
    return UNRESERVED.test(character) ? character : `%${hex.toUpperCase()}`;
  });
  if (invalidEscape) return { refused: 'the path has a % that does not start an escape' };
  if (/%(2F|5C|00)/.test(decoded)) return { refused: 'the path may not contain an encoded /, \\ or NUL' };
  const segments = decoded.slice(1).split('/');
  const inner = segments.at(-1) === '' ? segments.slice(0, -1) : segments;
  if (inner.some((segment) => segment === '' || segment === '.' || segment === '..')) return { refused: 'the path may not contain empty, . or .. segments' };
  return { path: decoded };
}
