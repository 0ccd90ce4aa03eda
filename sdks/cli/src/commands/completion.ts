/**
 * `merx completion bash|zsh|fish`: a script completing every command and flag, written from the
 * command tree itself so it never lags behind a new command.
 */
import type { Command } from 'commander';
import type { Context } from '../context.js';
import { UsageError } from '../errors.js';
import { examples } from '../help.js';

interface Node {
  path: string;
  subcommands: { name: string; description: string }[];
  flags: { name: string; description: string }[];
}

function nodesOf(root: Command): Node[] {
  const nodes: Node[] = [];
  const globalFlags = root.options.map((option) => ({ name: option.long ?? option.short ?? '', description: option.description }));
  const visit = (command: Command, path: string) => {
    const own = command.options.map((option) => ({ name: option.long ?? option.short ?? '', description: option.description }));
    nodes.push({
      path,
      subcommands: command.commands.map((sub) => ({ name: sub.name(), description: sub.description() })),
      flags: [...own, ...(command === root ? [] : globalFlags), { name: '--help', description: 'show help' }],
    });
    for (const sub of command.commands) visit(sub, path ? `${path} ${sub.name()}` : sub.name());
  };
  visit(root, '');
  return nodes;
}

const shellWords = (node: Node) => [...node.subcommands.map((sub) => sub.name), ...node.flags.map((flag) => flag.name)].join(' ');
const oneLine = (text: string) => text.replace(/\s+/g, ' ').replace(/'/g, "'\\''").slice(0, 80);

function bash(nodes: Node[]): string {
  const cases = nodes.map((node) => `    '${node.path}') echo '${shellWords(node)}' ;;`).join('\n');
  const known = nodes
    .map((node) => node.path)
    .filter(Boolean)
    .join('|');
  return `# merx completion for bash: add to ~/.bashrc
#   source <(merx completion bash)
_merx_candidates() {
  case "$1" in
${cases}
  esac
}
_merx_known() {
  case "|${known}|" in *"|$1|"*) return 0 ;; esac
  return 1
}
_merx() {
  local cur cmdpath word i next
  cur="\${COMP_WORDS[COMP_CWORD]}"
  cmdpath=""
  for ((i = 1; i < COMP_CWORD; i++)); do
    word="\${COMP_WORDS[i]}"
    [[ "$word" == -* ]] && continue
    next="\${cmdpath:+$cmdpath }$word"
    _merx_known "$next" && cmdpath="$next"
  done
  COMPREPLY=($(compgen -W "$(_merx_candidates "$cmdpath")" -- "$cur"))
}
complete -o default -F _merx merx
`;
}

function zsh(nodes: Node[]): string {
  const cases = nodes
    .map((node) => {
      const entries = [
        ...node.subcommands.map((sub) => `${sub.name}:${oneLine(sub.description).replace(/:/g, '\\:')}`),
        ...node.flags.map((flag) => `${flag.name}:${oneLine(flag.description).replace(/:/g, '\\:')}`),
      ];
      return `    '${node.path}') candidates=(${entries.map((entry) => `'${entry}'`).join(' ')}) ;;`;
    })
    .join('\n');
  const known = nodes
    .map((node) => node.path)
    .filter(Boolean)
    .join('|');
  return `#compdef merx
# merx completion for zsh: put in a directory of $fpath as _merx, or add to ~/.zshrc
#   source <(merx completion zsh)
_merx() {
  local cmdpath="" word next i
  local -a candidates
  for ((i = 2; i < CURRENT; i++)); do
    word="\${words[i]}"
    [[ "$word" == -* ]] && continue
    next="\${cmdpath:+$cmdpath }$word"
    case "|${known}|" in *"|$next|"*) cmdpath="$next" ;; esac
  done
  case "$cmdpath" in
${cases}
  esac
  _describe -t commands 'merx' candidates
}
if [[ "\${zsh_eval_context[-1]}" == loadautofunc ]]; then _merx "$@"; else compdef _merx merx; fi
`;
}

function fish(nodes: Node[]): string {
  const known = nodes.map((node) => node.path).filter(Boolean);
  const lines = [
    '# merx completion for fish: merx completion fish > ~/.config/fish/completions/merx.fish',
    'function __merx_path',
    '  set -l words (commandline -opc)',
    '  set -l cmdpath ""',
    '  for word in $words[2..-1]',
    '    string match -q -- "-*" $word; and continue',
    '    set -l next (string trim -- "$cmdpath $word")',
    `    contains -- $next ${known.map((path) => `'${path}'`).join(' ')}; and set cmdpath $next`,
    '  end',
    '  echo $cmdpath',
    'end',
    'complete -c merx -f',
  ];
  for (const node of nodes) {
    const condition = `test (__merx_path) = '${node.path}'`;
    for (const sub of node.subcommands) lines.push(`complete -c merx -n "${condition}" -a '${sub.name}' -d '${oneLine(sub.description)}'`);
    for (const flag of node.flags)
      if (flag.name.startsWith('--')) lines.push(`complete -c merx -n "${condition}" -l '${flag.name.slice(2)}' -d '${oneLine(flag.description)}'`);
  }
  return `${lines.join('\n')}\n`;
}

export function addCompletionCommand(program: Command, context: Context): void {
  program
    .command('completion <shell>')
    .description('print a completion script for bash, zsh or fish')
    .addHelpText(
      'after',
      examples('source <(merx completion bash)', 'source <(merx completion zsh)', 'merx completion fish > ~/.config/fish/completions/merx.fish'),
    )
    .action((shell: string) => {
      const nodes = nodesOf(program);
      const scripts: Record<string, (nodes: Node[]) => string> = { bash, zsh, fish };
      const write = scripts[shell];
      if (!write) throw new UsageError(`no completion for ${shell}: bash, zsh or fish`);
      context.streams.stdout.write(write(nodes));
    });
}
