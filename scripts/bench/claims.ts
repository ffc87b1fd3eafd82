import { Pool as HttpPool } from 'undici';
import { provisionEnvironment } from '../../src/auth/provision.js';
import { updateEnvironment } from '../../src/projects/environments.js';
import type { Bench } from './run.js';
import { percentile, round, summarize } from './stats.js';
import { benchUsers, CHAINS, measureLogins, measureRefreshes, PASSWORD, post, RUNS, SECONDS } from './token-chains.js';

// Login and refresh with a claims function (docs/claims.md) against the same paths without one,
// in the same api and the same run: the function is one more statement per token minted (the
// user row read and the function called in the environment's database). Target: ≥ 0.9× each.

const ENVIRONMENT = 'claims';

export async function tokensWithClaims(b: Bench): Promise<void> {
  const env = await provisionEnvironment(b.ctx, { projectId: 'bench', name: ENVIRONMENT });
  // What an app's function typically does: a plan and a permission list computed from the user.
  await b.pool.query(
    `CREATE FUNCTION ${env.schemaName}.token_claims(u jsonb, c jsonb) RETURNS jsonb LANGUAGE sql STABLE AS $$
       SELECT jsonb_build_object('plan', CASE WHEN u->>'email' LIKE '%1@example.com' THEN 'pro' ELSE 'free' END,
                                 'permissions', jsonb_build_array('orders:read', 'orders:write'))
     $$`,
  );
  await updateEnvironment(b.pool, 'bench', ENVIRONMENT, { claimsFunction: `${env.schemaName}.token_claims` });
  const api = await b.startApi('postgres');
  try {
    const plainUsers = await benchUsers(b, 'master', 'plain-claims-');
    const claimUsers = await benchUsers(b, ENVIRONMENT, 'claims-');
    const login = async (environment: string, users: Array<{ email: string }>) =>
      Promise.all(users.map(async (u) => (await post(`${api.url}/auth/login`, { email: u.email, password: PASSWORD }, environment)).refreshToken as string));
    const plain = await login('master', plainUsers);
    const withClaims = await login(ENVIRONMENT, claimUsers);
    const http = new HttpPool(api.url, { connections: CHAINS });
    await measureRefreshes(http, plain, 1000); // warm-up of both, not counted
    await measureRefreshes(http, withClaims, 1000, ENVIRONMENT);
    const rates = { plain: [] as number[], claims: [] as number[], plainLogin: [] as number[], claimsLogin: [] as number[] };
    const latencies = { refresh: [] as number[], login: [] as number[] };
    // Alternating runs, so that a slower moment of the machine weighs on both alike.
    for (let run = 0; run < RUNS; run++) {
      rates.plain.push((await measureRefreshes(http, plain, SECONDS * 1000)).rate);
      const refreshed = await measureRefreshes(http, withClaims, SECONDS * 1000, ENVIRONMENT);
      rates.claims.push(refreshed.rate);
      latencies.refresh.push(...refreshed.latencies);
      rates.plainLogin.push((await measureLogins(api.url, plainUsers.map((u) => u.email), SECONDS * 1000)).rate);
      const loggedIn = await measureLogins(api.url, claimUsers.map((u) => u.email), SECONDS * 1000, ENVIRONMENT);
      rates.claimsLogin.push(loggedIn.rate);
      latencies.login.push(...loggedIn.latencies);
    }
    await http.close();
    const row = (path: string, unit: string, value: number[], baseline: number[], name: string, p99: number[]) => {
      const ratio = round(summarize(value).median / summarize(baseline).median);
      b.record({
        path,
        unit,
        value: summarize(value),
        baseline: { name, value: summarize(baseline) },
        ratio,
        target: `≥ 0.9× the ${name.replace(', this run', '')}`,
        met: ratio >= 0.9,
        extra: { p99Ms: round(percentile(p99, 99)) },
      });
    };
    row('refresh with a claims function (100 connections, chained tokens)', 'refreshes/s', rates.claims, rates.plain, 'refresh without a claims function, this run', latencies.refresh);
    row('login with a claims function (20 connections)', 'logins/s', rates.claimsLogin, rates.plainLogin, 'login without a claims function, this run', latencies.login);
  } finally {
    await api.stop();
  }
}
