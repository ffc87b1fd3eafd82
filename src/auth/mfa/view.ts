import type { Factor } from './factors.js';

// What the API shows of a factor: never its secret, public key or counter.

export function factorView(f: Factor) {
  return {
    id: f.id,
    type: f.type,
    name: f.name,
    createdAt: f.createdAt.toISOString(),
    lastUsedAt: f.lastUsedAt?.toISOString() ?? null,
  };
}

/** The answer to a right password of a user with an active factor: no tokens, the next step. */
export interface MfaRequired {
  mfaRequired: true;
  mfaToken: string;
  factors: { id: string; type: string }[];
}
