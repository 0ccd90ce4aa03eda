/** What a relay reads from: a stream it can stop and start. */
export interface PausableSource {
  pause(): unknown;
  resume(): unknown;
}

/** What a relay writes to: `write` answers false once the stream is full, and it says `drain` when it has room again. */
export interface DrainableTarget {
  write(chunk: Buffer): boolean;
  once(event: 'drain', listener: () => void): unknown;
}

const TARGET_FULL = 'target full';

/**
 * Messages of one stream written to another, the first read only while nothing holds it back:
 * the second being full, or a hold of the caller's own (messages waiting for the bulk class).
 * Either alone used to resume the source, so a source resumed for the bulk class was read on
 * while the target was still full, and every write meanwhile added a drain listener of its own.
 */
export class Relay {
  private readonly holds = new Set<string>();

  constructor(
    private readonly source: PausableSource,
    private readonly target: DrainableTarget,
  ) {}

  /** Writes a message; a full target stops the source until it drains (one listener, however many writes meanwhile). */
  write(chunk: Buffer): void {
    if (this.target.write(chunk) || this.holds.has(TARGET_FULL)) return;
    this.hold(TARGET_FULL);
    this.target.once('drain', () => this.release(TARGET_FULL));
  }

  /** Stops reading the source for a reason of the caller's; reading resumes once every reason is released. */
  hold(reason: string): void {
    if (this.holds.size === 0) this.source.pause();
    this.holds.add(reason);
  }

  release(reason: string): void {
    if (this.holds.delete(reason) && this.holds.size === 0) this.source.resume();
  }
}
