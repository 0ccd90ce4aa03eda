import { randomBytes } from 'node:crypto';
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { newSecretKeyEntry } from '@merx/kit';

/** What `.merx/dev.json` holds: everything a developer (or an SDK's tests) needs to call this Merx. */
export interface DevCredentials {
  base_url: string;
  /** The public gRPC address (`localhost:50051`), as clients and grpcurl take it. */
  grpc_url: string;
  /** The embedded process's admin listener (/metrics, the detailed /readyz); loopback unless ADMIN_HOST says otherwise. */
  admin_url?: string;
  merchant_id: string;
  api_key: string;
  operator_token: string;
  /** The sandbox merchant's owner: signs in on the app consent pages. */
  owner_email: string;
  owner_password: string;
}

export interface DevSecrets {
  operator_token: string;
  cookie_secret: string;
  /** The merchant console's client secret at the oauth service (MERX_CONSOLE_CLIENT_SECRET). */
  console_client_secret: string;
  /** MERX_SECRETS_KEYS of this data directory: seals signing secrets in its database. */
  secrets_keys: string;
}

export const SANDBOX_OWNER_EMAIL = 'owner@sandbox.merx.localhost';

const randomSecret = () => randomBytes(32).toString('base64url');

export async function readJsonFile<T>(file: string): Promise<T | undefined> {
  try {
    return JSON.parse(await readFile(file, 'utf8')) as T;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new Error(`${file} is not readable JSON: ${(error as Error).message}`);
  }
}

/** Written 0600: the file holds an API key and the operator credential. */
export async function writeJsonFile(file: string, value: unknown): Promise<void> {
  await writeFile(file, `${JSON.stringify(value, null, 2)}\n`, { mode: 0o600 });
}

/**
 * Development secrets are generated on first start and kept beside the data (mode 0600): the
 * local launchers are the only place Merx makes up a secret instead of demanding one.
 */
export async function loadOrCreateDevSecrets(dataDir: string | undefined): Promise<DevSecrets> {
  const fresh = {
    operator_token: randomSecret(),
    cookie_secret: randomSecret(),
    console_client_secret: randomSecret(),
    // A random key id: stacks of several data directories in one process (tests) never clash.
    secrets_keys: newSecretKeyEntry(`dev${randomBytes(4).toString('hex')}`),
  };
  if (!dataDir) return fresh;
  const file = path.join(dataDir, 'secrets.json');
  const existing = await readJsonFile<Partial<DevSecrets>>(file);
  // A data directory from before a secret existed keeps its other secrets and gains the new one.
  const secrets = { ...fresh, ...existing };
  if (!existing || Object.keys(fresh).some((name) => existing[name as keyof DevSecrets] === undefined)) await writeJsonFile(file, secrets);
  return secrets;
}

/** The client id of an API key: the key without its secret part (`mx_test_<keyid>`). */
export const clientIdOf = (apiKey: string) => apiKey.split('_').slice(0, 3).join('_');

/** What both launchers print once Merx answers. */
export function startBanner(title: string, credentials: DevCredentials, credentialsFile: string, extra: string[] = []): string {
  return (
    [
      '',
      `  ${title}`,
      '',
      `  Base URL      ${credentials.base_url}`,
      `  gRPC          ${credentials.grpc_url}`,
      ...(credentials.admin_url ? [`  Admin         ${credentials.admin_url} (/metrics, /readyz with details)`] : []),
      `  Merchant      ${credentials.merchant_id}`,
      `  API key       ${credentials.api_key}`,
      `  Credentials   ${credentialsFile}`,
      ...extra,
      '',
      `  Console       ${credentials.base_url}/console`,
      `    Sign in as  ${credentials.owner_email}`,
      `    Password    ${credentials.owner_password}`,
      '',
      '  Get a token:',
      `    curl -s -u "${clientIdOf(credentials.api_key)}:${credentials.api_key}" -d grant_type=client_credentials ${credentials.base_url}/oauth/token`,
      '',
    ].join('\n') + '\n'
  );
}
