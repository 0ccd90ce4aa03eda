import assert from 'node:assert/strict';
import { createContractValidator, openApiDocument, recordDataFields, recordTypes } from '@merx/contracts';
import { ingestedRecordOfEvent, recordDataChecks, recordEvent, recordEventWithoutData, validateRecord, withRecordData } from './record.js';

const contract = createContractValidator();
const at = '2026-11-22T10:04:05.123Z';
const record = (type: string, data: unknown, extra: Record<string, unknown> = {}) => ({ type, external_id: 'X-1', occurred_at: at, data, ...extra });

/** Inputs on both sides of every rule RecordInput states; the size and depth limits only descriptions state are left to records.test.ts. */
const cases: Array<[what: string, input: unknown]> = [
  [
    'an order with its typed fields and fields of its own',
    record('order', { total: 129.9, currency: 'EUR', customer: { email: 'ada@example.com' }, line_items: [{ sku: 'A' }], channel: 'web', tags: ['x'] }),
  ],
  ['an order with no data fields', record('order', {})],
  ['an order total as a string', record('order', { total: '129.90' })],
  ['an order total of null', record('order', { total: null })],
  ['a lower-case currency', record('order', { currency: 'eur' })],
  ['customer as a string', record('order', { customer: 'ada' })],
  ['line_items as an object', record('order', { line_items: { sku: 'A' } })],
  ['a line item that is not an object', record('order', { line_items: [{ sku: 'A' }, 3] })],
  ['a review', record('review', { rating: 4.5, title: 'Good', body: '', author: 'ada', sku: 'MUG', stars: 5 })],
  ['a review rating as a string', record('review', { rating: 'five' })],
  ['a review title as a number', record('review', { title: 5 })],
  ['campaign spend', record('campaign_spend', { spend: '412.30', currency: 'USD', campaign_id: 'c-7', channel: 'search' })],
  ['campaign spend as a float', record('campaign_spend', { spend: 412.3 })],
  ['campaign spend with five decimals', record('campaign_spend', { spend: '1.00001' })],
  ['campaign spend negative', record('campaign_spend', { spend: '-1.00' })],
  ['an alert', record('alert', { message: 'Feed is late', severity: 'critical', feed: 'products' })],
  ['an alert without severity', record('alert', { message: 'Feed is late' })],
  ['an alert without message', record('alert', { severity: 'warning' })],
  ['an alert with a blank message', record('alert', { message: '   ' })],
  ['an alert with an empty message', record('alert', { message: '' })],
  ['an alert message of 1000 characters', record('alert', { message: 'é'.repeat(1000) })],
  ['an alert message of 1001 characters', record('alert', { message: 'é'.repeat(1001) })],
  ['an alert severity outside the enum', record('alert', { message: 'x', severity: 'info' })],
  ['an unknown type', record('refund', {})],
  ['no type', { external_id: 'X-1', occurred_at: at, data: {} }],
  ['no data', { type: 'order', external_id: 'X-1', occurred_at: at }],
  ['data as an array', record('order', [])],
  ['data as null', record('order', null)],
  ['an unknown member', record('order', {}, { source_id: 'src_x' })],
  ['a blank external_id', record('order', {}, { external_id: ' \t' })],
  ['an empty external_id', record('order', {}, { external_id: '' })],
  ['a 255-character external_id', record('order', {}, { external_id: 'x'.repeat(255) })],
  ['a 256-character external_id', record('order', {}, { external_id: 'x'.repeat(256) })],
  ['an external_id as a number', record('order', {}, { external_id: 7 })],
  ['a time with an offset and microseconds', record('order', {}, { occurred_at: '2026-11-22T11:04:05.123456+01:00' })],
  ['a time without fractions', record('order', {}, { occurred_at: '2026-11-22T10:04:05Z' })],
  ['a date only', record('order', {}, { occurred_at: '2026-11-22' })],
  ['a time without a zone', record('order', {}, { occurred_at: '2026-11-22T10:04:05' })],
  ['a time with a lower-case t', record('order', {}, { occurred_at: '2026-11-22t10:04:05Z' })],
  ['an impossible date', record('order', {}, { occurred_at: '2026-02-30T10:04:05Z' })],
  ['a leap day', record('order', {}, { occurred_at: '2028-02-29T10:04:05Z' })],
  ['hour 24', record('order', {}, { occurred_at: '2026-11-22T24:00:00Z' })],
  ['a record that is not an object', 'order'],
];

describe('record inputs: the server and the OpenAPI document agree', () => {
  for (const [what, input] of cases) {
    it(`${what}: ${validateRecord(input).errors.length === 0 ? 'accepted' : 'rejected'} by both`, () => {
      const server = validateRecord(input).errors;
      const documented = contract.validateComponent('RecordInput', input);
      assert.equal(documented.length === 0, server.length === 0, `server: ${JSON.stringify(server)}\ndocument: ${documented.join('\n')}`);
    });
  }

  it('types the same data fields on both sides', () => {
    for (const type of recordTypes) assert.deepEqual(Object.keys(recordDataChecks[type]).sort(), Object.keys(recordDataFields[type]).sort(), type);
  });

  it("accepts the document's own example batch record by record", () => {
    const media = openApiDocument.paths['/api/v1/sources/{id}/records']!.post!.requestBody!.content['application/json']!;
    const { records } = media.examples!.oneOfEach!.value as { records: unknown[] };
    assert.deepEqual(
      records.map((input) => validateRecord(input).errors),
      records.map(() => []),
    );
    assert.deepEqual([...new Set(records.map((input) => (input as { type: string }).type))].sort(), [...recordTypes].sort());
  });

  it('names every field of a rejected record as a path relative to it', () => {
    const { errors } = validateRecord(record('order', { total: 'x', line_items: [{}, 1] }, { external_id: '' }));
    assert.deepEqual(errors.map((error) => error.field).sort(), ['data.line_items[1]', 'data.total', 'external_id']);
  });
});

describe('record events without their data (the routing backlog)', () => {
  const ingested = (type: 'order' | 'alert', data: Record<string, unknown>) => ({
    id: 'rec_01jd3k7q8m2x4v6b9c0d1e2f3g',
    merchantId: 'mch_01jd3k7q8m2x4v6b9c0d1e2f3g',
    sourceId: 'src_01jd3k7q8m2x4v6b9c0d1e2f3g',
    type,
    external_id: 'X-1',
    occurred_at: at,
    data,
    eventId: 'evt_01jd3k7q8m2x4v6b9c0d1e2f3g',
    receivedAt: new Date(at),
  });

  for (const [type, data] of [
    ['order', { total: 12, items: [1, 2, 3] }],
    ['alert', { message: 'Budget exhausted', severity: 'critical' }],
  ] as const) {
    it(`takes the data out of ${type === 'order' ? 'an order' : "an alert's record"} and puts it back as it was`, () => {
      const { topic, object } = recordEvent(ingested(type, data));
      const event = { id: 'evt_1', topic, merchant_id: 'mch_1', data: { object } };
      const original = structuredClone(event);
      const thin = recordEventWithoutData(event)!;
      assert.equal(thin.recordId, 'rec_01jd3k7q8m2x4v6b9c0d1e2f3g');
      assert.equal(ingestedRecordOfEvent(topic, thin.event.data.object)!.data, null);
      assert.deepEqual(withRecordData(thin.event, { ...data }), original);
      assert.deepEqual(event, original, 'the event itself is left as it was');
    });
  }

  it('has nothing to take out of an event without an ingested record', () => {
    assert.equal(recordEventWithoutData({ topic: 'system_alerts.raised', data: { object: { object: 'system_alert', record: null } } }), undefined);
  });
});
