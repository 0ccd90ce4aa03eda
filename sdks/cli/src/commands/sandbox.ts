/** `merx sandbox reset` and `merx fixtures apply`: a known starting point for tests and demos. */
import { readFileSync } from 'node:fs';
import type { Command } from 'commander';
import pc from 'picocolors';
import type { Context } from '../context.js';
import { UsageError } from '../errors.js';
import { examples } from '../help.js';
import { confirm } from '../prompt.js';
import { applyFixtures, parseFixtures } from '../fixtures.js';

const RESET_TIMEOUT_MS = 120_000;

export function addSandboxCommands(program: Command, context: Context): void {
  const sandbox = program.command('sandbox').description("the sandbox merchant's data");
  sandbox
    .command('reset')
    .description(
      "wipe the sandbox merchant's data (API keys and the audit log stay), optionally seeding a small fixture set; waits until every service is done",
    )
    .option('--seed', 'create three products, a source, a paused destination, a rule and a connection after the wipe')
    .option('-y, --yes', 'do not ask (required when not on a terminal)')
    .option('--no-wait', 'return once the reset is accepted, without waiting for it to complete')
    .addHelpText('after', examples('merx sandbox reset', 'merx sandbox reset --seed --yes --json'))
    .action(async (options: { seed?: boolean; yes?: boolean; wait: boolean }) => {
      const { session, output, streams } = context;
      if (session.apiKey().startsWith('mx_live_')) throw new UsageError('refusing to reset a live merchant: sandbox reset is for mx_test_ keys');
      if (!options.yes) {
        if (!streams.stdin.isTTY) throw new UsageError("sandbox reset deletes the sandbox's data: pass --yes when not on a terminal");
        const merchant = await session
          .client()
          .merchant.retrieve()
          .catch(() => undefined);
        const name = merchant ? `${merchant.name} (${merchant.id})` : 'this sandbox';
        if (!(await confirm(streams, `Delete every product, source, destination, rule, connection and webhook of ${name}?`))) {
          output.note('Nothing was reset.');
          return;
        }
      }
      const client = session.client();
      let reset = await client.sandbox.reset({ seed: Boolean(options.seed) });
      const deadline = Date.now() + RESET_TIMEOUT_MS;
      while (options.wait && reset.status !== 'completed') {
        if (Date.now() > deadline)
          throw new UsageError(
            `reset ${reset.id} did not complete within ${RESET_TIMEOUT_MS / 1000} s: check it with merx sandbox resets retrieve ${reset.id}`,
          );
        await new Promise((resolve) => setTimeout(resolve, 250));
        reset = await client.sandbox.resets.retrieve(reset.id);
      }
      if (output.json) output.object(reset);
      else output.note(`${pc.green('✔')} Sandbox reset ${reset.id} ${reset.status}${options.seed ? ' and seeded' : ''}`);
    });

  program
    .command('fixtures')
    .description('describe a set of objects in a file and create them')
    .command('apply <file>')
    .description(
      'create the products, sources, destinations, rules and connections of a JSON fixtures file, in that order; "${name}" or "${name.field}" refers to an object created earlier',
    )
    .addHelpText(
      'after',
      `${examples('merx fixtures apply fixtures.json', 'merx sandbox reset --yes && merx fixtures apply fixtures.json --json')}
File:
  {
    "products":     [{ "ref": "shirt", "sku": "TSHIRT-1", "title": "T-shirt", "price": "19.99", "currency": "USD" }],
    "sources":      [{ "ref": "shop", "name": "Shop", "kind": "storefront" }],
    "destinations": [{ "ref": "erp", "name": "ERP", "url": "https://erp.example/merx" }],
    "rules":        [{ "ref": "big", "name": "Big orders", "action": "forward", "condition": "double(data.total) > 100.0" }],
    "connections":  [{ "source_id": "\${shop}", "destination_id": "\${erp}", "rule_ids": ["\${big}"] }]
  }
`,
    )
    .action(async (file: string) => {
      let text: string;
      try {
        text = readFileSync(file === '-' ? 0 : file, 'utf8');
      } catch (error) {
        throw new UsageError(`cannot read ${file}: ${(error as Error).message}`);
      }
      const fixtures = parseFixtures(text, file);
      const created = await applyFixtures(context.session.client(), fixtures, (line) => context.output.note(line));
      context.output.rows(created);
    });
}
