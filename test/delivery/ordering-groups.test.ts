import { setTimeout as sleep } from 'node:timers/promises';
import { expect } from 'chai';
import type { ReceivedRequest } from '../support/receiver.js';
import { eventually, startPipeline, type Pipeline } from './support.js';
import { HttpClient } from '../support/http.js';

// Group ordering (`ordering: {by: ["account_id"]}`): the changes of one account — any of its rows —
// are delivered one at a time, in commit order, through the stream and the retry queue; other
// accounts are not held up; a row moved to another account orders under both accounts.

interface Arrival {
  eventId: string;
  id: number;
  account: number | null;
  seq: number;
  ok: boolean;
  at: number;
}

/**
 * Per account: the `seq` (a counter per account, bumped in commit order by the writer) of each
 * change in the order the receiver first accepted it; and the changes requested before the
 * previous change of their account had been accepted.
 */
function byAccount(list: Arrival[]): { accepted: Map<number | null, number[]>; early: string[] } {
  const accepted = new Map<number | null, number[]>();
  const seen = new Set<string>();
  const early: string[] = [];
  for (const a of list) {
    const seqs = accepted.get(a.account) ?? [];
    accepted.set(a.account, seqs);
    if (!seen.has(a.eventId) && a.seq > (seqs.at(-1) ?? 0) + 1) early.push(`${a.account}:${a.seq}`);
    if (a.ok && !seen.has(a.eventId)) {
      seen.add(a.eventId);
      seqs.push(a.seq);
    }
  }
  return { accepted, early };
}

describe('delivery: ordering by a column group', function () {
  this.timeout(120_000);
  let p: Pipeline;
  let api: HttpClient;
  /** Answers per request (true: 2xx), in the order of p.receiver.requests. */
  let answered: boolean[];
  const arrivals = (): Arrival[] =>
    p.receiver.requests.map((r: ReceivedRequest, i) => {
      const body = JSON.parse(r.body);
      return {
        eventId: body.id,
        id: body.record.id,
        account: body.record.account_id,
        seq: body.record.seq,
        ok: answered[i] === true,
        at: r.at,
      };
    });

  before(async () => {
    p = await startPipeline({ WEBHOOK_RETRY_DELAYS_MS: '0,300,300,300,300', WEBHOOK_TIMEOUT_MS: '5000', WEBHOOK_BREAKER_FAILURES: '1000' });
    await p.writer.query('CREATE TABLE shop_master.ledger (id int PRIMARY KEY, account_id int, seq int NOT NULL, note text)');
    api = new HttpClient(p.t.url, {
      authorization: `Bearer ${await p.t.managementToken('shop')}`,
      'x-project-id': 'shop',
      environment: 'master',
    });
  });
  after(() => p?.close());
  beforeEach(async () => {
    await p.removeSubscriptions();
    await p.writer.query('TRUNCATE shop_master.ledger');
    p.receiver.requests.length = 0;
    answered = [];
  });

  /**
   * The receiver answers 2xx unless `fail` says otherwise for this request (by the change's
   * account and seq, and its attempt): true refuses it, headers refuse it with them (Retry-After).
   */
  function receive(
    fail: (record: { id: number; account_id: number | null; seq: number }, attempt: number) => boolean | Record<string, string>,
  ) {
    const attempts = new Map<string, number>();
    p.receiver.behave = (req, index) => {
      const body = JSON.parse(req.body);
      const n = (attempts.get(body.id) ?? 0) + 1;
      attempts.set(body.id, n);
      const verdict = fail(body.record, n);
      answered[index] = verdict === false;
      if (verdict === false) return { status: 200 };
      return { status: 503, headers: verdict === true ? {} : verdict };
    };
  }

  /** A refusal that asks for 2 s: a hold long enough that the other accounts' being done first does not hang on the machine's speed. */
  const WAIT_2S = { 'retry-after': '2' };

  const subscribe = (extra: Record<string, unknown> = {}) =>
    p.subscribe({ table: 'ledger', ordering: { by: ['account_id'] }, events: ['INSERT', 'UPDATE', 'DELETE'], ...extra });

  /** Inserts `lines` new rows per account, one transaction each, accounts interleaved: every account's seq goes 1, 2, 3… */
  async function writeLedger(accounts: number, lines: number): Promise<void> {
    for (let seq = 1; seq <= lines; seq++) {
      for (let a = 1; a <= accounts; a++) {
        await p.writer.query('INSERT INTO shop_master.ledger VALUES ($1, $2, $3)', [seq * 100 + a, a, seq]);
      }
    }
  }

  it('per account commit order over different rows; a failing account holds back only its own changes', async () => {
    // Account 1's first line is refused twice, each time asking for 2 s; the other accounts must not wait.
    receive((r, attempt) => r.account_id === 1 && r.seq === 1 && attempt <= 2 && WAIT_2S);
    const wh = await subscribe();
    await writeLedger(5, 6);
    await eventually(
      async () =>
        new Set(
          arrivals()
            .filter((a) => a.ok)
            .map((a) => a.eventId),
        ).size,
      (n) => n === 30,
      30_000,
    );
    const list = arrivals();
    const { accepted, early } = byAccount(list);
    expect(early, 'a change sent before the previous change of its account was accepted').to.deep.equal([]);
    for (let a = 1; a <= 5; a++) expect(accepted.get(a), `account ${a}`).to.deep.equal([1, 2, 3, 4, 5, 6]);
    const account1First = list.find((a) => a.account === 1 && a.seq === 1 && a.ok)!.at;
    const othersDone = Math.max(...list.filter((a) => a.account !== 1 && a.seq === 6 && a.ok).map((a) => a.at));
    expect(othersDone, 'the other accounts were delivered before account 1 got through').to.be.below(account1First);
    expect(list.filter((a) => a.account === 1 && a.seq === 1)).to.have.length(3);
    // Nothing of account 1 after its first line was even requested before that line got through.
    expect(list.filter((a) => a.account === 1 && a.seq > 1 && a.at < account1First)).to.deep.equal([]);
    // Account 1's lines were parked behind its first with one key — its account's, not their
    // rows' (a change delivered at its first attempt is journaled without its keys).
    const rows = await p.delivery(wh);
    const accountOf = new Map(list.map((a) => [a.eventId, a.account]));
    const keyed = rows.filter((d) => d.order_key !== null);
    expect(keyed.every((d) => d.order_key_old === null)).to.equal(true);
    const account1Keys = new Set(keyed.filter((d) => accountOf.get(d.event_id) === 1).map((d) => d.order_key));
    expect(account1Keys.size).to.equal(1);
    expect(keyed.filter((d) => accountOf.get(d.event_id) !== 1 && account1Keys.has(d.order_key))).to.deep.equal([]);
  });

  it('a row moved to another account orders under both accounts', async () => {
    // Account 1's first line and row 1 (its insert into account 9, then its move) fail twice each;
    // the move's refusals ask for 2 s, so that account 2 being done first does not hang on speed.
    receive(
      (r, attempt) => attempt <= 2 && (r.id === 1 && r.account_id === 1 ? WAIT_2S : (r.account_id === 1 && r.seq === 1) || r.id === 1),
    );
    const wh = await subscribe();
    await p.writer.query('INSERT INTO shop_master.ledger VALUES (2, 1, 1)'); // account 1, seq 1
    await p.writer.query('INSERT INTO shop_master.ledger VALUES (3, 2, 1)'); // account 2, seq 1
    await p.writer.query('INSERT INTO shop_master.ledger VALUES (1, 9, 1)'); // account 9: another group
    // The move: row 1 goes from account 9 to account 1 — it is account 1's seq 2 (and account 9's seq 2).
    await p.writer.query('UPDATE shop_master.ledger SET account_id = 1, seq = 2 WHERE id = 1');
    await p.writer.query('INSERT INTO shop_master.ledger VALUES (4, 1, 3)'); // account 1 after the move
    await p.writer.query('INSERT INTO shop_master.ledger VALUES (5, 9, 3)'); // account 9 after the move
    const rows = await eventually(
      () => p.delivery(wh),
      (r) => r.length === 6 && r.every((d) => d.status === 'delivered'),
      20_000,
    );
    const moved = rows.find((d) => d.event_type === 'UPDATE');
    expect(moved!.order_key_old, 'the move was parked with both accounts').to.not.equal(null);
    const list = arrivals();
    const firstOk = (id: number, seq: number) => list.find((a) => a.id === id && a.seq === seq && a.ok)!.at;
    const firstSent = (id: number, seq: number) => list.find((a) => a.id === id && a.seq === seq)!.at;
    expect(firstSent(1, 2), 'the move waited for its new account').to.be.at.least(firstOk(2, 1));
    expect(firstSent(1, 2), 'the move waited for its old account').to.be.at.least(firstOk(1, 1));
    expect(firstSent(4, 3), "the new account's next change waited for the move").to.be.at.least(firstOk(1, 2));
    expect(firstSent(5, 3), "the old account's next change waited for the move").to.be.at.least(firstOk(1, 2));
    // Account 2 shares nothing with the move: it did not wait for it.
    expect(firstOk(3, 1)).to.be.below(firstOk(1, 2));
  });

  it('NULL is a group of its own: rows without an account are ordered among themselves, and hold no account', async () => {
    receive((r, attempt) => r.account_id === null && r.seq === 1 && attempt <= 2 && WAIT_2S);
    await subscribe();
    await p.writer.query('INSERT INTO shop_master.ledger VALUES (1, NULL, 1)');
    await p.writer.query('INSERT INTO shop_master.ledger VALUES (2, 7, 1)');
    await p.writer.query('INSERT INTO shop_master.ledger VALUES (3, NULL, 2)');
    await eventually(
      async () =>
        new Set(
          arrivals()
            .filter((a) => a.ok)
            .map((a) => a.eventId),
        ).size,
      (n) => n === 3,
      15_000,
    );
    const list = arrivals();
    expect(byAccount(list).early).to.deep.equal([]);
    expect(byAccount(list).accepted.get(null)).to.deep.equal([1, 2]);
    expect(list.find((a) => a.account === 7)!.at, 'account 7 did not wait for the NULL group').to.be.below(
      list.find((a) => a.account === null && a.ok)!.at,
    );
  });

  it('onDead "hold": a dead change holds its account (only its account) until it is discarded', async () => {
    receive((r) => r.account_id === 1 && r.seq === 1);
    const wh = await subscribe({ onDead: 'hold' });
    await writeLedger(2, 3);
    const held = await eventually(
      () => p.delivery(wh),
      (r) => r.some((d) => d.status === 'dead') && byAccount(arrivals()).accepted.get(2)?.length === 3,
      20_000,
    );
    const dead = held.find((d) => d.status === 'dead')!;
    expect(dead.holds_row).to.equal(true);
    await sleep(800);
    expect(
      arrivals().filter((a) => a.account === 1 && a.seq > 1),
      'account 1 waits behind its dead letter',
    ).to.deep.equal([]);
    const discarded = await api.post(`/api/rest/_webhooks/${wh}/deliveries/${dead.id}/discard`, {});
    expect(discarded.status).to.equal(200);
    await eventually(
      async () => byAccount(arrivals()).accepted.get(1),
      (v) => v?.length === 2,
      15_000,
    );
    expect(byAccount(arrivals()).accepted.get(1)).to.deep.equal([2, 3]);
  });

  describe('through the management API', () => {
    const base = () => ({
      projectId: 'shop',
      environment: 'master',
      table: 'ledger',
      events: ['INSERT', 'UPDATE'],
      url: `${p.receiver.url}/h`,
      secret: 'group-secret-0123456789',
    });
    const paths = (res: { body: { violations?: Array<{ path: string }> } }) => (res.body.violations ?? []).map((v) => v.path);

    it('refuses a group that is empty, too long, repeats a column, or names a column the table lacks: 400 naming where', async () => {
      const cases: Array<[unknown, string]> = [
        [{ by: [] }, 'ordering.by'],
        [{ by: ['id', 'account_id', 'seq', 'note', 'a', 'b', 'c', 'd', 'e'] }, 'ordering.by'],
        [{ by: ['account_id', 'account_id'] }, 'ordering.by.1'],
        [{ by: ['nope'] }, 'ordering.by.0'],
        [{ by: ['account_id', 'nope'] }, 'ordering.by.1'],
        [{ by: [''] }, 'ordering.by.0'],
        [{ by: 'account_id' }, 'ordering'],
        [{ by: ['account_id'], also: 1 }, 'ordering'],
        ['group', 'ordering'],
        [['account_id'], 'ordering'],
      ];
      for (const [ordering, path] of cases) {
        const res = await api.post('/api/rest/_webhooks', { ...base(), ordering });
        expect(res.status, JSON.stringify(ordering)).to.equal(400);
        expect(res.body.error).to.equal('VALIDATION_ERROR');
        expect(paths(res), JSON.stringify(ordering)).to.include(path);
      }
      // Junk is a 400 naming ordering (or a place in it), never a 500.
      const junk: unknown[] = [
        null,
        0,
        true,
        {},
        { by: null },
        { by: [1] },
        { by: [null] },
        { by: [{}] },
        { by: [['account_id']] },
        { by: ['x'.repeat(64)] },
        { by: Array.from({ length: 1000 }, (_, i) => `c${i}`) },
        { by: ['account_id'], by2: ['seq'] },
        { BY: ['account_id'] },
      ];
      for (const ordering of junk) {
        const res = await api.post('/api/rest/_webhooks', { ...base(), ordering });
        expect(res.status, JSON.stringify(ordering)).to.equal(400);
        expect(
          paths(res).some((x) => x === 'ordering' || x.startsWith('ordering.')),
          JSON.stringify([ordering, paths(res)]),
        ).to.equal(true);
      }
      const ok = await api.post('/api/rest/_webhooks', { ...base(), ordering: { by: ['account_id'] } });
      expect(ok.status).to.equal(201);
      const patched = await api.patch(`/api/rest/_webhooks/${ok.body.webhook.id}`, { ordering: { by: ['account_id', 'gone'] } });
      expect(patched.status).to.equal(400);
      expect(paths(patched)).to.include('ordering.by.1');
    });

    it('returns the ordering as sent; PATCH switches between kinds; onDead "hold" takes a group and is refused without an order', async () => {
      const created = await api.post('/api/rest/_webhooks', { ...base(), ordering: { by: ['seq', 'account_id'] }, onDead: 'hold' });
      expect(created.status).to.equal(201);
      expect(created.body.webhook).to.deep.include({ ordering: { by: ['seq', 'account_id'] }, onDead: 'hold' });
      const id = created.body.webhook.id;
      expect((await api.get(`/api/rest/_webhooks/${id}`)).body.webhook.ordering).to.deep.equal({ by: ['seq', 'account_id'] });
      const listed = (await api.get('/api/rest/_webhooks')).body.webhooks.find((w: { id: string }) => w.id === id);
      expect(listed.ordering).to.deep.equal({ by: ['seq', 'account_id'] });
      // Another field patched: the group stays, and so does onDead.
      const paused = await api.patch(`/api/rest/_webhooks/${id}`, { active: false });
      expect(paused.body.webhook).to.deep.include({ ordering: { by: ['seq', 'account_id'] }, onDead: 'hold', active: false });
      expect((await api.patch(`/api/rest/_webhooks/${id}`, { ordering: 'row' })).body.webhook).to.deep.include({
        ordering: 'row',
        onDead: 'hold',
      });
      const none = await api.patch(`/api/rest/_webhooks/${id}`, { ordering: 'none', onDead: 'hold' });
      expect(none.status).to.equal(400);
      expect(paths(none)).to.include('onDead');
      const back = await api.patch(`/api/rest/_webhooks/${id}`, { ordering: { by: ['account_id'] } });
      expect(back.body.webhook.ordering).to.deep.equal({ by: ['account_id'] });
      const stored = await p.t.ctx.pool.query('SELECT ordering, ordering_by FROM walgate.webhooks WHERE id = $1', [id]);
      expect(stored.rows[0]).to.deep.equal({ ordering: 'group', ordering_by: ['account_id'] });
      // Unordered, a subscription holds nothing: onDead goes back to "skip" with it.
      const unordered = await api.patch(`/api/rest/_webhooks/${id}`, { ordering: 'none' });
      expect(unordered.body.webhook).to.deep.include({ ordering: 'none', onDead: 'skip' });
      expect((await p.t.ctx.pool.query('SELECT ordering_by FROM walgate.webhooks WHERE id = $1', [id])).rows[0].ordering_by).to.equal(null);
    });

    it('a group column dropped later: the subscription reports ORDERING_COLUMN_MISSING, and its changes still arrive (unordered)', async () => {
      await p.writer.query('CREATE TABLE shop_master.chats (id int PRIMARY KEY, conversation_id int, body text)');
      receive(() => false);
      const created = await api.post('/api/rest/_webhooks', {
        ...base(),
        table: 'chats',
        events: ['INSERT'],
        url: `${p.receiver.url}/hook`,
        ordering: { by: ['conversation_id'] },
      });
      expect(created.status).to.equal(201);
      const id = created.body.webhook.id;
      expect(created.body.webhook.problems).to.deep.equal([]);
      await p.writer.query('ALTER TABLE shop_master.chats DROP COLUMN conversation_id');
      const seen = (await api.get(`/api/rest/_webhooks/${id}`)).body.webhook.problems;
      expect(seen.map((x: { code: string }) => x.code)).to.deep.equal(['ORDERING_COLUMN_MISSING']);
      expect(seen[0].message).to.contain('conversation_id');
      // The api's gauge counts it as well (from the catalog, as problems.ts judges it).
      expect((await new HttpClient(p.t.url).get('/metrics')).text).to.match(
        /walgate_webhook_problems\{code="ORDERING_COLUMN_MISSING"\} 1\b/,
      );
      await p.writer.query(`INSERT INTO shop_master.chats VALUES (1, 'hello')`);
      const [delivered] = await eventually(
        () => p.delivery(id),
        (r) => r.length === 1 && r[0]!.status === 'delivered',
        10_000,
      );
      expect(delivered!.order_key).to.equal(null);
      // The column back: healthy again.
      await p.writer.query('ALTER TABLE shop_master.chats ADD COLUMN conversation_id int');
      expect((await api.get(`/api/rest/_webhooks/${id}`)).body.webhook.problems).to.deep.equal([]);
      expect((await new HttpClient(p.t.url).get('/metrics')).text).to.match(
        /walgate_webhook_problems\{code="ORDERING_COLUMN_MISSING"\} 0\b/,
      );
    });
  });
});
