import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type pg from 'pg';
import { runMigrations } from 'graphile-worker';
import type { Bench } from './run.js';
import { track, until, withDeadline } from './processes.js';

// The baselines of WAL → delivered, each a process of its own beside the tailer (so that its CPU
// is its own): the floor (floor-process.ts) and the tuned job-queue peer (peer-process.ts), with
// what they need in Postgres. Every question has a deadline; the processes are tracked, so a
// stopped bench stops them.

export interface Baseline {
  pid: number;
  /** Deliveries answered 2xx so far. */
  delivered(): Promise<number>;
  stop(): Promise<void>;
}

interface Answer {
  seq: number;
  delivered: number;
  failed: string | null;
}

async function forkBaseline(b: Bench, script: string, start: Record<string, unknown>): Promise<{ child: ChildProcess; ask(cmd: string): Promise<Answer> }> {
  const child = track(
    fork(fileURLToPath(new URL(script, import.meta.url)), {
      env: { ...process.env, BENCH_SECRET: b.secret, BENCH_CA: b.ca, BENCH_DATABASE_URL: b.clusterUrl },
    }),
  );
  let asked = 0;
  const ask = (cmd: string, extra: Record<string, unknown> = {}) =>
    withDeadline(
      new Promise<Answer>((resolve, reject) => {
        if (!child.connected) return reject(new Error(`${script} is gone ('${cmd}')`));
        const seq = ++asked;
        const onAnswer = (m: Answer) => {
          if (m.seq !== seq) return;
          child.off('message', onAnswer);
          resolve(m);
        };
        child.on('message', onAnswer);
        child.send({ cmd, seq, ...extra }, (err) => err && reject(err));
      }),
      30_000,
      `${script} did not answer '${cmd}'`,
    ).then((a) => {
      if (a.failed) throw new Error(`${script}: ${a.failed}`);
      return a;
    });
  await ask('start', start);
  return { child, ask: (cmd) => ask(cmd) };
}

/** Drops a slot once its reader's walsender is gone (a slot still active cannot be dropped). */
export async function dropSlot(client: pg.Client | Bench['pool'], slot: string): Promise<void> {
  await until(
    async () => {
      const { rows } = await client.query(`SELECT active_pid FROM pg_replication_slots WHERE slot_name = $1`, [slot]);
      const pid = rows[0]?.active_pid as number | null | undefined;
      if (pid) await client.query('SELECT pg_terminate_backend($1)', [pid]);
      return { done: !pid, state: `slot ${slot} still active for PID ${pid}` };
    },
    10_000,
    `drop the slot ${slot}`,
  );
  await client.query('SELECT pg_drop_replication_slot($1) FROM pg_replication_slots WHERE slot_name = $1', [slot]);
}

/**
 * The floor reading `table` (schema-qualified) through a publication and a slot of its own,
 * delivering each change to every URL. Stopping it drops both.
 */
export async function startFloor(b: Bench, table: string, urls: string[]): Promise<Baseline> {
  const name = `walgate_floor_${table.split('.')[1]}`;
  await b.pool.query(`DROP PUBLICATION IF EXISTS ${name}`);
  await b.pool.query(`CREATE PUBLICATION ${name} FOR TABLE ${table}`);
  await b.pool.query(`SELECT pg_create_logical_replication_slot($1, 'pgoutput')`, [name]);
  const { child, ask } = await forkBaseline(b, './floor-process.js', { slot: name, publication: name, urls });
  return {
    pid: child.pid!,
    delivered: async () => (await ask('stats')).delivered,
    async stop() {
      await ask('stop').catch(() => undefined);
      child.kill();
      await dropSlot(b.pool, name);
      await b.pool.query(`DROP PUBLICATION IF EXISTS ${name}`);
    },
  };
}

/** graphile-worker's schema, and the two triggers a team would write to feed it. */
export async function installPeer(b: Bench): Promise<void> {
  await runMigrations({ connectionString: b.clusterUrl, logger: undefined });
  // One job per row, all of a statement's rows in one add_jobs call (the tuned form).
  await b.pool.query(`
    CREATE OR REPLACE FUNCTION bench_master.enqueue_statement() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      PERFORM graphile_worker.add_jobs(ARRAY(
        SELECT ROW('deliver', json_build_object('table', TG_TABLE_NAME, 'op', TG_OP, 'at', now(), 'record', row_to_json(n)),
                   NULL, NULL, NULL, NULL, NULL, NULL)::graphile_worker.job_spec
          FROM new_rows n));
      RETURN NULL;
    END $$`);
  // One add_job per row (the form most teams start with).
  await b.pool.query(`
    CREATE OR REPLACE FUNCTION bench_master.enqueue_row() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      PERFORM graphile_worker.add_job('deliver', json_build_object('table', TG_TABLE_NAME, 'op', TG_OP, 'at', now(), 'record', row_to_json(NEW)));
      RETURN NULL;
    END $$`);
}

/** A table of 1 KB rows fed to the peer by a statement-level (or row-level) trigger. */
export async function peerTable(b: Bench, table: string, level: 'statement' | 'row'): Promise<void> {
  await b.pool.query(`CREATE TABLE IF NOT EXISTS ${table} (id bigserial PRIMARY KEY, payload text)`);
  await b.pool.query(`DROP TRIGGER IF EXISTS enqueue ON ${table}`);
  await b.pool.query(
    level === 'statement'
      ? `CREATE TRIGGER enqueue AFTER INSERT ON ${table} REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION bench_master.enqueue_statement()`
      : `CREATE TRIGGER enqueue AFTER INSERT ON ${table} FOR EACH ROW EXECUTE FUNCTION bench_master.enqueue_row()`,
  );
}

/** The peer's worker, POSTing every job to `url`. */
export async function startPeer(b: Bench, url: string): Promise<Baseline> {
  const { child, ask } = await forkBaseline(b, './peer-process.js', { url });
  return {
    pid: child.pid!,
    delivered: async () => (await ask('stats')).delivered,
    async stop() {
      await ask('stop').catch(() => undefined);
      child.kill();
    },
  };
}
