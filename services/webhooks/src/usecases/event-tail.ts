import { idFloorAt, metricsRegistry, promClient, type Db, type Logger } from '@merx/kit';
import { subscribesTo } from '../domain/subscription.js';
import { eventArrivalsOfEveryMerchant, eventsByMerchantAndId, type ArrivedEvent, type EventArrival } from '../store/events-store.js';

const eventStreamsOpen = new promClient.Gauge({
  name: 'merx_event_streams_open',
  help: 'StreamEvents calls open in this process, all served by its one event tail',
  registers: [metricsRegistry],
});

const eventStreamsLetGo = new promClient.Counter({
  name: 'merx_event_streams_let_go_total',
  help: 'Times the event tail let a stream go because it fell more than its buffer behind (it then caught up from the database)',
  registers: [metricsRegistry],
});

export interface EventTailTiming {
  /**
   * Ids are minted when a change is made and the event reaches this store a moment later: the
   * tail hands an event out as fresh only once its id is this old, in id order; one that arrives
   * later still goes out then, as late. It is also how long a transaction may take between
   * stamping received_at and committing, so each read looks back this far.
   */
  settleMs: number;
  pollMs: number;
  /** Arrivals read per statement while the tail works through a burst. */
  scanPageSize: number;
}

/** What one tick hands one stream. */
export interface TailBatch {
  events: ArrivedEvent[];
  /** Every event with an id up to here that had arrived by this tick has been handed out. */
  releasedUpTo: string;
  /** What this batch and later ones hand out is fresh (above the tick's previous releasedUpTo) or arrived at or after this time (ms). */
  arrivedSince: number;
}

/** Where a stream the tail let go picks up from the database: fresh events after releasedUpTo, late ones arrived since arrivedSince. */
export interface TailRelease {
  releasedUpTo: string;
  arrivedSince: number;
}

/**
 * One stream's place at the tail: the batches it has not taken yet, at most `capacity` events.
 * A batch that does not fit lets the stream go (it reads the database at its own pace, then joins
 * again), so a slow reader holds a bounded buffer and never holds up the tail or anyone else.
 */
export class TailSubscription {
  private readonly batches: TailBatch[] = [];
  private held = 0;
  private wake: (() => void) | undefined;
  /** Receiving batches (between attach and a release). */
  attached = false;
  /** Set when the tail let the stream go; cleared when it joins again. */
  released: TailRelease | undefined;
  closed = false;

  constructor(
    readonly merchantId: string,
    private readonly topics: string[],
    /** The stream's cursor: it wants nothing at or below it. */
    readonly afterId: string,
    private readonly capacity: number,
    private readonly signal: AbortSignal,
  ) {
    signal.addEventListener('abort', () => this.notify(), { once: true });
  }

  wants(event: EventArrival): boolean {
    return event.id > this.afterId && (this.topics.length === 0 || subscribesTo(this.topics, event.topic));
  }

  offer(batch: TailBatch, otherwise: TailRelease): void {
    if (!this.attached || this.closed) return;
    if (this.held + batch.events.length > this.capacity) return this.letGo(otherwise);
    this.batches.push(batch);
    this.held += batch.events.length;
    this.notify();
  }

  letGo(from: TailRelease): void {
    if (!this.attached) return;
    eventStreamsLetGo.inc();
    this.attached = false;
    this.released = from;
    this.notify();
  }

  /** Events waiting in the buffer. */
  get buffered(): number {
    return this.held;
  }

  close(): void {
    this.closed = true;
    this.attached = false;
    this.notify();
  }

  /** The next batch, waiting for one; undefined once none will come (let go, closed or aborted) and every batch was taken. */
  async take(): Promise<TailBatch | undefined> {
    for (;;) {
      const batch = this.batches.shift();
      if (batch) {
        this.held -= batch.events.length;
        return batch;
      }
      if (!this.attached || this.closed || this.signal.aborted) return undefined;
      await new Promise<void>((resolve) => (this.wake = resolve));
    }
  }

  private notify(): void {
    const wake = this.wake;
    this.wake = undefined;
    wake?.();
  }
}

interface TailState {
  releasedUpTo: string;
  /** The next read starts here (ms): the previous tick's start, less the settle time. */
  arrivedSince: number;
  /** Arrivals read already (by merchant and id, with received_at in µs) that a later read may meet again. */
  seen: Map<string, number>;
  /** Arrivals whose ids are too young to hand out yet. */
  unsettled: EventArrival[];
}

export interface EventTailDeps {
  db: Db;
  logger: Logger;
  timing: EventTailTiming;
  /** Events one stream may have waiting before the tail lets it go. */
  bufferSize: number;
  now?: () => Date;
}

const keyOf = (event: { merchantId: string; id: string }) => `${event.merchantId}/${event.id}`;

/**
 * The one reader of new events in this process, for every open StreamEvents of every merchant:
 * each tick reads what arrived since the last one (one statement when nothing did), hands out
 * what is settled in id order and what came late as it comes, and reads the payloads of only
 * the events some stream wants (one more statement). The database work depends on the events,
 * not on how many streams are open; with no stream open the tail stops.
 */
export class EventTail {
  private readonly subscriptions = new Map<string, Set<TailSubscription>>();
  private open = 0;
  private state: TailState | undefined;
  private running: Promise<void> | undefined;
  private sleeping: { timer: NodeJS.Timeout; resolve: () => void } | undefined;
  private stopped = false;
  private readonly now: () => Date;

  constructor(private readonly deps: EventTailDeps) {
    this.now = deps.now ?? (() => new Date());
  }

  subscribe(merchantId: string, topics: string[], afterId: string, signal: AbortSignal): TailSubscription {
    const subscription = new TailSubscription(merchantId, topics, afterId, this.deps.bufferSize, signal);
    if (this.stopped) {
      subscription.closed = true;
      return subscription;
    }
    let ofMerchant = this.subscriptions.get(merchantId);
    if (!ofMerchant) this.subscriptions.set(merchantId, (ofMerchant = new Set()));
    ofMerchant.add(subscription);
    this.open += 1;
    eventStreamsOpen.inc();
    if (!this.state) {
      const since = this.now().getTime() - this.deps.timing.settleMs;
      this.state = { releasedUpTo: idFloorAt('evt', since), arrivedSince: since, seen: new Map(), unsettled: [] };
    }
    this.running ??= this.follow();
    return subscription;
  }

  /** From now on every batch that has events for the subscription goes to it. */
  attach(subscription: TailSubscription): void {
    if (subscription.closed) return;
    subscription.attached = true;
    subscription.released = undefined;
  }

  unsubscribe(subscription: TailSubscription): void {
    subscription.close();
    const ofMerchant = this.subscriptions.get(subscription.merchantId);
    if (!ofMerchant?.delete(subscription)) return;
    if (ofMerchant.size === 0) this.subscriptions.delete(subscription.merchantId);
    this.open -= 1;
    eventStreamsOpen.dec();
    if (this.open === 0) this.wakeUp();
  }

  /** How far the tail has handed events out (every id up to releasedUpTo), and from when it reads arrivals next. */
  get position(): TailRelease {
    const state = this.state;
    if (!state) throw new Error('the event tail has no position while no stream is open');
    return { releasedUpTo: state.releasedUpTo, arrivedSince: state.arrivedSince };
  }

  /** Streams open at the tail. */
  get openStreams(): number {
    return this.open;
  }

  /** Events waiting in the buffers of every stream: never more than the buffer size times the streams. */
  get bufferedEvents(): number {
    let held = 0;
    for (const ofMerchant of this.subscriptions.values()) for (const subscription of ofMerchant) held += subscription.buffered;
    return held;
  }

  /** Whether the tail is reading (a stream is open). */
  get following(): boolean {
    return this.running !== undefined;
  }

  /** Ends every stream still open (the service is stopping) and the tail with them. */
  async stop(): Promise<void> {
    this.stopped = true;
    for (const ofMerchant of this.subscriptions.values()) for (const subscription of ofMerchant) subscription.close();
    this.wakeUp();
    await this.running;
  }

  private async follow(): Promise<void> {
    try {
      while (this.open > 0 && !this.stopped) {
        try {
          await this.tick(this.state!);
        } catch (error) {
          // Nothing read is lost: the next tick reads from the same place again.
          this.deps.logger.warn({ err: error }, 'the event tail could not read new events; retrying');
        }
        if (this.open > 0 && !this.stopped) await this.sleep(this.deps.timing.pollMs);
      }
    } finally {
      this.running = undefined;
      // Streams still open after a stop read its last position; with none open, nothing is kept.
      if (this.open === 0) this.state = undefined;
    }
  }

  private async tick(state: TailState): Promise<void> {
    const { settleMs } = this.deps.timing;
    const moment = this.now().getTime();
    const settled = idFloorAt('evt', moment - settleMs);
    const arrivals = await this.readArrivals(state);
    // From here to the payloads' read, nothing waits: what is handed out, and to which streams, is
    // decided at one instant, so a stream that attaches gets either all of this tick or none of it.
    const late: EventArrival[] = [];
    for (const arrival of arrivals) {
      state.seen.set(keyOf(arrival), arrival.receivedAtMicros);
      (arrival.id <= state.releasedUpTo ? late : state.unsettled).push(arrival);
    }
    const ready = state.unsettled.filter((arrival) => arrival.id < settled).sort((a, b) => (a.id < b.id ? -1 : 1));
    if (ready.length > 0) state.unsettled = state.unsettled.filter((arrival) => arrival.id >= settled);
    const before: TailRelease = { releasedUpTo: state.releasedUpTo, arrivedSince: state.arrivedSince };
    if (settled > state.releasedUpTo) state.releasedUpTo = settled;
    state.arrivedSince = moment - settleMs;
    for (const [key, receivedAtMicros] of state.seen) if (receivedAtMicros < state.arrivedSince * 1000) state.seen.delete(key);

    const wanted = new Map<TailSubscription, EventArrival[]>();
    for (const arrival of [...late, ...ready]) {
      for (const subscription of this.subscriptions.get(arrival.merchantId) ?? []) {
        if (!subscription.attached || !subscription.wants(arrival)) continue;
        const events = wanted.get(subscription);
        if (events) events.push(arrival);
        else wanted.set(subscription, [arrival]);
      }
    }
    if (wanted.size === 0) return;
    let payloads: Map<string, ArrivedEvent>;
    try {
      const keys = new Map([...wanted.values()].flat().map((arrival) => [keyOf(arrival), arrival]));
      payloads = new Map((await eventsByMerchantAndId(this.deps.db, [...keys.values()])).map((event) => [keyOf(event), event]));
    } catch (error) {
      // They would miss this tick: they read it from the database instead.
      for (const subscription of wanted.keys()) subscription.letGo(before);
      throw error;
    }
    const batch = { releasedUpTo: state.releasedUpTo, arrivedSince: before.arrivedSince };
    for (const [subscription, arrivalsOfStream] of wanted) {
      // An event purged between the two reads is simply gone.
      const events = arrivalsOfStream.flatMap((arrival) => payloads.get(keyOf(arrival)) ?? []);
      subscription.offer({ ...batch, events }, before);
    }
  }

  /** Every arrival since the last tick that this tail has not read yet, in pages. */
  private async readArrivals(state: TailState): Promise<EventArrival[]> {
    const { scanPageSize } = this.deps.timing;
    const arrivals: EventArrival[] = [];
    let after = { receivedAtMicros: state.arrivedSince * 1000, id: '' };
    for (;;) {
      const page = await eventArrivalsOfEveryMerchant(this.deps.db, after, scanPageSize);
      for (const arrival of page) if (!state.seen.has(keyOf(arrival))) arrivals.push(arrival);
      if (page.length < scanPageSize) return arrivals;
      const last = page.at(-1)!;
      after = { receivedAtMicros: last.receivedAtMicros, id: last.id };
    }
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.sleeping = undefined;
        resolve();
      }, ms);
      this.sleeping = { timer, resolve };
    });
  }

  private wakeUp(): void {
    const sleeping = this.sleeping;
    if (!sleeping) return;
    this.sleeping = undefined;
    clearTimeout(sleeping.timer);
    sleeping.resolve();
  }
}
