// A stand-in for `npm run bench` (test/reliability/bench-harness.test.ts): the bench harness's
// process helpers start the receiver process and two children — one that ignores SIGTERM — and a
// shutdown step standing in for Postgres' stop; then it waits to be signalled.
import { spawn } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { onShutdown, stopOnSignals, track } from '../../scripts/bench/processes.js';
import { startCountingReceiver } from '../../scripts/bench/receiver.js';
import { testCertificates } from '../support/tls.js';

const marker = process.argv[2]!;
stopOnSignals(() => undefined, 300);
onShutdown(() => writeFile(marker, 'stopped'));
const idle = track(spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' }));
const stubborn = track(
  spawn(process.execPath, ['-e', "process.on('SIGTERM', () => {}); setInterval(() => {}, 1000)"], { stdio: 'ignore' }),
);
const { cert, key } = await testCertificates();
const receiver = await startCountingReceiver('secret', { cert, key });
process.stdout.write(`${JSON.stringify({ pids: [idle.pid, stubborn.pid, receiver.pid] })}\n`);
setInterval(() => {}, 1000);
