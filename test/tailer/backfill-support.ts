import pg from 'pg';
import type { DeliveryEngine } from '../../src/delivery/engine.js';
import { BackfillRunner } from '../../src/tailer/backfill/runner.js';
import type { WalTailer } from '../../src/tailer/tailer.js';
import { testWorker } from '../delivery/support.js';
import type { TestApi } from '../support/api.js';
import { TestReceiver } from '../support/receiver.js';
import { startTailer, waitForLeader } from './support.js';

/**
 * A backfill's real path in the test process: a writer on the environment's tables, an HTTPS
 * receiver, the delivery worker, the backfill runner, and (once the test's tables exist) a
 * leading tailer that hands the runner its watermarks.
 */
export interface BackfillPipeline {
  writer: pg.Client;
  receiver: TestReceiver;
  worker: DeliveryEngine;
  runner: BackfillRunner;
  /** The current tailer (after startTailer). */
  readonly tailer: WalTailer;
  /** Starts a tailer (again, after a stop) and waits until it leads. */
  startTailer(timeoutMs?: number): Promise<WalTailer>;
  close(): Promise<void>;
}

export async function startBackfillPipeline(
  t: TestApi,
  settings: { pageRows: number; pageBytes: number; concurrency: number },
): Promise<BackfillPipeline> {
  const writer = new pg.Client({ connectionString: t.database.url });
  await writer.connect();
  const receiver = new TestReceiver();
  await receiver.start();
  const worker = await testWorker(t.ctx);
  worker.start();
  let tailer: WalTailer | undefined;
  const runner = new BackfillRunner(t.ctx, { isLeader: () => tailer?.status().role === 'leader', ...settings, pollMs: 50 });
  runner.start();
  return {
    writer,
    receiver,
    worker,
    runner,
    get tailer() {
      return tailer!;
    },
    async startTailer(timeoutMs?: number) {
      tailer = startTailer(t.ctx, t.database.url, { sink: worker, onReservedMessage: runner.onReservedMessage, onChange: runner.onChange });
      await waitForLeader(tailer, timeoutMs);
      return tailer;
    },
    async close() {
      await runner.stop();
      await tailer?.stop();
      await worker.stop(1000);
      await writer.end();
      await receiver.stop();
    },
  };
}
