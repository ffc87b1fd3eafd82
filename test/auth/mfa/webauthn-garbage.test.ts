import { randomBytes } from 'node:crypto';
import { expect } from 'chai';
import type { TestApi } from '../../support/api.js';
import type { HttpClient } from '../../support/http.js';
import { bearer, cpuMsOf, GENEROUS_LIMITS, signUpAndConfirm, startAuthApi } from '../support.js';

// 1 KB of garbage in every WebAuthn field, one field at a time and all at once, in both
// encodings a client could botch (base64url of random bytes, and raw bytes): always a 400 in the
// error envelope, each answered with at most 50 ms of CPU, never a 500.

const KB = 1024;
/** Random bytes as base64url: passes the format check and reaches the WebAuthn library. */
const b64 = () => randomBytes(KB).toString('base64url').slice(0, KB);
/** Random printable junk, not base64url. */
const junk = () => Array.from(randomBytes(KB), (b) => String.fromCharCode(32 + (b % 95))).join('');

/** Stands for a clientDataJSON that names a live challenge (filled in per request by `live`). */
const LIVE = 'LIVECLIENTDATA';

function registration(id: string) {
  return {
    id,
    rawId: id,
    type: 'public-key',
    clientExtensionResults: {},
    response: { clientDataJSON: LIVE, attestationObject: b64(), transports: ['internal'] },
  };
}

/** The request with every LIVE placeholder replaced by a clientDataJSON naming `challenge`: the garbage reaches the WebAuthn library. */
function live(value: unknown, challenge: string, type: string): unknown {
  const clientData = Buffer.from(JSON.stringify({ type, challenge, origin: 'http://walgate.test' })).toString('base64url');
  return JSON.parse(JSON.stringify(value).replaceAll(`"${LIVE}"`, `"${clientData}"`));
}
function assertion(id: string) {
  return {
    id,
    rawId: id,
    type: 'public-key',
    clientExtensionResults: {},
    response: { clientDataJSON: LIVE, authenticatorData: b64(), signature: b64(), userHandle: b64().slice(0, 200) },
  };
}

/** Every way to put 1 KB of garbage in one field (or every field) of `base`. */
function variants(base: Record<string, any>): Array<[string, unknown]> {
  const out: Array<[string, unknown]> = [];
  const fields = [
    ...['id', 'rawId', 'type', 'authenticatorAttachment', 'clientExtensionResults'].map((k) => [k]),
    ...Object.keys(base.response).map((k) => ['response', k]),
    ['response'],
  ];
  for (const path of fields) {
    for (const [kind, value] of [
      ['base64url', b64()],
      ['junk', junk()],
      ['number', 1e308],
      ['object', { garbage: b64() }],
    ] as const) {
      const copy = structuredClone(base);
      let target = copy;
      for (const k of path.slice(0, -1)) target = target[k];
      target[path.at(-1)!] = value;
      out.push([`${path.join('.')} = ${kind}`, copy]);
    }
  }
  out.push([
    'every field base64url garbage',
    { ...structuredClone(base), response: Object.fromEntries(Object.keys(base.response).map((k) => [k, b64()])) },
  ]);
  out.push(['every field but clientDataJSON base64url garbage', base]);
  out.push(['the whole response a 1 KB string', b64()]);
  return out;
}

describe('auth mfa: 1 KB of garbage in every WebAuthn field → 400 within 50 ms of CPU, never a 500', function () {
  this.timeout(120_000);
  let t: TestApi;
  let http: HttpClient;
  let token: string;

  before(async () => {
    t = await startAuthApi({
      overrides: {
        rateLimits: { ...GENEROUS_LIMITS, passkeyLoginPerIp: { name: 'passkey-login-ip', points: 100_000, durationSeconds: 60 } },
      },
    });
    ({ http } = await t.provision({ projectId: 'garbage', name: 'master' }));
    token = (await signUpAndConfirm(t, http)).accessToken;
  });
  after(() => t.close());

  /**
   * One request, answered 400 in the envelope with at most 50 ms of CPU: the api runs in this
   * process, so its CPU time is what the input costs, whatever else the machine runs. Wall time
   * only shows that nothing waits (a lock, a time-out, a slow path): a loaded machine's scheduling
   * alone once took a 53 ms answer over a 50 ms wall bound, so it is 500 ms. `prepare` hands out
   * the challenge, outside the measured time.
   */
  async function expectQuick400(label: string, prepare: () => Promise<() => Promise<{ status: number; body: any }>>): Promise<void> {
    const send = await prepare();
    const started = process.hrtime.bigint();
    const { result: res, cpuMs } = await cpuMsOf(send);
    const ms = Number(process.hrtime.bigint() - started) / 1e6;
    expect(res.status, `${label}: ${JSON.stringify(res.body).slice(0, 300)}`).to.equal(400);
    expect(res.body.error, label).to.be.oneOf(['VALIDATION_ERROR', 'AUTH_INVALID_CODE']);
    expect(cpuMs, `${label} used ${cpuMs.toFixed(1)} ms of CPU`).to.be.lessThan(50);
    expect(ms, `${label} took ${ms.toFixed(1)} ms`).to.be.lessThan(500);
  }

  it('register/verify (clientDataJSON names a live challenge unless it is the garbage, so the library sees the rest)', async () => {
    await http.post('/auth/passkeys/register/verify', { response: registration(b64()) }, bearer(token)); // warm-up
    let checked = 0;
    for (const [label, garbage] of variants(registration(b64()))) {
      await expectQuick400(`register ${label}`, async () => {
        const { challenge } = (await http.post('/auth/passkeys/register/options', undefined, bearer(token))).body;
        const response = live(garbage, challenge, 'webauthn.create');
        return () => http.post('/auth/passkeys/register/verify', { response, name: b64().slice(0, 100) }, bearer(token));
      });
      checked++;
    }
    expect(checked).to.be.greaterThan(30);
  });

  it('login/verify, passwordless and with a garbage mfaToken (a live challenge likewise)', async () => {
    await http.post('/auth/passkeys/login/verify', { response: assertion(b64()) }); // warm-up
    let checked = 0;
    const withChallenge = async (garbage: unknown) =>
      live(garbage, (await http.post('/auth/passkeys/login/options')).body.challenge, 'webauthn.get');
    for (const [label, garbage] of variants(assertion(b64()))) {
      await expectQuick400(`login ${label}`, async () => {
        const response = await withChallenge(garbage);
        return () => http.post('/auth/passkeys/login/verify', { response });
      });
      await expectQuick400(`login+mfaToken ${label}`, async () => {
        const response = await withChallenge(garbage);
        return () => http.post('/auth/passkeys/login/verify', { response, mfaToken: b64().slice(0, 100) });
      });
      checked++;
    }
    expect(checked).to.be.greaterThan(30);
  });

  it('garbage whose clientDataJSON names a live challenge is refused, and spends that challenge', async () => {
    const options = await http.post('/auth/passkeys/login/options');
    const clientDataJSON = Buffer.from(
      JSON.stringify({ type: 'webauthn.get', challenge: options.body.challenge, origin: 'http://walgate.test' }),
    ).toString('base64url');
    const forged = assertion(b64());
    forged.response.clientDataJSON = clientDataJSON;
    const verify = await http.post('/auth/passkeys/login/verify', { response: forged });
    expect(verify.status).to.equal(400);
    expect(verify.body.error).to.equal('AUTH_INVALID_CODE');
    const left = await t.ctx.pool.query('SELECT 1 FROM walgate.webauthn_challenges WHERE challenge = $1', [options.body.challenge]);
    expect(left.rowCount).to.equal(0);
  });
});
