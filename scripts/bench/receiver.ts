import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { track, withDeadline } from './processes.js';

// The subscriber of the benchmark and the soak (receiver-process.ts) seen from the parent: an
// HTTPS URL, and questions over IPC. Questions carry a number and answers name it: several may
// be in flight (a writer's back-pressure and a measuring loop ask at once), and an answer must
// not go astray.

export interface ReceiverStats {
  /** Deliveries (events) received: a batch counts each of its events. */
  received: number;
  /** Requests received (fewer than `received` when batched). */
  requests: number;
  unique: number;
  badSignatures: number;
  latencies: number[];
  /** Deliveries of a row with a lower `record.version` than one already received. */
  regressions: number;
  /** Rows whose highest version received is short of the target set last (0 without one). */
  behind: number;
}

export interface CountingReceiver {
  url: string;
  /** The receiver process. */
  pid: number;
  stats(): Promise<ReceiverStats>;
  /** Counts from zero, and only requests under these paths (earlier deliveries may still arrive). */
  reset(paths: string[]): Promise<ReceiverStats>;
  /** Records commit → receipt latencies from now on. */
  latency(): Promise<ReceiverStats>;
  /** Requests under these paths answer 503 from now on (an empty list: none). */
  down(paths: string[]): Promise<ReceiverStats>;
  /** The version each row (`${path} ${id}`) must reach to be caught up. */
  target(versions: Array<[string, number]>): Promise<ReceiverStats>;
  close(): void;
}

export async function startCountingReceiver(secret: string, tls: { cert: string; key: string }): Promise<CountingReceiver> {
  const child = track(
    fork(fileURLToPath(new URL('./receiver-process.js', import.meta.url)), {
      env: { ...process.env, BENCH_SECRET: secret, BENCH_TLS: JSON.stringify(tls) },
    }),
  );
  const port = await withDeadline(
    new Promise<number>((resolve) => child.once('message', (m: { port: number }) => resolve(m.port))),
    30_000,
    'the receiver process did not start',
  );
  let asked = 0;
  const ask = (cmd: string, paths?: string[], target?: Array<[string, number]>) =>
    withDeadline(new Promise<ReceiverStats>((resolve, reject) => {
      // Stopped (the bench is being stopped): the question fails instead of throwing from send.
      if (!child.connected) return reject(new Error(`the receiver is gone ('${cmd}')`));
      const seq = ++asked;
      const onAnswer = (m: ReceiverStats & { seq: number }) => {
        if (m.seq !== seq) return;
        child.off('message', onAnswer);
        resolve(m);
      };
      child.on('message', onAnswer);
      child.send({ cmd, paths, seq, target }, (err) => err && reject(err));
    }), 30_000, `the receiver did not answer '${cmd}'`);
  return {
    url: `https://127.0.0.1:${port}`,
    pid: child.pid!,
    stats: () => ask('stats'),
    reset: (paths) => ask('reset', paths),
    latency: () => ask('latency'),
    down: (paths) => ask('down', paths),
    target: (versions) => ask('target', undefined, versions),
    close: () => child.kill(),
  };
}
