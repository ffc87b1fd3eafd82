import { expect } from 'chai';
import { renderPayload, type PayloadRow } from '../../../src/delivery/payload.js';

// The body of a delivery, from a stored event and its subscription: the interface's fields
// (id, timestamp, project_id, environment, table, event, record, data, changed_fields) plus
// old_record; `select` applied to every image; the same bytes on every attempt.

const UPDATE: PayloadRow = {
  event_id: 'evt_0000000001A2B3C4_000007',
  schema_name: 'public',
  table_name: 'orders',
  operation: 'UPDATE',
  committed_at: new Date('2026-01-02T03:04:05.678Z'),
  columns: ['id', 'status', 'total', 'card', 'meta'],
  record: ['9007199254740993', '"paid"', '10.50', '"4242"', '{"a": [1, 2.50]}'],
  old_record: ['9007199254740993', '"open"', '10.50', '"4242"', 'null'],
  changed_fields: ['status', 'meta'],
  project_id: 'proj_1',
  environment: 'production',
  select_fields: null,
  previous_event_id: null,
};

describe('unit: payload building', () => {
  it('renders the interface fields, record and data identical, values embedded with every digit', () => {
    const body = renderPayload(UPDATE);
    expect(body).to.equal(
      '{"id":"evt_0000000001A2B3C4_000007","timestamp":"2026-01-02T03:04:05.678Z","project_id":"proj_1",' +
        '"environment":"production","table":"orders","event":"UPDATE",' +
        '"record":{"id":9007199254740993,"status":"paid","total":10.50,"card":"4242","meta":{"a": [1, 2.50]}},' +
        '"data":{"id":9007199254740993,"status":"paid","total":10.50,"card":"4242","meta":{"a": [1, 2.50]}},' +
        '"old_record":{"id":9007199254740993,"status":"open","total":10.50,"card":"4242","meta":null},' +
        '"changed_fields":["status","meta"],"previous_event_id":null}',
    );
    expect(() => JSON.parse(body)).not.to.throw();
  });

  it('previous_event_id: the row-ordered delivery’s previous change, as stored on its row', () => {
    const body = JSON.parse(renderPayload({ ...UPDATE, previous_event_id: 'evt_0000000001A2B3C4_000006' })) as Record<string, unknown>;
    expect(body.previous_event_id).to.equal('evt_0000000001A2B3C4_000006');
  });

  it('is the same bytes every time it is rendered (retries sign the same body)', () => {
    expect(renderPayload({ ...UPDATE })).to.equal(renderPayload(UPDATE));
  });

  it('select restricts record, data, old_record and changed_fields; unknown names are ignored', () => {
    const body = JSON.parse(renderPayload({ ...UPDATE, select_fields: ['id', 'status', 'nope'] })) as Record<string, unknown>;
    expect(body.record).to.deep.equal({ id: 9007199254740992, status: 'paid' }); // (JSON.parse rounds the id)
    expect(body.data).to.deep.equal(body.record);
    expect(body.old_record).to.deep.equal({ id: 9007199254740992, status: 'open' });
    expect(body.changed_fields).to.deep.equal(['status']);
    expect(JSON.stringify(body)).not.to.include('4242');
  });

  it('an empty selection leaves empty images', () => {
    const body = JSON.parse(renderPayload({ ...UPDATE, select_fields: [] })) as Record<string, unknown>;
    expect(body).to.deep.include({ record: {}, data: {}, old_record: {}, changed_fields: [] });
  });

  it('INSERT and DELETE: changed_fields empty; old_record null when there is no old image', () => {
    const insert = JSON.parse(renderPayload({ ...UPDATE, operation: 'INSERT', old_record: null, changed_fields: [] })) as Record<
      string,
      unknown
    >;
    expect(insert).to.deep.include({ event: 'INSERT', old_record: null, changed_fields: [] });
    const del = JSON.parse(renderPayload({ ...UPDATE, operation: 'DELETE', record: UPDATE.old_record!, changed_fields: [] })) as Record<
      string,
      unknown
    >;
    expect(del).to.deep.include({ event: 'DELETE', changed_fields: [] });
    expect(del.record).to.deep.equal(del.old_record);
  });

  it('escapes names and identifiers as JSON strings', () => {
    const body = JSON.parse(
      renderPayload({ ...UPDATE, table_name: 'we"ird\\table', columns: ['a"b', 'status', 'total', 'card', 'meta'], environment: 'env\n' }),
    ) as Record<string, unknown>;
    expect(body).to.deep.include({ table: 'we"ird\\table', environment: 'env\n' });
    expect(body.record).to.have.property('a"b');
  });
});
