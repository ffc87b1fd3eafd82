// `npm run api`: the api daemon alone, for production (needs DATABASE_URL).
//
// Password hashes run on libuv's thread pool. More hashing threads than cores leave the event
// loop's thread waiting for a core (login benchmark on 2 cores: event-loop p99 15–36 ms with
// libuv's default of 4 threads, 9 ms with 2) and add no throughput. The size is read when the pool
// starts, and Node's ES module loader starts it before an ES module's first line runs: hence this
// CommonJS entry, which sets it first and then loads the daemon. An operator's own value wins.
import { availableParallelism } from 'node:os';

if (!process.env.UV_THREADPOOL_SIZE) process.env.UV_THREADPOOL_SIZE = String(Math.max(2, availableParallelism()));
void import('./api-daemon.js');
