// `node dist/src/main/healthcheck.js api|tailer|worker`: the container health check. It asks the daemon's
// own /readyz, on the port and address the daemon's configuration gives (so it cannot disagree with
// it), and needs nothing but the node binary that the image already has (no curl in node:*-slim).
import { loadConfig } from '../core/config.js';

const TIMEOUT_MS = 4000;

function probeHost(host: string): string {
  // A daemon listening on every address is reached on loopback.
  if (host === '0.0.0.0' || host === '::') return '127.0.0.1';
  return host.includes(':') ? `[${host}]` : host;
}

async function main(): Promise<number> {
  const daemon = process.argv[2] ?? 'api';
  if (daemon !== 'api' && daemon !== 'tailer' && daemon !== 'worker') {
    console.error(`usage: healthcheck.js api|tailer|worker (got ${daemon})`);
    return 2;
  }
  const config = loadConfig();
  const port = { api: config.port, tailer: config.tailerPort, worker: config.workerPort }[daemon];
  const url = `http://${probeHost(config.host)}:${port}/readyz`;
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(TIMEOUT_MS) });
    const body = await res.text();
    if (res.ok) return 0;
    console.error(`${url}: ${res.status} ${body}`);
  } catch (err) {
    console.error(`${url}: ${(err as Error).message}`);
  }
  return 1;
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    console.error((err as Error).message);
    process.exit(1);
  },
);
