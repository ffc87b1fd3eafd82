import type { PoolClient } from '../db/pool.js';
import type { SecretBox } from '../crypto/secretbox.js';
import type { Environment } from '../projects/environments.js';

/** Creates the first signing keys of a new environment (an active one, and the next one, published ahead). */
export async function createInitialSigningKeys(_client: PoolClient, _secrets: SecretBox, _env: Environment, _now: Date): Promise<void> {
  // implemented with the auth API (issue #2)
}
