import { quoteIdent } from '../../core/db/identifiers.js';
import type { Context } from '../../core/context.js';
import { createHash } from 'node:crypto';
import type { PoolClient } from 'pg';
import { isConnectionError, pgCode, withClient } from '../../core/db/pool.js';
import { AppError } from '../../core/errors.js';
import type { Environment } from '../../projects/environments.js';
import type { AccessPayload } from '../tokens.js';
import { ClaimsGroups, type ClaimsCall } from './groups.js';
import { parseFunctionName } from './name.js';
import { reservedKeys } from './reserved.js';

// The environment's claims function, called each time an access token is minted (sessions/
// service.ts): `fn(user jsonb, claims jsonb) → jsonb`, whose keys join the token's claims at the
// top level. It runs in a read-only transaction of its own, with the environment's schema as its
// search_path and a time budget, on connections of its own (SETTINGS); whatever goes wrong — an error, the budget, a result that is not
// an object, too large, or naming a reserved claim — means no token at all, never a token without
// the claims a resource server (or a row-level-security policy) relies on.

/**
 * Statement time the function may take (the user row's read included). Wall time inside
 * Postgres: on a host busy with logins (argon2id holds the cores) a trivial function waited
 * past 50 ms for a core, and sign-ins failed for want of CPU rather than for a slow function
 * (the bench's claims path, 100 logins at once). A second is refused with room to spare.
 */
export const CLAIMS_FUNCTION_BUDGET_MS = 250;
/** Bytes of JSON the function may add: a JWE token with 4 KB of app_metadata stays under the verifier's bound (tokens.ts). */
export const CLAIMS_MAX_BYTES = 1024;

export type ClaimsFailure = 'missing' | 'error' | 'timeout' | 'not_an_object' | 'too_large' | 'reserved_claim';

const REASONS: Record<ClaimsFailure, string> = {
  missing: 'does not exist (any more) with the signature (jsonb, jsonb) → jsonb',
  error: 'raised an error',
  timeout: `took longer than its ${CLAIMS_FUNCTION_BUDGET_MS} ms budget`,
  not_an_object: 'did not return a JSON object',
  too_large: `returned more than ${CLAIMS_MAX_BYTES} bytes of claims`,
  reserved_claim: 'tried to set a reserved claim',
};

export function claimsFunctionFailed(fn: string, reason: ClaimsFailure, extra: Record<string, unknown> = {}): AppError {
  return new AppError(
    'AUTH_CLAIMS_FUNCTION_FAILED',
    `The claims function ${fn} ${REASONS[reason]}: no token was issued. The environment's operators must fix it.`,
    { function: fn, reason, ...extra },
  );
}

/** The user as the function sees it: the same fields as the API's user object. */
const userJson = (id: string) => `(SELECT jsonb_build_object('id', u.id, 'email', u.email, 'name', u.name,
    'emailVerified', u.email_verified_at IS NOT NULL, 'createdAt', u.created_at,
    'userMetadata', u.user_metadata, 'appMetadata', u.app_metadata)
  FROM walgate.users u WHERE u.id = ${id})`;

/**
 * The connections claims functions run on: every transaction read-only (minting a token must not
 * write the app's data — a function that tries fails, and so does the sign-in) and every
 * statement time-boxed, by the connections' own startup settings. So a call is one prepared
 * statement, one round trip, with nothing to set or commit around it (three round trips cost a
 * refresh a third of its rate; one simple query of five statements still cost it a fifth), and
 * the calls that meet in time share one (groups.ts).
 */
const SETTINGS = `-c default_transaction_read_only=on -c statement_timeout=${CLAIMS_FUNCTION_BUDGET_MS}`;
/** The search_path each connection was last given (set_config's answer), to set it only when the environment changes. */
const searchPaths = new WeakMap<PoolClient, { schema: string; value: string }>();
/** The groups of calls waiting or in Postgres, per environment and function, while there are any. */
const groupsOf = new WeakMap<Context, Map<string, ClaimsGroups>>();

/** The payload with the function's claims merged in, or AUTH_CLAIMS_FUNCTION_FAILED. */
export async function withCustomClaims(ctx: Context, env: Environment, fnText: string, payload: AccessPayload): Promise<AccessPayload> {
  const fn = parseFunctionName(fnText);
  if (!fn) throw claimsFunctionFailed(fnText, 'missing');
  const text = await groupFor(ctx, env, fnText, `${quoteIdent(fn.schema)}.${quoteIdent(fn.name)}`).call({
    sub: payload.sub,
    claims: JSON.stringify(payload),
  });
  if (text === null) throw claimsFunctionFailed(fnText, 'not_an_object');
  if (Buffer.byteLength(text) > CLAIMS_MAX_BYTES) throw claimsFunctionFailed(fnText, 'too_large');
  const claims: unknown = JSON.parse(text);
  if (typeof claims !== 'object' || claims === null || Array.isArray(claims)) throw claimsFunctionFailed(fnText, 'not_an_object');
  const reserved = reservedKeys(claims as Record<string, unknown>);
  if (reserved.length) throw claimsFunctionFailed(fnText, 'reserved_claim', { claims: reserved });
  return { ...payload, ...(claims as Record<string, unknown>) };
}

/** One environment's calls of one function, never another's: a statement serves a single environment. */
function groupFor(ctx: Context, env: Environment, fnText: string, fn: string): ClaimsGroups {
  let groups = groupsOf.get(ctx);
  if (!groups) groupsOf.set(ctx, (groups = new Map()));
  const key = `${env.projectId}\0${env.name}\0${fnText}`;
  let group = groups.get(key);
  if (!group) {
    const statement = {
      name: `walgate_claims_${createHash('sha256').update(fn).digest('hex').slice(0, 16)}`,
      // The settings are read back after the calls: a function that changed one for the session
      // (set_config(…, false)) has this connection discarded, so no later call runs without them.
      text: `SELECT (SELECT array_agg(${fn}(${userJson('t.sub')}, t.claims)::text ORDER BY t.i)
                       FROM unnest($1::uuid[], $2::jsonb[]) WITH ORDINALITY AS t(sub, claims, i)) AS claims,
                    current_setting('default_transaction_read_only') AS ro, current_setting('statement_timeout') AS timeout,
                    current_setting('search_path') AS path, current_user = session_user AS role`,
    };
    const where = { function: fnText, projectId: env.projectId, environment: env.name };
    group = new ClaimsGroups(
      (calls) => runFunction(ctx, env, where, statement, calls),
      (err) => verdictOf(ctx, where, err),
      () => groups.delete(key),
    );
    groups.set(key, group);
  }
  return group;
}

/** What a call's own failure tells its caller: Postgres away (503), or which kind of failure of the function. */
function verdictOf(ctx: Context, where: { function: string; projectId: string; environment: string }, err: unknown): unknown {
  if (isConnectionError(err)) return err; // Postgres is away: 503, not the function's fault
  const code = pgCode(err);
  // The operators read why in the log; the client is told which function and what kind of failure.
  ctx.log.warn({ err, ...where }, 'the claims function failed: no token issued');
  if (code === '57014') return claimsFunctionFailed(where.function, 'timeout');
  if (code === '42883' || code === '3F000') return claimsFunctionFailed(where.function, 'missing');
  return claimsFunctionFailed(where.function, 'error', code ? { sqlstate: code } : {});
}

async function runFunction(
  ctx: Context,
  env: Environment,
  where: Record<string, string>,
  statement: { name: string; text: string },
  calls: ClaimsCall[],
): Promise<Array<string | null>> {
  return withClient(ctx.sidePool('claims', SETTINGS), async (c, discard) => {
    // The environment's schema as search_path (for the names inside the function's body), set
    // when this connection last served another environment.
    const schema = quoteIdent(env.schemaName);
    let path = searchPaths.get(c);
    if (path?.schema !== schema) {
      const { rows } = await c.query<{ value: string }>("SELECT set_config('search_path', $1, false) AS value", [schema]);
      path = { schema, value: rows[0]!.value };
      searchPaths.set(c, path);
    }
    const { rows } = await c.query<{ claims: Array<string | null>; ro: string; timeout: string; path: string; role: boolean }>({
      ...statement,
      values: [calls.map((x) => x.sub), calls.map((x) => x.claims)],
    });
    const r = rows[0]!;
    // These calls' answers stand: their transaction began read-only and its time-out was armed.
    if (r.ro !== 'on' || r.timeout !== `${CLAIMS_FUNCTION_BUDGET_MS}ms` || r.path !== path.value || !r.role) {
      ctx.log.warn(where, 'the claims function changed its session settings: connection discarded');
      discard(new Error('the claims function changed its session settings'));
    }
    return r.claims;
  });
}
