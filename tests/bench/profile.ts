import { existsSync, readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { repoRoot } from '../src/harness/distributed.js';

/**
 * Summarises the `.cpuprofile` files `--cpu-prof` wrote (BENCH_CPU_PROF=<dir>): self time by
 * package and by function, as a share of the time the process was not idle.
 */
interface ProfileNode {
  id: number;
  children?: number[];
  callFrame: { functionName: string; url: string; lineNumber: number };
}

interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

function packageOf(url: string, functionName: string): string {
  if (!url) return functionName || '(anonymous)';
  if (url.startsWith('node:')) return 'node core';
  if (url.startsWith('wasm:')) return 'wasm (undici llhttp, PGlite)';
  const file = url.startsWith('file://') ? fileURLToPath(url) : url;
  const modules = file.lastIndexOf('/node_modules/');
  if (modules >= 0) {
    const parts = file.slice(modules + '/node_modules/'.length).split('/');
    return parts[0]!.startsWith('@') ? `${parts[0]}/${parts[1]}` : parts[0]!;
  }
  const relative = path.relative(repoRoot, file);
  const [top, name] = relative.split(path.sep);
  return top === 'services' || top === 'shared' ? `merx ${top}/${name}` : relative;
}

function shortLocation(url: string, line: number): string {
  if (!url) return '';
  const file = url.startsWith('file://') ? path.relative(repoRoot, fileURLToPath(url)).replace(/^node_modules\//, '') : url;
  return `${file}:${line + 1}`;
}

function table(title: string, rows: Array<[string, number]>, busy: number, limit: number): string[] {
  return [
    `| ${title} | self time |`,
    '|---|---:|',
    ...rows
      .sort((a, b) => b[1] - a[1])
      .slice(0, limit)
      .map(([name, time]) => `| ${name.replaceAll('|', '\\|')} | ${((time / busy) * 100).toFixed(1)}% |`),
  ];
}

export function summariseProfile(file: string, limit = 12): string[] {
  const profile = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile;
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const parentOf = new Map<number, number>();
  for (const node of profile.nodes) for (const child of node.children ?? []) parentOf.set(child, node.id);
  const selfTime = new Map<number, number>();
  profile.samples.forEach((id, index) => selfTime.set(id, (selfTime.get(id) ?? 0) + (profile.timeDeltas[index] ?? 0)));
  const byPackage = new Map<string, number>();
  const byFunction = new Map<string, number>();
  // time with the package anywhere on the stack: what a request spends "inside" koa, pg, undici...
  const inclusive = new Map<string, number>();
  let busy = 0;
  for (const [id, time] of selfTime) {
    const { functionName, url, lineNumber } = byId.get(id)!.callFrame;
    if (functionName === '(idle)') continue;
    busy += time;
    const pkg = packageOf(url, functionName);
    byPackage.set(pkg, (byPackage.get(pkg) ?? 0) + time);
    const fn = `${functionName || '(anonymous)'} ${shortLocation(url, lineNumber)}`.trim();
    byFunction.set(fn, (byFunction.get(fn) ?? 0) + time);
    const onStack = new Set<string>();
    for (let at: number | undefined = id; at !== undefined; at = parentOf.get(at)) {
      const frame = byId.get(at)!.callFrame;
      if (frame.url && !frame.url.startsWith('node:')) onStack.add(packageOf(frame.url, frame.functionName));
    }
    for (const name of onStack) inclusive.set(name, (inclusive.get(name) ?? 0) + time);
  }
  return [
    `Busy ${(busy / 1e6).toFixed(1)} s of CPU in the profile.`,
    '',
    ...table('package', [...byPackage], busy, limit),
    '',
    ...table('package on the stack', [...inclusive], busy, limit).map((line, index) => (index === 0 ? line.replace('self time', 'inclusive') : line)),
    '',
    ...table('function', [...byFunction], busy, limit),
  ];
}

/** Every profile under the folder, newest per service sub-folder. */
export function summariseProfiles(dir: string): string[] {
  if (!existsSync(dir)) return [];
  const lines: string[] = [];
  for (const service of readdirSync(dir).sort()) {
    const folder = path.join(dir, service);
    const files = existsSync(folder)
      ? readdirSync(folder)
          .filter((name) => name.endsWith('.cpuprofile'))
          .sort()
      : [];
    if (files.length === 0) continue;
    const file = path.join(folder, files[files.length - 1]!);
    lines.push(`### ${service} (${path.relative(repoRoot, file)})`, '', ...summariseProfile(file), '');
  }
  return lines;
}

// `node tests/dist/bench/profile.js <file.cpuprofile>` prints one summary.
if (process.argv[1] && fileURLToPath(import.meta.url) === path.resolve(process.argv[1]) && process.argv[2]) {
  process.stdout.write(`${summariseProfile(process.argv[2], 25).join('\n')}\n`);
}
