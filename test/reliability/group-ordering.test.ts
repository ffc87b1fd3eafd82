import type { ChildProcess } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { expect } from 'chai';
import pg from 'pg';
import { startTestApi, type TestApi } from '../support/api.js';
import { TestReceiver } from '../support/receiver.js';
import { insertSubscription } from '../support/subscriptions.js';
import { seededRandom } from './row-order-check.js';
import { killDaemon, spawnDeliveringDaemon, waitForStreaming } from '../tailer/support.js';

// The demonstration of ordering by a column group (`ordering: {by: ["account_id"]}`), on
// the pattern of row-ordering.test.ts: a ledger of 50 accounts gets 4,000 changes — new lines,
// each with its account's next `seq`, and some lines moved to another account (the move is the
// next `seq` of both: `seq` in the new account, `from_seq` in the old) — while a receiver refuses
// a random 30 % of requests (never one delivery more than three times, so none goes dead), two
// tailer daemons run (a leader and a standby, both draining the retry queue) and the leader is
// SIGKILLed mid-way. Per account, the seqs the receiver first accepts (2xx; it dedupes by
// webhook-id) go up by one each time, and no change is even requested before the previous change
// of each of its accounts was accepted. One change of account 1 is held back 10 s by its receiver
// (Retry-After): the other accounts' changes keep arriving meanwhile. Progress is waited for
// without a bound on speed (a loaded machine delivers 30–100 changes/s here), only on stalls:
// 60 s without a change accepted is a failure (an account held forever, a lost change).

interface Line {
  id: number;
  account_id: number;
  seq: number;
  from_seq: number | null;
}

describe('group ordering under random failures and a SIGKILL of the leading tailer', function () {
  // The machine is shared (2 cores, other suites running): the bound is on stalls, not speed.
  this.timeout(15 * 60_000);
  let t: TestApi;
  let writer: pg.Client;
  let receiver: TestReceiver;
  const daemons: ChildProcess[] = [];

  before(async () => {
    t = await startTestApi();
    await t.provision({ projectId: 'bank', name: 'master' });
    writer = new pg.Client({ connectionString: t.database.url });
    await writer.connect();
    await writer.query(
      'CREATE TABLE bank_master.ledger (id int PRIMARY KEY, account_id int NOT NULL, seq int NOT NULL, from_seq int, amount numeric NOT NULL DEFAULT 1)',
    );
    receiver = new TestReceiver();
    await receiver.start();
  });
  after(async () => {
    for (const d of daemons) if (d.exitCode === null) d.kill('SIGKILL');
    await writer?.end();
    await receiver?.stop();
    await t?.close();
  });

  it("4,000 changes over 50 accounts: each account's seqs first arrive in order, without a gap; a held account holds no other", async () => {
    const ACCOUNTS = 50;
    const CHANGES = 4_000;
    const PER_TRANSACTION = 50;
    /** Account 1's first new line from its 10th seq on: its receiver holds it back twice with Retry-After: 5. */
    const HELD_ACCOUNT = 1;
    let heldId: string | undefined;

    const refusedRunning = new Map<string, number>();
    const acceptedAt = new Map<string, number>(); // event id → index of its first 2xx
    const answers: boolean[] = [];
    const next = seededRandom(0x5a17_c0de);
    receiver.behave = (req, index) => {
      const id = req.headers['webhook-id']!;
      const refusals = refusedRunning.get(id) ?? 0;
      const record = (JSON.parse(req.body) as { record: Line }).record;
      if (!heldId && record.account_id === HELD_ACCOUNT && record.seq >= 10 && record.from_seq === null) heldId = id;
      const held = id === heldId;
      // A change it has accepted is accepted again (a receiver that deduplicates answers 2xx to a
      // duplicate); no delivery is refused a fourth time, so none goes dead.
      const refuse = !acceptedAt.has(id) && refusals < 3 && (held ? refusals < 2 : next() < 0.3);
      if (refuse) refusedRunning.set(id, refusals + 1);
      answers[index] = !refuse;
      if (!refuse && !acceptedAt.has(id)) acceptedAt.set(id, index);
      if (refuse && held) return { status: 503, headers: { 'retry-after': '5' } };
      return { status: refuse ? 500 : 200 };
    };
    await insertSubscription(t.ctx, {
      projectId: 'bank',
      environment: 'master',
      schema: 'bank_master',
      table: 'ledger',
      url: `${receiver.url}/hook`,
      events: ['INSERT', 'UPDATE'],
      ordering: { by: ['account_id'] },
    });

    const launch = async () => {
      const child = await spawnDeliveringDaemon(t, {
        WEBHOOK_RETRY_DELAYS_MS: '0,10,20,40,80',
        // 30 % refusals make runs of five failures common: the breaker must not pause the endpoint.
        WEBHOOK_BREAKER_FAILURES: '100000',
      });
      daemons.push(child);
      return child;
    };

    const first = await launch();
    await waitForStreaming(t, 20_000);
    await launch();

    // The writer's own book: each account's last seq, and which lines it holds. One writer,
    // statements in order: commit order is the order of this loop (and of unnest within one).
    const lastSeq = new Array<number>(ACCOUNTS + 1).fill(0);
    const linesOf = Array.from({ length: ACCOUNTS + 1 }, () => [] as number[]);
    let nextId = 1;
    let moves = 0;
    const started = Date.now();
    const writing = (async () => {
      let state = 11;
      const pick = (n: number) => {
        state = (Math.imul(state, 1103515245) + 12345) >>> 0;
        return (state >>> 16) % n;
      };
      for (let done = 0; done < CHANGES; done += PER_TRANSACTION) {
        const client = writer;
        await client.query('BEGIN');
        // Lines are inserted in batches; a move goes between them, in its place.
        const inserts: Line[] = [];
        for (let i = 0; i < PER_TRANSACTION; i++) {
          const account = pick(ACCOUNTS) + 1;
          const from = linesOf[account]!;
          // One change in 20 moves a line of this account to another account.
          if (from.length > 0 && pick(20) === 0) {
            if (inserts.length > 0) await insertLines(client, inserts.splice(0));
            const line = from.splice(pick(from.length), 1)[0]!;
            const to = ((account + pick(ACCOUNTS - 1)) % ACCOUNTS) + 1;
            linesOf[to]!.push(line);
            await client.query('UPDATE bank_master.ledger SET account_id = $2, seq = $3, from_seq = $4 WHERE id = $1', [
              line,
              to,
              ++lastSeq[to]!,
              ++lastSeq[account]!,
            ]);
            moves++;
            continue;
          }
          const id = nextId++;
          from.push(id);
          inserts.push({ id, account_id: account, seq: ++lastSeq[account]!, from_seq: null });
        }
        if (inserts.length > 0) await insertLines(client, inserts);
        await client.query('COMMIT');
        if (done % 1000 === 0) await sleep(20);
      }
    })();

    /** Waits until `count` changes were accepted; fails when none was for 60 s. */
    const progressTo = async (count: number, what: string) => {
      let seen = acceptedAt.size;
      let movedAt = Date.now();
      while (acceptedAt.size < count) {
        if (acceptedAt.size > seen) [seen, movedAt] = [acceptedAt.size, Date.now()];
        if (Date.now() - movedAt > 60_000) throw new Error(`stalled at ${acceptedAt.size} changes accepted (${what})`);
        await sleep(20);
      }
    };
    await progressTo(CHANGES / 4, 'before the kill');
    const atKill = acceptedAt.size;
    await killDaemon(first);
    await writing;
    await launch(); // back as the standby

    await progressTo(CHANGES, 'after the kill');
    const tookMs = Date.now() - started;

    // Per account, in the order of arrival: the first 2xx of each change, and every request.
    const accepted = new Map<number, number[]>();
    const early: string[] = [];
    let resent = 0;
    let heldFrom = -1;
    let heldUntil = -1;
    receiver.requests.forEach((r, index) => {
      const body = JSON.parse(r.body) as { id: string; record: Line; old_record: Line | null };
      if (acceptedAt.get(body.id)! < index) resent++;
      // The accounts this change orders in, with its seq in each.
      const places: Array<[number, number]> = [[body.record.account_id, body.record.seq]];
      if (body.old_record && body.old_record.account_id !== body.record.account_id) {
        places.push([body.old_record.account_id, body.record.from_seq!]);
      }
      const held = body.id === heldId;
      if (held && heldFrom < 0) heldFrom = index;
      if (held && acceptedAt.get(body.id) === index) heldUntil = index;
      for (const [account, seq] of places) {
        const list = accepted.get(account) ?? [];
        accepted.set(account, list);
        if (seq > (list.at(-1) ?? 0) + 1) early.push(`account ${account} seq ${seq} requested before seq ${seq - 1} was accepted`);
        if (answers[index] && acceptedAt.get(body.id) === index) list.push(seq);
      }
    });
    expect(early.slice(0, 10)).to.deep.equal([]);
    for (let account = 1; account <= ACCOUNTS; account++) {
      const want = Array.from({ length: lastSeq[account]! }, (_, i) => i + 1);
      expect(accepted.get(account), `account ${account}`).to.deep.equal(want);
    }
    const dead = await t.ctx.pool.query(`SELECT count(*)::int AS n FROM walgate.deliveries WHERE status = 'dead'`);
    expect(dead.rows[0].n).to.equal(0);

    // While account 1's change waited on its receiver (two Retry-After: 5 refusals), other
    // accounts' changes went on arriving (that none of account 1's did is the `early` check).
    expect(heldFrom).to.be.at.least(0);
    const meanwhile = receiver.requests.slice(heldFrom + 1, heldUntil).map((r) => (JSON.parse(r.body) as { record: Line }).record);
    const others = meanwhile.filter((rec, i) => rec.account_id !== HELD_ACCOUNT && answers[heldFrom + 1 + i]);
    const othersAccepted = others.length;
    // Two refusals asked for 5 s each; at least one wait is kept even if the SIGKILL fell between them.
    expect(receiver.requests[heldUntil]!.at - receiver.requests[heldFrom]!.at, 'held').to.be.at.least(4_900);
    // 30–100 a second on this machine, loaded or not: 5 s give 150 or more. The bounds are far
    // below that, so that only a hold that holds the others fails.
    expect(othersAccepted, 'other accounts were delivered while account 1 was held').to.be.at.least(100);
    expect(new Set(others.map((rec) => rec.account_id)).size, 'from many accounts').to.be.at.least(20);

    const refused = answers.filter((a) => !a).length;
    console.log(
      `      ${CHANGES} changes (${moves} moves between accounts) over ${ACCOUNTS} accounts in ${(tookMs / 1000).toFixed(1)} s: ` +
        `${receiver.requests.length} requests, ${refused} refused, ${resent} sent again after they were accepted, ` +
        `${atKill} accepted when the leader was killed, ${othersAccepted} of other accounts accepted while account 1 was held`,
    );
    expect(atKill, 'the kill came in the middle').to.be.below(CHANGES);
  });
});

/** New lines in one statement, in the order given (unnest keeps it, and so does the WAL). */
async function insertLines(client: pg.Client, lines: Line[]): Promise<void> {
  await client.query(
    `INSERT INTO bank_master.ledger (id, account_id, seq)
     SELECT id, account_id, seq FROM unnest($1::int[], $2::int[], $3::int[]) WITH ORDINALITY AS l(id, account_id, seq, n) ORDER BY n`,
    [lines.map((l) => l.id), lines.map((l) => l.account_id), lines.map((l) => l.seq)],
  );
}
