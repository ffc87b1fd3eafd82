import type pg from 'pg';
import type { Queryable } from './pool.js';

/** A dedicated connection as a Queryable whose statements run one after another, a failed one not stopping the next. */
export function oneAtATime(client: pg.Client): Queryable {
  let tail: Promise<unknown> = Promise.resolve();
  const query = (...args: unknown[]) => {
    const run = tail.then(() => (client.query as (...a: unknown[]) => Promise<unknown>)(...args));
    tail = run.catch(() => undefined);
    return run;
  };
  return { query } as unknown as Queryable;
}
