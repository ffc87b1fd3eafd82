// The tuned job-queue peer (issue 30): what a Node team would build instead of walgate. A
// statement-level trigger enqueues one graphile-worker job per row with a single add_jobs call
// (peer.ts installs it); this worker runs those jobs, 32 at once, each POSTing the same signed
// seed payload to the bench's receiver. Tuned as graphile-worker's performance guide says: a
// local queue that locks jobs in batches, and batched completion. Driven by the bench over IPC.
import { Logger, run, type Runner } from 'graphile-worker';
import { Pool } from 'undici';
import { seedBody, seedHeaders, type SeedChange } from './seed-delivery.js';

const CONCURRENCY = 32;
const secret = process.env.BENCH_SECRET!;
const ca = process.env.BENCH_CA!;

/** The job's payload, as the trigger builds it. */
interface Job {
  table: string;
  op: 'INSERT' | 'UPDATE' | 'DELETE';
  at: string;
  record: unknown;
}

let runner: Runner | undefined;
let pool: Pool | undefined;
let delivered = 0;
let failed: string | undefined;
// Errors only (graphile-worker logs every job at info level); a failed job is retried by it, so
// an error here is counted, not fatal: the receiver's count says whether all arrived.
let errors = 0;
const logger = new Logger(() => (level) => {
  if (level === 'error') errors++;
});

async function start(url: string): Promise<void> {
  const u = new URL(url);
  pool = new Pool(u.origin, { connections: CONCURRENCY, connect: { ca } });
  runner = await run({
    connectionString: process.env.BENCH_DATABASE_URL!,
    concurrency: CONCURRENCY,
    maxPoolSize: CONCURRENCY + 4,
    noHandleSignals: true,
    pollInterval: 1000,
    logger,
    preset: { worker: { localQueue: { size: 4 * CONCURRENCY }, completeJobBatchDelay: 1, failJobBatchDelay: 1 } },
    taskList: {
      async deliver(payload, helpers) {
        const job = payload as Job;
        const change: SeedChange = {
          eventId: `job_${helpers.job.id}`,
          at: new Date(job.at),
          table: job.table,
          operation: job.op,
          recordJson: JSON.stringify(job.record),
        };
        const body = seedBody(change);
        const headers = seedHeaders(secret, change, body);
        // Sent again at once on a failure, as the floor does; past that graphile-worker retries the job.
        for (let attempt = 1; ; attempt++) {
          try {
            const res = await pool!.request({ method: 'POST', path: u.pathname, headers, body });
            await res.body.dump();
            if (res.statusCode >= 200 && res.statusCode < 300) break;
            throw new Error(`the receiver answered ${res.statusCode}`);
          } catch (err) {
            if (attempt >= 5) throw err;
          }
        }
        delivered++;
      },
    },
  });
}

process.on('message', (m: { cmd: string; seq: number; url?: string }) => {
  void (async () => {
    try {
      if (m.cmd === 'start') await start(m.url!);
      if (m.cmd === 'stop') {
        await runner?.stop();
        await pool?.close();
      }
    } catch (err) {
      failed ??= (err as Error).message;
    }
    process.send!({ seq: m.seq, delivered, errors, failed: failed ?? null });
  })();
});
