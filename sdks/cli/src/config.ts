/**
 * Where the CLI keeps what outlives one run: profiles (an API key and, optionally, the URLs it is
 * for) in `config.json`, and each profile's cached access token under `tokens/`. Both are as
 * secret as the keys, so the directory is 0700 and every file 0600, rewritten whole through a
 * temporary file so a crash never leaves half a file behind.
 */
import { createHash, randomUUID } from 'node:crypto';
import { chmodSync, mkdirSync, readFileSync, readdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import path from 'node:path';

export interface Profile {
  api_key: string;
  base_url?: string;
  grpc_url?: string;
}

interface ConfigFile {
  profiles: Record<string, Profile>;
}

/** `MERX_CONFIG_DIR`, else the platform's config directory (`$XDG_CONFIG_HOME/merx`, `~/.config/merx`, `%APPDATA%\merx`). */
export function configDir(env: NodeJS.ProcessEnv = process.env): string {
  if (env.MERX_CONFIG_DIR) return path.resolve(env.MERX_CONFIG_DIR);
  if (process.platform === 'win32' && env.APPDATA) return path.join(env.APPDATA, 'merx');
  const base = env.XDG_CONFIG_HOME || path.join(homedir(), '.config');
  return path.join(base, 'merx');
}

function ensurePrivateDir(dir: string): void {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  if (process.platform !== 'win32') chmodSync(dir, 0o700);
}

/** Writes `content` to `file` readable by its owner only, atomically. */
export function writePrivateFile(file: string, content: string): void {
  ensurePrivateDir(path.dirname(file));
  const temporary = `${file}.${randomUUID()}.tmp`;
  writeFileSync(temporary, content, { mode: 0o600 });
  renameSync(temporary, file);
}

export class ConfigStore {
  readonly dir: string;
  private readonly file: string;

  constructor(dir: string = configDir()) {
    this.dir = dir;
    this.file = path.join(dir, 'config.json');
  }

  private read(): ConfigFile {
    let text: string;
    try {
      text = readFileSync(this.file, 'utf8');
    } catch {
      return { profiles: {} };
    }
    const parsed = JSON.parse(text) as Partial<ConfigFile>;
    return { profiles: parsed.profiles ?? {} };
  }

  profile(name: string): Profile | undefined {
    return this.read().profiles[name];
  }

  profileNames(): string[] {
    return Object.keys(this.read().profiles).sort();
  }

  saveProfile(name: string, profile: Profile): void {
    const config = this.read();
    config.profiles[name] = profile;
    writePrivateFile(this.file, `${JSON.stringify(config, null, 2)}\n`);
  }

  /** Forgets the profile and every token cached for it; false when there was none. */
  removeProfile(name: string): boolean {
    const config = this.read();
    const existed = name in config.profiles;
    delete config.profiles[name];
    if (existed) writePrivateFile(this.file, `${JSON.stringify(config, null, 2)}\n`);
    for (const file of this.tokenFilesOf(name)) rmSync(file, { force: true });
    return existed;
  }

  /**
   * The token cache of one profile and key: named by a digest of the key, so a key given with
   * `--api-key` or a new key stored under the same profile never reads another key's token.
   */
  tokenFile(profileName: string, apiKey: string): string {
    const digest = createHash('sha256').update(apiKey).digest('hex').slice(0, 16);
    return path.join(this.dir, 'tokens', `${encodeURIComponent(profileName)}-${digest}.json`);
  }

  private tokenFilesOf(profileName: string): string[] {
    const dir = path.join(this.dir, 'tokens');
    const prefix = `${encodeURIComponent(profileName)}-`;
    try {
      return readdirSync(dir)
        .filter((name) => name.startsWith(prefix))
        .map((name) => path.join(dir, name));
    } catch {
      return [];
    }
  }
}

/** `mx_test_4fQ8kLm2Zp_…Xy9a`: enough to tell keys apart, never enough to use one. */
export function maskKey(apiKey: string): string {
  const match = /^(mx_(?:test|live)_[0-9A-Za-z]+)_(\S+)$/.exec(apiKey);
  if (!match) return '(not an API key)';
  const secret = match[2]!;
  return `${match[1]}_…${secret.length > 8 ? secret.slice(-4) : ''}`;
}
