import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { createConnection } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Bench } from './run.js';
import { track, until } from './processes.js';

/** A nats-server of the bench's own, stopped with it. */
export async function startNats(b: Bench): Promise<{ url: string; pid: number; stop(): Promise<void> }> {
  const port = await b.freePort();
  const dir = await mkdtemp(path.join(tmpdir(), 'walgate-bench-nats-'));
  const bin = process.env.NATS_SERVER ?? 'nats-server';
  const child = track(spawn(bin, ['-js', '-a', '127.0.0.1', '-p', String(port), '-sd', dir], { stdio: 'ignore' }));
  let spawnError: Error | undefined;
  child.once('error', (err) => (spawnError = err)); // ENOENT: no nats-server on this machine
  await until(
    async () => {
      if (spawnError) throw new Error(`${bin}: ${spawnError.message} (the bus path needs nats-server; NATS_SERVER names it)`);
      if (child.exitCode !== null) throw new Error(`${bin} exited with ${child.exitCode}`);
      const up = await new Promise<boolean>((resolve) => {
        const s = createConnection({ host: '127.0.0.1', port }, () => (s.destroy(), resolve(true)));
        s.on('error', () => resolve(false));
      });
      return { done: up, state: `${bin} on port ${port}` };
    },
    10_000,
    'nats-server start',
  );
  return {
    url: `nats://127.0.0.1:${port}`,
    pid: child.pid!,
    async stop() {
      if (child.exitCode === null) {
        const exited = new Promise((resolve) => child.once('exit', resolve));
        child.kill('SIGTERM');
        await exited;
      }
      await rm(dir, { recursive: true, force: true });
    },
  };
}

