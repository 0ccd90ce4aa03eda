/** `merx login`, `merx logout`, `merx whoami`: API keys kept per profile in the config directory. */
import type { Command } from 'commander';
import pc from 'picocolors';
import { PermissionDeniedError, type Merx } from '@merx/sdk';
import { maskKey } from '../config.js';
import type { Context } from '../context.js';
import { UsageError } from '../errors.js';
import { examples } from '../help.js';
import { askSecret, readAll } from '../prompt.js';
import { Session } from '../session.js';

/** The merchant the key belongs to, or null when the key may not read it (it still authenticated). */
async function merchantOf(client: Merx): Promise<Record<string, unknown> | null> {
  try {
    return (await client.merchant.retrieve()) as unknown as Record<string, unknown>;
  } catch (error) {
    if (error instanceof PermissionDeniedError) return null;
    throw error;
  }
}

export function addAuthCommands(program: Command, context: Context): void {
  program
    .command('login')
    .description('check an API key and keep it under a profile (the key is asked for on a terminal, else read from stdin or --api-key)')
    .addHelpText(
      'after',
      examples(
        'merx login',
        'echo "$MERX_API_KEY" | merx login --profile ci',
        'merx login --profile staging --base-url https://merx.staging.example --api-key mx_test_...',
      ),
    )
    .action(async () => {
      const { streams, globals } = context;
      let apiKey = globals.apiKey;
      if (!apiKey) {
        if (streams.stdin.isTTY) apiKey = await askSecret(streams, 'Paste your Merx API key (mx_test_… or mx_live_…): ');
        else apiKey = (await readAll(streams.stdin)).trim();
      }
      if (!apiKey) throw new UsageError('no API key given: paste one at the prompt, pipe it on stdin, or pass --api-key');
      const session = new Session({ ...globals, apiKey });
      const merchant = await merchantOf(session.client());
      if (merchant === null) await session.accessToken(); // the key authenticates even if it may not read the merchant
      const profile = { api_key: apiKey, ...(globals.baseUrl ? { base_url: globals.baseUrl } : {}), ...(globals.grpcUrl ? { grpc_url: globals.grpcUrl } : {}) };
      session.config.saveProfile(session.profileName, profile);
      const who = merchant
        ? `${merchant.name as string} (${merchant.id as string}, ${merchant.mode as string})`
        : 'a merchant whose details this key may not read';
      if (context.output.json)
        context.output.object({
          profile: session.profileName,
          key: maskKey(apiKey),
          base_url: session.baseUrl(),
          merchant: merchant && { id: merchant.id, name: merchant.name, mode: merchant.mode },
        });
      else
        context.output.note(
          `${pc.green('✔')} Logged in to ${who} with ${maskKey(apiKey)}, saved as profile ${pc.bold(session.profileName)} in ${session.config.dir}`,
        );
    });

  program
    .command('logout')
    .description("forget the profile's key and its cached token")
    .addHelpText('after', examples('merx logout', 'merx logout --profile staging'))
    .action(() => {
      const session = context.session;
      const removed = session.config.removeProfile(session.profileName);
      context.output.note(removed ? `Logged out: profile ${session.profileName} removed` : `No profile ${session.profileName} to log out of`);
    });

  program
    .command('whoami')
    .description('the merchant, key (masked), profile and URLs this command line uses')
    .addHelpText('after', examples('merx whoami', 'merx whoami --json | jq -r .merchant.id'))
    .action(async () => {
      const session = context.session;
      const apiKey = session.apiKey();
      const merchant = await merchantOf(session.client());
      const token = session.tokenStore().load();
      const answer = {
        profile: session.profileName,
        key: maskKey(apiKey),
        key_source: session.keySource,
        base_url: session.baseUrl(),
        grpc_url: session.grpcTarget(),
        merchant: merchant && { id: merchant.id, name: merchant.name, mode: merchant.mode, plan: merchant.plan, status: merchant.status },
        token_cached_until: token ? new Date(token.expiresAt).toISOString() : null,
      };
      context.output.object(answer);
    });
}
