import { eventCatalogue } from '@merx/contracts';
import { idFloorAt, isId, ValidationFailed, type Db, type FieldError, type MerchantId } from '@merx/kit';
import type { StoredEvent } from '../domain/delivery.js';
import { streamEventsForMerchant, type ArrivedEvent } from '../store/events-store.js';
import type { EventTail, EventTailTiming } from './event-tail.js';

const KNOWN_TOPICS = new Set(eventCatalogue.flatMap((event) => [event.name, event.topic]));

export interface EventStreamTiming extends EventTailTiming {
  /** Events per read while a stream catches up from the database. */
  pageSize: number;
}

export const DEFAULT_EVENT_STREAM_TIMING: EventStreamTiming = { settleMs: 1_000, pollMs: 200, pageSize: 500, scanPageSize: 5_000 };

export type EventCursor = { afterEventId: string } | { startTime: Date } | undefined;

export function checkEventStreamRequest(cursor: EventCursor, topics: string[]): void {
  const errors: FieldError[] = [];
  if (cursor && 'afterEventId' in cursor && !isId(cursor.afterEventId, 'evt')) {
    errors.push({ field: 'after_event_id', code: 'invalid_id', message: 'after_event_id must be an event id (evt_…)' });
  }
  topics.forEach((topic, index) => {
    if (!KNOWN_TOPICS.has(topic))
      errors.push({
        field: `topics[${index}]`,
        code: 'unknown_topic',
        message: 'topics must be event names (orders.created) or topics (orders) of the event catalogue',
      });
  });
  if (errors.length > 0) throw new ValidationFailed(errors);
}

/**
 * A merchant's events after the cursor, oldest first, then live, until `signal` aborts. No cursor
 * starts at the present. What it yields it never yields twice, and it never moves past an event
 * it has not yielded: a stream resumed after the last id it sent misses nothing.
 *
 * A stream reads the database itself only to catch up (a page at a time, at the caller's pace),
 * then joins the process's event tail, which hands it new events from the one read every stream
 * shares. It joins before its last read, so whatever arrives after that read reaches it through
 * the tail; what came before is in the read. If it falls behind the tail by more than its buffer,
 * the tail lets it go and it catches up from the database again, from where the tail left it.
 */
export function eventStreamUseCase({
  db,
  tail,
  eventRetentionDays,
  timing = DEFAULT_EVENT_STREAM_TIMING,
  now = () => new Date(),
}: {
  db: Db;
  tail: EventTail;
  eventRetentionDays: number;
  timing?: EventStreamTiming;
  now?: () => Date;
}) {
  return async function* followEvents(merchantId: MerchantId, cursor: EventCursor, topics: string[], signal: AbortSignal): AsyncGenerator<StoredEvent> {
    checkEventStreamRequest(cursor, topics);
    const start = now().getTime();
    const initial = !cursor ? idFloorAt('evt', start) : 'afterEventId' in cursor ? cursor.afterEventId : idFloorAt('evt', cursor.startTime.getTime());
    const subscription = tail.subscribe(merchantId, topics, initial, signal);
    const notBefore = () => new Date(now().getTime() - eventRetentionDays * 86_400_000);
    /** Every wanted event with an id up to here (that had arrived when it was read) has been yielded or passed over. */
    let covered = initial;
    /**
     * Ids yielded, with when each arrived (ms), so one met again (read once more, or handed out by
     * the tail as well) is not yielded twice. An id goes once no read can meet it again: it arrived
     * before where the next reads of late events start, and is not above what the tail still hands out.
     */
    const sent = new Map<string, number>();
    const forget = (arrivedBefore: number, upTo: string) => {
      for (const [id, arrivedAt] of sent) if (arrivedAt < arrivedBefore && id <= upTo) sent.delete(id);
    };
    function* yieldNew(events: ArrivedEvent[]): Generator<StoredEvent> {
      const oldest = notBefore();
      for (const event of events) {
        if (signal.aborted) return;
        if (event.id <= initial || sent.has(event.id) || event.createdAt < oldest) continue;
        sent.set(event.id, event.receivedAt.getTime());
        yield event;
      }
    }
    const readPage = async () => {
      const settled = idFloorAt('evt', now().getTime() - timing.settleMs);
      const events = await streamEventsForMerchant(db, merchantId, {
        afterId: covered,
        beforeId: settled,
        topics,
        notBefore: notBefore(),
        limit: timing.pageSize,
      });
      const full = events.length === timing.pageSize;
      return { events, next: full ? events.at(-1)!.id : settled > covered ? settled : covered, full };
    };
    let pagesRead = 0;
    /**
     * Events from the database after `covered` up to the settled present, page by page at the
     * caller's pace. Before the stream joins the tail, `beforeJoining` says how far it needs to get
     * and lets it forget ids as it goes (only the tail can meet them again, and the tail is ahead).
     */
    async function* catchUp(beforeJoining?: { whileBelow: string }): AsyncGenerator<StoredEvent> {
      for (;;) {
        if (beforeJoining && covered >= beforeJoining.whileBelow) return;
        const page = await readPage();
        pagesRead += 1;
        yield* yieldNew(page.events);
        if (signal.aborted) return;
        covered = page.next;
        if (!page.full || signal.aborted) return;
        if (beforeJoining) forget(Math.min(lateSince!, tail.position.arrivedSince), tail.position.releasedUpTo);
      }
    }
    /** Events below `covered` that arrived since `lateSince` and were not yielded: they came after the read that passed their ids. */
    async function* lateArrivals(since: number): AsyncGenerator<StoredEvent> {
      let after = initial;
      for (;;) {
        const events = await streamEventsForMerchant(db, merchantId, {
          afterId: after,
          beforeId: covered,
          receivedSince: new Date(since),
          topics,
          notBefore: notBefore(),
          limit: timing.pageSize,
        });
        yield* yieldNew(events);
        if (events.length < timing.pageSize || signal.aborted) return;
        after = events.at(-1)!.id;
      }
    }

    /** Arrivals from here on (ms) may be late for the stream's own reads. */
    let lateSince: number | undefined = start - timing.settleMs;
    let letGo = false;
    try {
      while (!signal.aborted && !subscription.closed) {
        // Near the tail from the database: nothing to read when the cursor is at or past where the tail is.
        pagesRead = 0;
        yield* catchUp({ whileBelow: tail.position.releasedUpTo });
        if (signal.aborted || subscription.closed) return;
        tail.attach(subscription);
        if (pagesRead > 0 || letGo) {
          // Every arrival from now on reaches the stream through the tail; what arrived before is read once more.
          yield* catchUp();
          yield* lateArrivals(lateSince!);
        }
        lateSince = undefined;
        for (;;) {
          const batch = await subscription.take();
          if (!batch) break;
          yield* yieldNew(batch.events);
          if (batch.releasedUpTo > covered) covered = batch.releasedUpTo;
          forget(batch.arrivedSince, batch.releasedUpTo);
        }
        if (signal.aborted || subscription.closed || !subscription.released) return;
        // Too far behind: the tail let the stream go. It reads from where the tail left it.
        letGo = true;
        if (subscription.released.releasedUpTo > covered) covered = subscription.released.releasedUpTo;
        lateSince = subscription.released.arrivedSince;
      }
    } finally {
      tail.unsubscribe(subscription);
    }
  };
}

export type FollowEvents = ReturnType<typeof eventStreamUseCase>;
