/**
 * The `merx` program: global flags, every command, and the one place that turns errors into
 * exit codes (0 success, 1 API error with the problem on stderr, 2 usage).
 */
import { Command, CommanderError } from 'commander';
import { MerxError } from '@merx/sdk';
import { addAuthCommands } from './commands/auth.js';
import { addResourceCommands } from './commands/resources.js';
import { addSandboxCommands } from './commands/sandbox.js';
import { addEventCommands } from './commands/events.js';
import { addBulkCommands } from './commands/bulk.js';
import { addCompletionCommand } from './commands/completion.js';
import { Context, type Streams } from './context.js';
import { EXIT_API_ERROR, EXIT_OK, EXIT_USAGE, ReportedFailure, UsageError } from './errors.js';
import { GrpcCallError } from './grpc.js';
import { VERSION } from './version.js';

export function buildProgram(streams: Streams): { program: Command; context: Context } {
  const program = new Command('merx');
  const context = new Context(program, streams);
  program
    .description('The Merx API from a terminal or a CI script')
    .version(VERSION, '-v, --version')
    .option('--api-key <key>', "the API key (else MERX_API_KEY, else the profile's)")
    .option('--profile <name>', 'the profile of `merx login` to use (else MERX_PROFILE, else default)')
    .option('--base-url <url>', "where Merx answers (else MERX_BASE_URL, the profile's, http://localhost:8080)")
    .option('--grpc-url <host:port>', "the gRPC API (else MERX_GRPC_URL, the profile's, the base URL's host on 50051)")
    .option('--json', 'JSON on stdout even on a terminal (it is JSON whenever stdout is not a terminal)')
    .option('--fields <names>', 'keep only these top-level fields (comma-separated) of each object printed')
    .showHelpAfterError('(run with --help for usage)')
    .enablePositionalOptions(false)
    .configureOutput({ writeOut: (text) => streams.stdout.write(text), writeErr: (text) => streams.stderr.write(text) })
    .addHelpCommand(false);
  addAuthCommands(program, context);
  addSandboxCommands(program, context);
  addEventCommands(program, context);
  addBulkCommands(program, context);
  addResourceCommands(program, context);
  addCompletionCommand(program, context);
  program
    .command('help [command...]')
    .description('help for a command, with examples (`merx help products create`)')
    .action((names: string[]) => {
      let at: Command = program;
      for (const name of names) {
        const next = at.commands.find((command) => command.name() === name || command.aliases().includes(name));
        if (!next) throw new UsageError(`no command ${names.join(' ')}: see merx --help`);
        at = next;
      }
      at.outputHelp();
    });
  for (const command of allCommands(program)) command.exitOverride();
  return { program, context };
}

export function allCommands(root: Command): Command[] {
  return [root, ...root.commands.flatMap((command) => allCommands(command))];
}

export async function run(argv: string[], streams: Streams = { stdin: process.stdin, stdout: process.stdout, stderr: process.stderr }): Promise<number> {
  const { program, context } = buildProgram(streams);
  try {
    await program.parseAsync(argv, { from: 'user' });
    return EXIT_OK;
  } catch (error) {
    return exitCodeOf(error, context);
  }
}

function exitCodeOf(error: unknown, context: Context): number {
  const { stderr } = context.streams;
  if (error instanceof CommanderError) {
    // Help and --version end the parse through the same path as a usage error.
    // Help asked for and --version end the parse this way with exit code 0; help shown because a
    // command was missing has a non-zero one, and is a usage error like the rest (already printed).
    return error.exitCode === 0 ? EXIT_OK : EXIT_USAGE;
  }
  if (error instanceof ReportedFailure) return error.exitCode;
  if (error instanceof UsageError) {
    stderr.write(`Error: ${error.message}\n`);
    return EXIT_USAGE;
  }
  if (error instanceof MerxError) {
    context.output.problem(error);
    return EXIT_API_ERROR;
  }
  if (error instanceof GrpcCallError) {
    stderr.write(`Error: ${error.message}\n`);
    return EXIT_API_ERROR;
  }
  stderr.write(`Error: ${(error as Error)?.stack ?? String(error)}\n`);
  return EXIT_API_ERROR;
}
