/**
 * The two questions the CLI asks on a terminal: a secret (the API key, not echoed) and a yes/no.
 * Never asked when stdin is not a terminal: scripts pass --api-key, stdin or --yes instead.
 */
import { createInterface } from 'node:readline';
import type { Streams } from './context.js';

export function askSecret(streams: Streams, question: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const lines = createInterface({ input: streams.stdin, output: streams.stderr, terminal: true });
    // Echo nothing of what is typed: readline writes each key through this method.
    let asked = false;
    (lines as unknown as { _writeToOutput: (text: string) => void })._writeToOutput = (text: string) => {
      if (!asked) streams.stderr.write(text);
    };
    lines.question(question, (answer) => {
      streams.stderr.write('\n');
      lines.close();
      resolve(answer.trim());
    });
    asked = true;
    lines.once('SIGINT', () => {
      lines.close();
      reject(new Error('cancelled'));
    });
  });
}

export function confirm(streams: Streams, question: string): Promise<boolean> {
  return new Promise((resolve) => {
    const lines = createInterface({ input: streams.stdin, output: streams.stderr, terminal: true });
    lines.question(`${question} [y/N] `, (answer) => {
      lines.close();
      resolve(/^y(es)?$/i.test(answer.trim()));
    });
    lines.once('SIGINT', () => {
      lines.close();
      resolve(false);
    });
  });
}

export async function readAll(stream: NodeJS.ReadStream): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk as string));
  return Buffer.concat(chunks).toString('utf8');
}
