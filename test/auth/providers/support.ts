import { createHash, randomBytes } from 'node:crypto';
import { createServer } from 'node:net';
import { expect } from 'chai';
import type { TestApi } from '../../support/api.js';
import { HttpClient } from '../../support/http.js';
import { bearer, startAuthApi } from '../support.js';

// What the provider sign-in tests share: an api whose PUBLIC_URL is its real address (the
// provider and the browser must reach the callback), providers set over the management API, and
// a client that walks the redirects one by one, the way a browser would, without a browser.

export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** An api reachable at its PUBLIC_URL, allowed to talk to providers on loopback. */
export async function startProviderApi(): Promise<TestApi> {
  const port = await freePort();
  return startAuthApi({ port, env: { PUBLIC_URL: `http://127.0.0.1:${port}`, PROVIDER_ALLOW_PRIVATE_NETWORKS: 'true' } });
}

/** Replaces the environment's providers (as an operator does); answers the settings as shown. */
export async function setProviders(t: TestApi, projectId: string, providers: unknown[], environment = 'master') {
  const token = await t.managementToken(projectId);
  const http = new HttpClient(t.url, { 'x-project-id': projectId, environment });
  const res = await http.patch('/api/rest/_environment', { providers }, bearer(token));
  expect(res.status, JSON.stringify(res.body)).to.equal(200);
  return res.body;
}

/** A PKCE pair as an application makes one (RFC 7636, S256). */
export function pkce(): { verifier: string; challenge: string } {
  const verifier = randomBytes(32).toString('base64url');
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') };
}

export function authorizePath(providerId: string, q: { projectId: string; environment?: string; redirectTo: string; challenge: string }) {
  const params = new URLSearchParams({ projectId: q.projectId, redirect_to: q.redirectTo, code_challenge: q.challenge });
  if (q.environment) params.set('environment', q.environment);
  return `/auth/providers/${providerId}/authorize?${params}`;
}

/** One request, redirects not followed. */
export async function step(url: string, init: RequestInit = {}): Promise<{ status: number; location: string | undefined; body: any }> {
  const res = await fetch(url, { ...init, redirect: 'manual' });
  const text = await res.text();
  const body = (res.headers.get('content-type') ?? '').includes('json') && text ? JSON.parse(text) : text;
  const location = res.headers.get('location') ?? undefined;
  return { status: res.status, location: location && new URL(location, url).href, body };
}

/**
 * A provider sign-in walked redirect by redirect (authorize → provider → callback → application):
 * the URL the browser lands on at the application, and the URLs on the way.
 */
export async function walkSignIn(t: TestApi, providerId: string, q: { projectId: string; redirectTo: string; challenge: string }) {
  const start = await step(t.url + authorizePath(providerId, q));
  expect(start.status, JSON.stringify(start.body)).to.equal(302);
  const atProvider = await step(start.location!);
  expect(atProvider.status, JSON.stringify(atProvider.body)).to.equal(302);
  const callback = await step(atProvider.location!);
  expect(callback.status, JSON.stringify(callback.body)).to.equal(302);
  return { authorizeUrl: start.location!, callbackUrl: atProvider.location!, landing: new URL(callback.location!) };
}
