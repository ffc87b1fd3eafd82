import type { Queryable } from '../../core/db/pool.js';
import { FUNCTION_NAME_RULE, parseFunctionName } from './name.js';

// Checked when an operator sets `claimsFunction` (PATCH /api/rest/_environment): the function must
// exist now, in the environment's own schema, as `(jsonb, jsonb) → jsonb`. A function dropped or
// replaced later is caught where tokens are minted (call.ts): no token, never one without its claims.

/** Why `text` cannot be this environment's claims function, or undefined when it can. */
export async function claimsFunctionProblem(db: Queryable, env: { schemaName: string }, text: string): Promise<string | undefined> {
  const fn = parseFunctionName(text);
  if (!fn) return FUNCTION_NAME_RULE;
  // Another environment's schema (another project's data) is never this environment's to run.
  if (fn.schema !== env.schemaName) return `must be a function of this environment's schema ${env.schemaName}`;
  const { rows } = await db.query<{ returns: string; kind: string; set: boolean }>(
    `SELECT p.prorettype::regtype::text AS returns, p.prokind AS kind, p.proretset AS set
       FROM pg_proc p WHERE p.oid = to_regprocedure(format('%I.%I(jsonb, jsonb)', $1::text, $2::text))`,
    [fn.schema, fn.name],
  );
  const found = rows[0];
  if (!found) return `no function ${fn.schema}.${fn.name}(jsonb, jsonb) exists in the database`;
  if (found.kind !== 'f') return `${fn.schema}.${fn.name}(jsonb, jsonb) is not a plain function`;
  if (found.set || found.returns !== 'jsonb')
    return `${fn.schema}.${fn.name}(jsonb, jsonb) must return jsonb, not ${found.set ? 'setof ' : ''}${found.returns}`;
  return undefined;
}
