import { setTimeout as sleep } from 'node:timers/promises';
import { expect } from 'chai';
import pg from 'pg';
import type { Pool } from '../../src/core/db/pool.js';
import { replayDeadDeliveries } from '../../src/delivery/sql/history.js';
import { claimDue, PAYLOAD_GONE } from '../../src/delivery/sql/queue.js';
import { unfinishedOrderKeyCounts, unfinishedOrderKeys, unfinishedOrderKeysOf } from '../../src/delivery/sql/order-keys.js';
import type { ReceivedRequest } from '../support/receiver.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { deliveriesSeqScans, explaining as explainingPool } from '../support/plans.js';
import { eventually, startPipeline, type Pipeline } from './support.js';
import { HttpClient } from '../support/http.js';

// Row ordering (`ordering: "row"`): the changes of one row are delivered one at a time, in commit
// order, through the stream and through the retry queue; other rows are not held up.

interface Arrival {
  eventId: string;
  row: number;
  version: number;
  ok: boolean;
  at: number;
}

function arrivals(requests: ReceivedRequest[], status: (r: ReceivedRequest) => boolean): Arrival[] {
  return requests.map((r) => {
    const body = JSON.parse(r.body);
    return { eventId: body.id, row: body.record.id, version: body.record.version, ok: status(r), at: r.at };
  });
}

/**
 * Per row, the versions in the order the receiver first accepted (2xx) each change; and whether
 * any change of a row was requested before the row's previous change had been accepted.
 */
function byRow(list: Arrival[]): { accepted: Map<number, number[]>; early: string[] } {
  const accepted = new Map<number, number[]>();
  const seen = new Set<string>();
  const early: string[] = [];
  for (const a of list) {
    const versions = accepted.get(a.row) ?? [];
    accepted.set(a.row, versions);
    if (!seen.has(a.eventId) && versions.length > 0 && a.version > versions.at(-1)! + 1) early.push(`${a.row}:v${a.version}`);
    if (a.ok && !seen.has(a.eventId)) {
      seen.add(a.eventId);
      versions.push(a.version);
    }
  }
  return { accepted, early };
}

describe('delivery: row ordering', function () {
  this.timeout(120_000);
  let p: Pipeline;
  /** Answers per request (true: 2xx), in the order of p.receiver.requests. */
  let answered: boolean[];
  const accepted = () => arrivals(p.receiver.requests, (r) => answered[p.receiver.requests.indexOf(r)] === true);

  before(async () => {
    p = await startPipeline({ WEBHOOK_RETRY_DELAYS_MS: '0,300,300,300,300', WEBHOOK_TIMEOUT_MS: '5000', WEBHOOK_BREAKER_FAILURES: '1000' });
    await p.writer.query('CREATE TABLE shop_master.items (id int PRIMARY KEY, version int NOT NULL)');
  });
  after(() => p?.close());
  beforeEach(async () => {
    await p.removeSubscriptions();
    await p.writer.query('TRUNCATE shop_master.items');
    p.receiver.requests.length = 0;
    answered = [];
  });

  /** The receiver answers 2xx unless `fail` says otherwise for this request; every answer is recorded. */
  function receive(
    fail: (body: { id: string; record: { id: number; version: number } }, attempt: number) => boolean | Record<string, string>,
  ) {
    const attempts = new Map<string, number>();
    p.receiver.behave = (req, index) => {
      const body = JSON.parse(req.body);
      const n = (attempts.get(body.id) ?? 0) + 1;
      attempts.set(body.id, n);
      const verdict = fail(body, n);
      answered[index] = verdict === false;
      if (verdict === false) return { status: 200 };
      return { status: 503, headers: verdict === true ? {} : verdict };
    };
  }

  const subscribe = () => p.subscribe({ table: 'items', ordering: 'row', events: ['INSERT', 'UPDATE', 'DELETE'] });

  /** Inserts rows 1..`rows` at version 1 and bumps them to `versions`; waits until all those changes have a delivery row. */
  async function writeParked(wh: string, rows: number, versions: number) {
    await p.writer.query('INSERT INTO shop_master.items SELECT g, 1 FROM generate_series(1, $1::int) g', [rows]);
    for (let v = 2; v <= versions; v++) await p.writer.query('UPDATE shop_master.items SET version = $1', [v]);
    return eventually(
      () => p.delivery(wh),
      (r) => r.length === rows * versions,
      20_000,
    );
  }

  /** Waits until every delivery of `wh` is delivered; each row's versions 1..`versions` were accepted in order, none requested early. */
  async function expectDrainedInOrder(wh: string, rows: number, versions: number) {
    await eventually(
      () => p.delivery(wh),
      (r) => r.every((d) => d.status === 'delivered'),
      30_000,
    );
    const { accepted: byRows, early } = byRow(accepted());
    expect(early, 'a change sent before the previous change of its row was accepted').to.deep.equal([]);
    const all = Array.from({ length: versions }, (_, i) => i + 1);
    for (let row = 1; row <= rows; row++) expect(byRows.get(row), `row ${row}`).to.deep.equal(all);
  }

  it('a failing change holds back only the later changes of its own row; the other rows flow meanwhile', async () => {
    receive((b, attempt) => b.record.id === 1 && b.record.version === 1 && attempt <= 3);
    await subscribe();
    await p.writer.query('INSERT INTO shop_master.items SELECT g, 1 FROM generate_series(1, 10) g');
    for (let v = 2; v <= 6; v++) await p.writer.query('UPDATE shop_master.items SET version = $1', [v]);
    await eventually(
      async () =>
        new Set(
          accepted()
            .filter((a) => a.ok)
            .map((a) => a.eventId),
        ).size,
      (n) => n === 60,
      30_000,
    );
    const list = accepted();
    const { accepted: rows, early } = byRow(list);
    expect(early, 'a change sent before the previous change of its row was accepted').to.deep.equal([]);
    for (let row = 1; row <= 10; row++) expect(rows.get(row), `row ${row}`).to.deep.equal([1, 2, 3, 4, 5, 6]);
    // Row 1's first change failed three times (300 ms apart): the other rows did not wait for it.
    const row1First = list.find((a) => a.row === 1 && a.version === 1 && a.ok)!.at;
    const othersDone = Math.max(...list.filter((a) => a.row !== 1 && a.version === 6 && a.ok).map((a) => a.at));
    expect(othersDone, 'the other rows were delivered before row 1 got through').to.be.below(row1First);
    expect(list.filter((a) => a.row === 1 && a.version === 1)).to.have.length(4);
  });

  it("through the retry queue: each row's backlog drains one change at a time, in commit order", async () => {
    // Every first attempt fails, and asks for 2 s: every change is parked, most behind their row's first.
    let failing = true;
    receive(() => (failing ? { 'retry-after': '2' } : false));
    const wh = await subscribe();
    const parked = await writeParked(wh, 5, 10);
    expect(parked.every((d) => d.order_key !== null && d.order_key_old === null)).to.equal(true);
    expect(new Set(parked.map((d) => d.order_key)).size, 'one key per row').to.equal(5);
    failing = false;
    await expectDrainedInOrder(wh, 5, 10);
    // Only each row's first change was sent while it failed: the others waited behind it unsent.
    const failed = accepted().filter((a) => !a.ok);
    expect(new Set(failed.map((a) => `${a.row}:${a.version}`))).to.deep.equal(new Set([1, 2, 3, 4, 5].map((r) => `${r}:1`)));
  });

  it("after an outage a row's backlog goes in runs: back to back, in order, with ≥ 5× fewer claims than one change per row per claim", async () => {
    let failing = true;
    receive(() => (failing ? { 'retry-after': '2' } : false));
    const wh = await subscribe();
    const ROWS = 10;
    const VERSIONS = 30;
    await writeParked(wh, ROWS, VERSIONS);
    const claimsBefore = p.worker.stats.queue.claims;
    failing = false;
    await expectDrainedInOrder(wh, ROWS, VERSIONS);
    const claims = p.worker.stats.queue.claims - claimsBefore;
    // One change per row per claim would take at least VERSIONS claims to drain the rows.
    expect(claims, 'claims that found due deliveries while the backlog drained').to.be.at.most(VERSIONS / 5);
  });

  it("a run stops at its first failure: the row's later changes wait behind it, unsent", async () => {
    // Row 1's version 5 fails twice after the outage: versions 6.. of row 1 must not go before it.
    let failing = true;
    receive((b, attempt) => (failing ? { 'retry-after': '2' } : b.record.id === 1 && b.record.version === 5 && attempt <= 2));
    const wh = await subscribe();
    await writeParked(wh, 3, 12);
    failing = false;
    await expectDrainedInOrder(wh, 3, 12);
    const row1v5 = accepted().filter((a) => a.row === 1 && a.version === 5);
    expect(
      row1v5.map((a) => a.ok),
      "row 1's version 5: two failures after the outage, then accepted",
    ).to.deep.equal([false, false, true]);
  });

  it('onDead "hold": a dead change holds its row (only its row); a retry sends it first and the row follows in order; a discard lets the rest go', async () => {
    const api = new HttpClient(p.t.url, {
      authorization: `Bearer ${await p.t.managementToken('shop')}`,
      'x-project-id': 'shop',
      environment: 'master',
    });
    let failing = new Set(['1:1', '3:1']);
    receive((b) => failing.has(`${b.record.id}:${b.record.version}`));
    const wh = await p.subscribe({ table: 'items', ordering: 'row', onDead: 'hold', events: ['INSERT', 'UPDATE'] });
    await p.writer.query('INSERT INTO shop_master.items VALUES (1, 1), (2, 1), (3, 1)');
    await p.writer.query('UPDATE shop_master.items SET version = 2');
    await p.writer.query('UPDATE shop_master.items SET version = 3');
    const held = await eventually(
      () => p.delivery(wh),
      (r) => r.filter((d) => d.status === 'dead').length === 2 && byRow(accepted()).accepted.get(2)?.length === 3,
      20_000,
    );
    const [dead1, dead3] = held.filter((d) => d.status === 'dead');
    expect(dead1!.holds_row && dead3!.holds_row).to.equal(true);
    await sleep(1000);
    // Rows 1 and 3 wait behind their dead letters: nothing after version 1 was even requested.
    expect(accepted().filter((a) => a.row !== 2 && a.version > 1)).to.deep.equal([]);
    const listed = await api.get(`/api/rest/_webhooks/${wh}/deliveries/${dead1!.id}`);
    expect(listed.body.delivery.holdsRow).to.equal(true);

    // Row 1: the receiver is fixed; a retry sends the dead letter first, then the row follows.
    failing = new Set(['3:1']);
    expect((await api.post(`/api/rest/_webhooks/${wh}/deliveries/${dead1!.id}/retry`, {})).status).to.equal(202);
    await eventually(
      async () => byRow(accepted()).accepted.get(1),
      (v) => v?.length === 3,
      15_000,
    );
    expect(byRow(accepted()).accepted.get(1)).to.deep.equal([1, 2, 3]);
    expect(byRow(accepted()).early).to.deep.equal([]);

    // Row 3: discarded — it stays dead and listed, its row goes on.
    const discarded = await api.post(`/api/rest/_webhooks/${wh}/deliveries/${dead3!.id}/discard`, {});
    expect(discarded.status).to.equal(200);
    expect(discarded.body.delivery).to.include({ status: 'dead', holdsRow: false });
    await eventually(
      async () => byRow(accepted()).accepted.get(3),
      (v) => v?.length === 2,
      15_000,
    );
    expect(byRow(accepted()).accepted.get(3)).to.deep.equal([2, 3]);
    // A delivery that holds nothing cannot be discarded.
    const again = await api.post(`/api/rest/_webhooks/${wh}/deliveries/${dead3!.id}/discard`, {});
    expect(again.status).to.equal(409);
    expect(again.body.error).to.equal('DELIVERY_NOT_HELD');
  });

  it('onDead is validated: an unknown value, or "hold" without row ordering, is a 400 naming the field', async () => {
    const api = new HttpClient(p.t.url, {
      authorization: `Bearer ${await p.t.managementToken('shop')}`,
      'x-project-id': 'shop',
      environment: 'master',
    });
    const base = {
      projectId: 'shop',
      environment: 'master',
      table: 'items',
      events: ['INSERT'],
      url: `${p.receiver.url}/h`,
      secret: 'hold-secret-0123456789',
    };
    for (const extra of [{ onDead: 'hold' }, { onDead: 'hold', ordering: 'none' }, { onDead: 'wait', ordering: 'row' }]) {
      const res = await api.post('/api/rest/_webhooks', { ...base, ...extra });
      expect(res.status, JSON.stringify(extra)).to.equal(400);
      expect(res.body.violations.map((v: { path: string }) => v.path)).to.include('onDead');
    }
    const ok = await api.post('/api/rest/_webhooks', { ...base, ordering: 'row', onDead: 'hold' });
    expect(ok.status).to.equal(201);
    expect(ok.body.webhook.onDead).to.equal('hold');
    const unordered = await api.patch(`/api/rest/_webhooks/${ok.body.webhook.id}`, { ordering: 'none', onDead: 'hold' });
    expect(unordered.status).to.equal(400);
    expect(unordered.body.violations.map((v: { path: string }) => v.path)).to.include('onDead');
  });

  it('a head whose payload is gone (event pruned, no body kept) ends dead, saying why, and releases its row', async () => {
    // Row 1's first change fails and asks for 60 s: its next change parks behind it.
    receive((b) => (b.record.id === 1 && b.record.version === 1 ? { 'retry-after': '60' } : false));
    const wh = await subscribe();
    await p.writer.query('INSERT INTO shop_master.items VALUES (1, 1)');
    await p.writer.query('UPDATE shop_master.items SET version = 2');
    const [head, next] = await eventually(
      () => p.delivery(wh),
      (r) => r.length === 2 && r[0]!.status === 'retrying' && r[1]!.status === 'pending',
    );
    // Its payload goes (pruned, with WEBHOOK_KEEP_PAYLOADS off), and it comes due.
    await p.t.ctx.pool.query('UPDATE walgate.deliveries SET payload = NULL, next_attempt_at = now() WHERE id = $1', [head!.id]);
    await p.t.ctx.pool.query('DELETE FROM walgate.events WHERE id = $1', [head!.event_id]);
    const done = await eventually(
      () => p.delivery(wh),
      (r) => r[0]!.status === 'dead' && r[1]!.status === 'delivered',
      10_000,
    );
    expect(done[0]!.last_error).to.equal(PAYLOAD_GONE);
    expect(done[1]!.id).to.equal(next!.id);
    expect(byRow(accepted()).accepted.get(1)).to.deep.equal([2]);
  });

  it("a dead letter releases its row's next change; a replayed dead letter goes at once, behind nothing and blocking nothing", async () => {
    let replayFails = true;
    receive((b, attempt) => b.record.id === 1 && b.record.version === 1 && (attempt <= 5 || (replayFails && attempt <= 9)));
    const wh = await subscribe();
    await p.writer.query('INSERT INTO shop_master.items VALUES (1, 1), (2, 1)');
    await p.writer.query('UPDATE shop_master.items SET version = 2');
    await p.writer.query('UPDATE shop_master.items SET version = 3');
    const rows = await eventually(
      () => p.delivery(wh),
      (r) => r.length === 6 && r.filter((d) => d.status === 'delivered').length === 5 && r.some((d) => d.status === 'dead'),
      20_000,
    );
    const dead = rows.find((d) => d.status === 'dead')!;
    expect(dead.attempts).to.equal(5);
    let list = accepted();
    const lastFailure = list.filter((a) => a.row === 1 && a.version === 1).at(-1)!.at;
    const v2 = list.find((a) => a.row === 1 && a.version === 2)!;
    expect(v2.at, 'the next change went once the first was dead').to.be.at.least(lastFailure);
    expect(byRow(list).accepted.get(1)).to.deep.equal([2, 3]);
    expect(byRow(list).accepted.get(2)).to.deep.equal([1, 2, 3]);

    // previous_event_id: each change names its row's change sent before it. A receiver that keeps
    // the last id it accepted per row sees the gap the dead letter left: row 1's version 2 names
    // an id it never accepted.
    const seen = new Map<string, { id: string; previous_event_id: string | null; record: { id: number } }>();
    p.receiver.requests.forEach((r, i) => {
      const body = JSON.parse(r.body);
      if (answered[i]) seen.set(body.id, body);
    });
    const chain = (row: number) => [...seen.values()].filter((b) => b.record.id === row).sort((a, b) => (a.id < b.id ? -1 : 1));
    const row2 = chain(2);
    expect(row2.map((b) => b.previous_event_id)).to.deep.equal([null, row2[0]!.id, row2[1]!.id]);
    const row1 = chain(1);
    expect(row1.map((b) => b.previous_event_id)).to.deep.equal([dead.event_id, row1[0]!.id]);
    expect(seen.has(dead.event_id), 'the receiver never accepted the change it is told came before').to.equal(false);

    // Replayed, it is sent at once, and while it fails again a new change of its row is not held back.
    expect(await replayDeadDeliveries(p.t.ctx.pool, { webhookId: wh }, new Date())).to.equal(1);
    const replayed = (await p.t.ctx.pool.query('SELECT order_key, order_key_old FROM walgate.deliveries WHERE id = $1', [dead.id])).rows[0];
    expect(replayed).to.deep.equal({ order_key: null, order_key_old: null });
    await p.writer.query('UPDATE shop_master.items SET version = 4 WHERE id = 1');
    await eventually(
      async () => accepted().some((a) => a.row === 1 && a.version === 4 && a.ok),
      (ok) => ok,
      10_000,
    );
    list = accepted();
    expect(
      list.some((a) => a.row === 1 && a.version === 1 && a.ok),
      'the replayed one is still failing',
    ).to.equal(false);
    replayFails = false;
    await eventually(
      () => p.delivery(wh),
      (r) => r.every((d) => d.status === 'delivered'),
      20_000,
    );
    // It arrived after the row's later changes: a replay promises no order (README: Ordering).
    expect(byRow(accepted()).accepted.get(1)).to.deep.equal([2, 3, 4, 1]);
  });

  it('a change of the primary key orders with the old key and with the new one', async () => {
    // id 1 → 3: waits for id 1's earlier change; id 3's next change and a new id 1 wait for it.
    receive((b, attempt) => (b.record.id === 1 && b.record.version === 1 && attempt <= 2) || (b.record.version === 2 && attempt <= 2));
    const wh = await subscribe();
    await p.writer.query('INSERT INTO shop_master.items VALUES (1, 1)');
    await p.writer.query('UPDATE shop_master.items SET id = 3, version = 2 WHERE id = 1');
    await p.writer.query('UPDATE shop_master.items SET version = 3 WHERE id = 3');
    await p.writer.query('INSERT INTO shop_master.items VALUES (1, 4)');
    const rows = await eventually(
      () => p.delivery(wh),
      (r) => r.length === 4 && r.every((d) => d.status === 'delivered'),
      20_000,
    );
    const moved = rows.find((d) => d.event_type === 'UPDATE' && d.order_key_old !== null);
    expect(moved, 'the key change was parked with both keys').to.not.equal(undefined);
    // First 2xx of each version, in arrival order, over both ids.
    const list = accepted();
    const firstOk = (v: number) => list.find((a) => a.version === v && a.ok)!.at;
    const firstSent = (v: number) => list.find((a) => a.version === v)!.at;
    expect(firstSent(2), 'the key change waited for the old key').to.be.at.least(firstOk(1));
    expect(firstSent(3), 'the new key waited for the key change').to.be.at.least(firstOk(2));
    expect(firstSent(4), 'the old key, reused, waited for the key change').to.be.at.least(firstOk(2));
  });
});

describe('delivery: row ordering in the retry queue reads indexes, not the table', function () {
  this.timeout(60_000);
  let db: TestDatabase;
  let pool: pg.Pool;
  before(async () => {
    db = await createTestDatabase();
    pool = new pg.Pool({ connectionString: db.url, max: 2 });
    // 60,000 deliveries of a row-ordered subscription: most delivered, 6,000 unfinished over 200 rows.
    await pool.query(`
      INSERT INTO walgate.projects (id) VALUES ('p');
      INSERT INTO walgate.environments (project_id, name, schema_name) VALUES ('p', 'e', 'p_e');
      INSERT INTO walgate.webhooks (id, project_id, environment, schema_name, table_name, events, url, secret, ordering)
        VALUES ('wh_1', 'p', 'e', 'p_e', 't', '{UPDATE}', 'https://example.com', '\\x00', 'row'),
               ('wh_2', 'p', 'e', 'p_e', 't', '{UPDATE}', 'https://example.com', '\\x00', 'none');
      INSERT INTO walgate.events (id, schema_name, table_name, operation, committed_at, columns, record, changed_fields)
        SELECT 'evt_' || lpad(g::text, 10, '0'), 'p_e', 't', 'UPDATE', now(), '{id}', '{1}', '{}' FROM generate_series(1, 60000) g;
      INSERT INTO walgate.deliveries (id, webhook_id, event_id, event_type, status, attempts, next_attempt_at, created_at, order_key, order_key_old)
        SELECT 'del_' || lpad(g::text, 10, '0'), CASE WHEN g % 7 = 0 THEN 'wh_2' ELSE 'wh_1' END, 'evt_' || lpad(g::text, 10, '0'), 'UPDATE',
               CASE WHEN g > 54000 THEN 'pending' ELSE 'delivered' END, 1, now() - interval '1 s', now(),
               CASE WHEN g % 7 <> 0 THEN 'k' || (g % 200) END, CASE WHEN g % 7 <> 0 AND g % 1000 = 1 THEN 'k' || (g % 200 + 1) END
          FROM generate_series(1, 60000) g;
      ANALYZE;`);
  });
  after(async () => {
    await pool?.end();
    await db?.drop();
  });

  it('the claim, the blocked-key check and the load at stream open use index scans on walgate.deliveries', async () => {
    const plans: unknown[] = [];
    const explaining = explainingPool(pool, plans, { rows: [], rowCount: 0 });
    const now = new Date();
    await claimDue(explaining, { now, leaseUntil: new Date(now.getTime() + 60_000), limit: 256, perWebhook: 128, inflight: new Map() });
    await unfinishedOrderKeys(
      explaining,
      Array.from({ length: 200 }, (_, i) => ({ webhookId: 'wh_1', key: `k${i}` })),
    );
    await unfinishedOrderKeyCounts(explaining);
    await unfinishedOrderKeysOf(explaining, ['wh_1']);
    const text = JSON.stringify(plans);
    expect(deliveriesSeqScans(plans), text.slice(0, 3000)).to.have.length(0);
    // The claim's predecessor checks probe the two order-key indexes.
    const claim = JSON.stringify(plans[0]);
    expect(claim).to.contain('deliveries_unfinished_by_order_key');
    expect(claim).to.contain('deliveries_unfinished_by_old_order_key');
    // Candidates come from the row keys' heads and the unordered due range (sql/035), never from a
    // walk of the due deliveries (every subscription's, or one's), blocked ones included.
    expect(claim).to.contain('deliveries_unfinished_order_keys_by_webhook');
    expect(claim).to.contain('deliveries_due_unordered_by_webhook');
    expect(claim).not.to.match(/"deliveries_due"|deliveries_due_by_webhook/);
  });

  it('claims only the first unfinished delivery of each row, and both keys of a key change block', async () => {
    const now = new Date();
    const claimed = await claimDue(pool as unknown as Pool, {
      now,
      leaseUntil: new Date(now.getTime() + 60_000),
      limit: 2000,
      perWebhook: 1000,
      inflight: new Map(),
    });
    const mine = claimed.filter((c) => c.webhook_id === 'wh_1');
    const { rows } = await pool.query(`SELECT id, order_key, order_key_old FROM walgate.deliveries WHERE id = ANY ($1) ORDER BY event_id`, [
      mine.map((c) => c.id),
    ]);
    // One per key at most, and never one whose key an earlier unfinished delivery holds as its old key.
    const keys = rows.flatMap((r) => [r.order_key, r.order_key_old].filter(Boolean));
    expect(new Set(keys).size).to.equal(keys.length);
    expect(mine.every((c) => c.ordered)).to.equal(true);
    const first = await pool.query(
      `SELECT DISTINCT ON (order_key) id FROM walgate.deliveries
        WHERE webhook_id = 'wh_1' AND status = 'pending' ORDER BY order_key, event_id`,
    );
    expect(rows.length).to.be.greaterThan(100).and.at.most(first.rowCount!);
    // The unordered subscription's deliveries are all claimable at once.
    expect(claimed.filter((c) => c.webhook_id === 'wh_2').length).to.equal(
      (await pool.query(`SELECT count(*)::int AS n FROM walgate.deliveries WHERE webhook_id = 'wh_2' AND status = 'pending'`)).rows[0].n,
    );
    await sleep(0);
  });

  it('after an outage: with 50,000 deliveries parked behind 500 rows whose heads wait in backoff, a claim takes exactly the due heads and reads no blocked backlog', async () => {
    // A receiver outage's aftermath: each row's first unfinished delivery (its head) failed and waits
    // for its retry; the row's later changes were parked behind it, "due" since they were parked.
    // 20 heads are due now. Only those 20 may go, and finding them must not cost a walk over the
    // 49,500 blocked ones (the claim did that before sql/035: ~25 deliveries/s after an outage).
    await pool.query(`
      INSERT INTO walgate.webhooks (id, project_id, environment, schema_name, table_name, events, url, secret, ordering)
        VALUES ('wh_3', 'p', 'e', 'p_e', 't', '{UPDATE}', 'https://example.com', '\\x00', 'row');
      INSERT INTO walgate.events (id, schema_name, table_name, operation, committed_at, columns, record, changed_fields)
        SELECT 'evt_b' || lpad(g::text, 10, '0'), 'p_e', 't', 'UPDATE', now(), '{id}', '{1}', '{}' FROM generate_series(1, 50000) g;
      INSERT INTO walgate.deliveries (id, webhook_id, event_id, event_type, status, attempts, next_attempt_at, created_at, order_key)
        SELECT 'del_b' || lpad(g::text, 10, '0'), 'wh_3', 'evt_b' || lpad(g::text, 10, '0'), 'UPDATE',
               CASE WHEN g <= 500 THEN 'retrying' ELSE 'pending' END, CASE WHEN g <= 500 THEN 1 ELSE 0 END,
               CASE WHEN g > 500 THEN now() - interval '1 min' WHEN g % 25 = 0 THEN now() - interval '1 s' ELSE now() + interval '30 s' END,
               -- Keys as the tailer makes them (base64url SHA-256, tailer/order-keys.ts).
               now(), translate(rtrim(encode(sha256(convert_to('b' || (g % 500), 'UTF8')), 'base64'), '='), '+/', '-_')
          FROM generate_series(1, 50000) g;
      ANALYZE walgate.deliveries;`);
    const dueHeads = Array.from({ length: 20 }, (_, i) => `del_b${String((i + 1) * 25).padStart(10, '0')}`);
    // The other subscriptions count as full: this claim is wh_3's alone.
    const inflight = new Map([
      ['wh_1', 1000],
      ['wh_2', 1000],
    ]);
    const claimOf = (now: Date, maxKeys?: number) => ({
      now,
      leaseUntil: new Date(now.getTime() + 60_000),
      limit: 2000,
      perWebhook: 1000,
      inflight,
      maxKeys,
    });

    // What the claim reads of walgate.deliveries, measured by running it (rolled back).
    const rowsRead = async (maxKeys?: number): Promise<{ read: number; plan: string }> => {
      const client = await pool.connect();
      try {
        await client.query('BEGIN');
        let plan: unknown;
        const explaining = {
          query: async (text: string, values?: unknown[]) => {
            const { rows } = await client.query(`EXPLAIN (ANALYZE, FORMAT JSON) ${text}`, values);
            plan = rows[0]['QUERY PLAN'];
            return { rows: [], rowCount: 0 };
          },
        } as unknown as Pool;
        await claimDue(explaining, claimOf(new Date(), maxKeys));
        return { read: deliveriesRowsRead(plan), plan: JSON.stringify(plan) };
      } finally {
        await client.query('ROLLBACK');
        client.release();
      }
    };
    const measured = await rowsRead();
    // 500 heads visited (one index descent each), the 20 due ones checked and locked.
    expect(measured.read, measured.plan.slice(0, 3000)).to.be.at.least(500).and.below(2_000);
    expect(measured.plan).to.contain('deliveries_unfinished_order_keys_by_webhook');
    expect(measured.plan).not.to.contain('deliveries_due_by_webhook');
    // Bounded when the heads are many: 100 keys on each side of the start at most.
    const bounded = await rowsRead(100);
    expect(bounded.read, bounded.plan.slice(0, 3000)).to.be.below(400);

    const claimed = await claimDue(pool as unknown as Pool, claimOf(new Date()));
    expect(claimed.map((c) => c.id).sort()).to.deep.equal(dueHeads);
    // Claimed now (leased), they block their rows: the next claim finds nothing of wh_3.
    expect(await claimDue(pool as unknown as Pool, claimOf(new Date()))).to.deep.equal([]);
    // A head delivered: its row's next change (parked, due since) is claimable at once.
    await pool.query(`UPDATE walgate.deliveries SET status = 'delivered', delivered_at = now() WHERE id = $1`, [dueHeads[0]]);
    const next = await claimDue(pool as unknown as Pool, claimOf(new Date()));
    expect(next.map((c) => c.id)).to.deep.equal([`del_b${String(25 + 500).padStart(10, '0')}`]);
  });

  it('a claim that may visit only a few row keys still reaches every due head over the next claims (its start moves)', async () => {
    // 99 due heads over 500 rows (the heads of every fifth row; row b25's head is claimed), and
    // claims that visit at most 25 keys from their start and 25 from the first key.
    await pool.query(`UPDATE walgate.deliveries SET next_attempt_at = now() - interval '1 s'
                       WHERE webhook_id = 'wh_3' AND status = 'retrying' AND id <= 'del_b0000000500' AND right(id, 1) IN ('0', '5')`);
    const due = (
      await pool.query(`SELECT id FROM walgate.deliveries
                         WHERE webhook_id = 'wh_3' AND status = 'retrying' AND id <= 'del_b0000000500' AND right(id, 1) IN ('0', '5')
                           AND id <> 'del_b0000000025' ORDER BY id`)
    ).rows.map((r) => r.id as string);
    expect(due).to.have.length(99);
    const inflight = new Map([
      ['wh_1', 1000],
      ['wh_2', 1000],
    ]);
    const seen = new Set<string>();
    let claims = 0;
    for (; claims < 300 && seen.size < due.length; claims++) {
      const now = new Date();
      const claimed = await claimDue(pool as unknown as Pool, {
        now,
        leaseUntil: new Date(now.getTime() + 60_000),
        limit: 1000,
        perWebhook: 1000,
        inflight,
        maxKeys: 25,
      });
      for (const c of claimed) seen.add(c.id);
    }
    expect([...seen].sort()).to.deep.equal(due);
    expect(claims).to.be.above(1);
  });
});

/** Rows a plan's nodes on walgate.deliveries and its indexes read (returned or filtered out), over all their loops. */
function deliveriesRowsRead(plan: unknown): number {
  let read = 0;
  const visit = (node: Record<string, unknown>): void => {
    // Bitmap index scans name their index, not the table.
    if (node['Relation Name'] === 'deliveries' || String(node['Index Name'] ?? '').startsWith('deliveries_')) {
      const rows =
        Number(node['Actual Rows'] ?? 0) + Number(node['Rows Removed by Filter'] ?? 0) + Number(node['Rows Removed by Index Recheck'] ?? 0);
      read += rows * Number(node['Actual Loops'] ?? 1);
    }
    for (const child of (node.Plans as Array<Record<string, unknown>> | undefined) ?? []) visit(child);
  };
  for (const root of plan as Array<{ Plan: Record<string, unknown> }>) visit(root.Plan);
  return read;
}
