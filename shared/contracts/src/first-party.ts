/**
 * Merx's own browser clients of its authorization server. The console is registered from
 * configuration (its secret is `MERX_CONSOLE_CLIENT_SECRET`), never through the operator's app
 * API, and signs its users in without a consent screen: it is part of the platform.
 */
export const CONSOLE_CLIENT_ID = 'merx-console';

/** Where the authorization server sends the browser back to the console, under the public URL. */
export const CONSOLE_CALLBACK_PATH = '/console/auth/callback';

export const consoleRedirectUri = (publicUrl: string) => `${publicUrl.replace(/\/+$/, '')}${CONSOLE_CALLBACK_PATH}`;
