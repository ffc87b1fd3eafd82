import { expect } from 'chai';
import type pg from 'pg';
import type { ReceivedRequest, TestReceiver } from '../support/receiver.js';

// What the row-ordering demonstrations share (row-ordering, group-ordering, the delivery bus): a
// receiver that refuses requests at random, and the per-row reading of what it received.

/** A xorshift generator in [0, 1) from a fixed seed: a failure is reproducible. */
export function seededRandom(seed: number): () => number {
  let random = seed;
  return () => {
    random ^= random << 13;
    random ^= random >>> 17;
    random ^= random << 5;
    return (random >>> 0) / 0x1_0000_0000;
  };
}

export interface Answers {
  /** Event id → index of its first 2xx. */
  acceptedAt: Map<string, number>;
  /** Per request: answered 2xx. */
  answers: boolean[];
}

/**
 * Makes `receiver` refuse `rate` of the requests at random (500). A change it has accepted is
 * accepted again (a receiver that deduplicates answers 2xx to a duplicate: an answer lost to a
 * SIGKILL must not start the count again), and no change is refused a fourth time, so none goes dead.
 */
export function refuseAtRandom(receiver: TestReceiver, seed: number, rate: number): Answers {
  const next = seededRandom(seed);
  const refusedRunning = new Map<string, number>();
  const a: Answers = { acceptedAt: new Map(), answers: [] };
  receiver.behave = (req, index) => {
    const id = req.headers['webhook-id']!;
    const refusals = refusedRunning.get(id) ?? 0;
    const refuse = !a.acceptedAt.has(id) && refusals < 3 && next() < rate;
    if (refuse) refusedRunning.set(id, refusals + 1);
    a.answers[index] = !refuse;
    if (!refuse && !a.acceptedAt.has(id)) a.acceptedAt.set(id, index);
    return { status: refuse ? 500 : 200 };
  };
  return a;
}

/**
 * Reads the requests of a table whose updates bump `version` by one per row (`record.id`): per row,
 * the versions in the order of their first 2xx; every request of a version before its predecessor
 * was accepted (`early`); and how many requests came after their change was accepted (`resent`).
 * `each` sees every request too.
 */
export function rowOrderOf(
  requests: readonly ReceivedRequest[],
  { acceptedAt, answers }: Answers,
  each?: (r: ReceivedRequest, index: number, body: { id: string }) => void,
): { accepted: Map<number, number[]>; early: string[]; resent: number } {
  const accepted = new Map<number, number[]>();
  const early: string[] = [];
  let resent = 0;
  requests.forEach((r, index) => {
    const body = JSON.parse(r.body);
    each?.(r, index, body);
    const row = body.record.id as number;
    const version = body.record.version as number;
    if (acceptedAt.get(body.id)! < index) resent++;
    const list = accepted.get(row) ?? [];
    accepted.set(row, list);
    if (version > (list.at(-1) ?? 0) + 1) early.push(`row ${row} v${version} requested before v${version - 1} was accepted`);
    if (answers[index] && acceptedAt.get(body.id) === index) list.push(version);
  });
  return { accepted, early, resent };
}

/** Every row of `table` (id, version) arrived as versions 1 … its final one, each once, in order. */
export async function expectEveryRowInOrder(writer: pg.Client, table: string, accepted: Map<number, number[]>): Promise<void> {
  const { rows: finals } = await writer.query(`SELECT id, version FROM ${table} ORDER BY id`);
  for (const { id, version } of finals) {
    expect(accepted.get(id), `row ${id}`).to.deep.equal(Array.from({ length: version }, (_, i) => i + 1));
  }
}
