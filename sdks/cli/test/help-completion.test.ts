import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { Cli } from './support/cli.js';
import { merxServer, type MerxServer } from './support/server.js';

const run = promisify(execFile);

describe('merx help and shell completions', function () {
  this.timeout(60_000);
  let server: MerxServer;
  let cli: Cli;

  before(async () => {
    server = await merxServer();
    cli = new Cli(server);
  });

  it("merx help <command> shows the command's flags and examples; --version and --help exit 0", async () => {
    const help = await cli.run(['help', 'products', 'create']);
    assert.equal(help.code, 0);
    assert.match(help.stdout, /Usage: merx products create \[options\]/);
    assert.match(help.stdout, /--sku <value> +Stock keeping unit/);
    assert.match(help.stdout, /Examples:\n {2}\$ merx products create --sku TSHIRT-1/);
    for (const command of [
      ['listen'],
      ['import', 'products'],
      ['sandbox', 'reset'],
      ['fixtures', 'apply'],
      ['trigger'],
      ['login'],
      ['webhooks', 'dead-letters', 'replay'],
    ]) {
      const result = await cli.run(['help', ...command]);
      assert.equal(result.code, 0, command.join(' '));
      assert.match(result.stdout, /Examples:\n {2}\$ merx /, `merx help ${command.join(' ')} has examples`);
    }
    assert.equal((await cli.run(['help', 'no-such-command'])).code, 2);
    assert.match((await cli.run(['--version'])).stdout, /^\d+\.\d+\.\d+/);
    const top = await cli.run(['--help']);
    assert.equal(top.code, 0);
    assert.match(top.stdout, /listen/);
    assert.equal((await cli.run([])).code, 2, 'no command is a usage error');
  });

  it('bash completion offers sub-commands and flags at each level', async () => {
    const script = path.join(cli.configDir, 'merx.bash');
    writeFileSync(script, (await cli.run(['completion', 'bash'])).stdout);
    const complete = async (...words: string[]) => {
      const program = `source ${script}; COMP_WORDS=(merx ${words.map((word) => `'${word}'`).join(' ')}); COMP_CWORD=${words.length}; _merx; printf '%s\\n' "\${COMPREPLY[@]}"`;
      const { stdout } = await run('bash', ['-c', program]);
      return stdout.trim().split('\n').filter(Boolean);
    };
    assert.deepEqual(await complete('prod'), ['products']);
    assert.ok((await complete('products', '')).includes('create'));
    assert.deepEqual(await complete('webhooks', 'dead-letters', 'replay-'), ['replay-all']);
    const flags = await complete('products', 'create', '--');
    for (const flag of ['--sku', '--price', '--currency', '--data', '--api-key', '--json']) assert.ok(flags.includes(flag), `${flag} is offered`);
    assert.ok((await complete('--json', 'import', 'p')).includes('products'), 'flags before the command are skipped');
  });

  it('zsh and fish scripts name the commands and flags; the bash one passes bash -n', async () => {
    const zsh = (await cli.run(['completion', 'zsh'])).stdout;
    assert.match(zsh, /^#compdef merx/);
    assert.match(zsh, /'webhooks dead-letters'\) candidates=\('list:/);
    const fish = (await cli.run(['completion', 'fish'])).stdout;
    assert.match(fish, /complete -c merx -n "test \(__merx_path\) = 'products'" -a 'create'/);
    assert.match(fish, /-l 'forward-to'/);
    const bashSyntax = path.join(cli.configDir, 'syntax.bash');
    writeFileSync(bashSyntax, (await cli.run(['completion', 'bash'])).stdout);
    await run('bash', ['-n', bashSyntax]);
    assert.equal((await cli.run(['completion', 'powershell'])).code, 2);
  });
});
