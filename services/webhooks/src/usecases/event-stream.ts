import { eventCatalogue } from '@merx/contracts';
import { idFloorAt, isId, ValidationFailed, type Db, type FieldError, type MerchantId } from '@merx/kit';
import type { StoredEvent } from '../domain/delivery.js';
import { streamEventsForMerchant } from '../store/events-store.js';

const KNOWN_TOPICS = new Set(eventCatalogue.flatMap((event) => [event.name, event.topic]));

export interface EventStreamTiming {
  /**
   * Events younger than this wait before they are sent: ids are minted when a change is made and
   * the event reaches this store a moment later, so a cursor (the last id sent) only moves past
   * ids whose events have had time to arrive. This is what makes a resumed stream miss nothing.
   */
  settleMs: number;
  /** An event that still arrives late within a stream is sent when it comes, once (by id). */
  lateWindowMs: number;
  pollMs: number;
  pageSize: number;
}

export const DEFAULT_EVENT_STREAM_TIMING: EventStreamTiming = { settleMs: 1_000, lateWindowMs: 60_000, pollMs: 200, pageSize: 500 };

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
 * A merchant's events after the cursor, oldest first, then live, for as long as `active()` says.
 * No cursor starts at the present. What it yields it never yields twice; the caller's pace is
 * its pace (it pulls), so a slow reader holds one page at most.
 */
export function eventStreamUseCase({
  db,
  eventRetentionDays,
  timing = DEFAULT_EVENT_STREAM_TIMING,
  now = () => new Date(),
}: {
  db: Db;
  eventRetentionDays: number;
  timing?: EventStreamTiming;
  now?: () => Date;
}) {
  return async function* followEvents(merchantId: MerchantId, cursor: EventCursor, topics: string[], active: () => boolean): AsyncGenerator<StoredEvent> {
    checkEventStreamRequest(cursor, topics);
    const start = now();
    const initial = !cursor ? idFloorAt('evt', start.getTime()) : 'afterEventId' in cursor ? cursor.afterEventId : idFloorAt('evt', cursor.startTime.getTime());
    let after = initial;
    /** Ids sent within the late window, so a late event below the cursor goes out once. */
    const sent = new Map<string, number>();
    let lateSince = start;
    while (active()) {
      const moment = now();
      const notBefore = new Date(moment.getTime() - eventRetentionDays * 86_400_000);
      const settled = idFloorAt('evt', moment.getTime() - timing.settleMs);
      const fresh = await streamEventsForMerchant(db, merchantId, { afterId: after, beforeId: settled, topics, notBefore, limit: timing.pageSize });
      const late =
        fresh.length < timing.pageSize
          ? (
              await streamEventsForMerchant(db, merchantId, {
                afterId: initial,
                beforeId: after,
                receivedSince: new Date(lateSince.getTime() - timing.settleMs),
                topics,
                notBefore,
                limit: timing.pageSize,
              })
            ).filter((event) => !sent.has(event.id))
          : [];
      if (late.length < timing.pageSize) lateSince = moment;
      for (const event of [...late, ...fresh]) {
        if (!active()) return;
        if (sent.has(event.id)) continue;
        sent.set(event.id, moment.getTime());
        if (event.id > after) after = event.id;
        yield event;
      }
      for (const [id, at] of sent) if (at < moment.getTime() - timing.lateWindowMs) sent.delete(id);
      if (fresh.length < timing.pageSize) await new Promise((resolve) => setTimeout(resolve, timing.pollMs));
    }
  };
}

export type FollowEvents = ReturnType<typeof eventStreamUseCase>;
