/** A signed-in browser, as the console keeps it server-side. Tokens are plain here, sealed in the store. */
export interface ConsoleSession {
  idHash: string;
  merchantId: string;
  userId: string;
  scopes: string[];
  accessToken: string;
  accessExpiresAt: Date;
  refreshToken: string;
  /** Bumped by each refresh, so two replicas refreshing at once cannot both write. */
  tokenVersion: number;
  csrfToken: string;
  createdAt: Date;
  lastSeenAt: Date;
  expiresAt: Date;
}

/** What a token response gives the session. */
export interface SessionTokens {
  accessToken: string;
  accessExpiresAt: Date;
  refreshToken: string;
  merchantId: string;
  userId: string;
  scopes: string[];
}

/** Refresh a little before expiry, so a token never expires between the check and the API call. */
export const REFRESH_MARGIN_MS = 60_000;

export const needsRefresh = (session: Pick<ConsoleSession, 'accessExpiresAt'>, now: Date) =>
  session.accessExpiresAt.getTime() - now.getTime() < REFRESH_MARGIN_MS;

/** Idle sessions end; active ones slide, but never past their absolute end. */
export function sessionIsLive(session: Pick<ConsoleSession, 'lastSeenAt' | 'expiresAt'>, now: Date, idleSeconds: number): boolean {
  return session.expiresAt > now && now.getTime() - session.lastSeenAt.getTime() < idleSeconds * 1000;
}

/** A return path after sign-in: only a path inside the console, never another site (open redirect). */
export function safeReturnPath(value: unknown): string {
  if (typeof value !== 'string' || !value.startsWith('/console') || value.startsWith('//') || /[\\\r\n]/.test(value)) return '/console';
  try {
    const url = new URL(value, 'http://console.invalid');
    return url.origin === 'http://console.invalid' && url.pathname.startsWith('/console') ? `${url.pathname}${url.search}` : '/console';
  } catch {
    return '/console';
  }
}
