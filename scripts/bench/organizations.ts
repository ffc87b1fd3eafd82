import { randomUUID } from 'node:crypto';
import { Pool as HttpPool } from 'undici';
import type { Bench } from './run.js';
import { percentile, round, summarize } from './stats.js';
import { benchUsers, CHAINS, measureRefreshes as measure, PASSWORD, post, RUNS, SECONDS } from './token-chains.js';

// Refresh with an active organization against without, in the same api and the same run: the
// organization adds one lookup of the membership per refresh (its role and permissions as they
// now stand) and four claims to the token. Target: at least 0.9× the plain refresh rate.

/** Refresh tokens of `CHAINS` logged-in users; with `organization`, each session switched to it first. */
async function chains(b: Bench, apiUrl: string, prefix: string, organization?: string): Promise<string[]> {
  const rows = await benchUsers(b, 'master', prefix);
  if (organization)
    await b.pool.query(
      `INSERT INTO walgate.organization_members (id, organization_id, user_id, role, created_at, updated_at)
       SELECT gen_random_uuid(), $1, u, 'admin', now(), now() FROM unnest($2::uuid[]) u ON CONFLICT DO NOTHING`,
      [organization, rows.map((r) => r.id)],
    );
  return Promise.all(
    rows.map(async (r) => {
      const pair = await post(`${apiUrl}/auth/login`, { email: r.email, password: PASSWORD });
      if (!organization) return pair.refreshToken as string;
      return (await post(`${apiUrl}/auth/organizations/active`, { organizationId: organization }, 'master', pair.accessToken)).refreshToken as string;
    }),
  );
}

export async function refreshWithOrganization(b: Bench): Promise<void> {
  const api = await b.startApi('postgres');
  try {
    const organization = randomUUID();
    await b.pool.query(
      `INSERT INTO walgate.organizations (id, project_id, environment, name, created_at, updated_at) VALUES ($1, 'bench', 'master', 'Bench', now(), now())`,
      [organization],
    );
    const plain = await chains(b, api.url, 'plain-', undefined);
    const withOrg = await chains(b, api.url, 'org-', organization);
    const http = new HttpPool(api.url, { connections: CHAINS });
    await measure(http, plain, 1000); // warm-up of both, not counted
    await measure(http, withOrg, 1000);
    const rates = { plain: [] as number[], org: [] as number[] };
    const latencies: number[] = [];
    let daemon = { cpuPercent: 0, peakRssMb: 0, eventLoopP99Ms: 0 };
    // Alternating runs, so that a slower moment of the machine weighs on both alike.
    for (let run = 0; run < RUNS; run++) {
      rates.plain.push((await measure(http, plain, SECONDS * 1000)).rate);
      await api.daemon.beginRun();
      const org = await measure(http, withOrg, SECONDS * 1000);
      daemon = await api.daemon.endRun();
      rates.org.push(org.rate);
      latencies.push(...org.latencies);
    }
    await http.close();
    const ratio = round(summarize(rates.org).median / summarize(rates.plain).median);
    b.record({
      path: 'refresh with an active organization (100 connections, chained tokens)',
      unit: 'refreshes/s',
      value: summarize(rates.org),
      baseline: { name: 'refresh without an organization, this run', value: summarize(rates.plain) },
      ratio,
      target: '≥ 0.9× the refresh without an organization',
      met: ratio >= 0.9,
      extra: { p99Ms: round(percentile(latencies, 99)) },
      daemons: { api: daemon },
    });
  } finally {
    await api.stop();
  }
}
