/**
 * What every command reaches for: the session (credentials, clients) and the output, both made
 * from the global flags once commander has parsed them.
 */
import type { Command } from 'commander';
import { Output } from './output.js';
import { Session, type GlobalOptions } from './session.js';

export interface Streams {
  stdin: NodeJS.ReadStream;
  stdout: NodeJS.WriteStream;
  stderr: NodeJS.WriteStream;
}

export class Context {
  private madeSession: Session | undefined;
  private madeOutput: Output | undefined;

  constructor(
    private readonly program: Command,
    readonly streams: Streams,
  ) {}

  get globals(): GlobalOptions & { fields?: string } {
    return this.program.opts();
  }

  get session(): Session {
    this.madeSession ??= new Session(this.globals);
    return this.madeSession;
  }

  get output(): Output {
    this.madeOutput ??= new Output(this.globals, this.streams.stdout, this.streams.stderr);
    return this.madeOutput;
  }
}
