/** A backing store (Redis, or Postgres for the stores) could not answer: callers turn it into a 503. */
export class StoreUnavailableError extends Error {
  override name = 'StoreUnavailableError';
}
