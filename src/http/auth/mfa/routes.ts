import { Router, type Request } from 'express';
import type { MfaService } from '../../../auth/mfa/service.js';
import type { EnvironmentCache } from '../../../projects/environments.js';
import { clientIp } from '../../client-ip.js';
import { handle, refuseOtherMethods, reply } from '../../operation.js';
import { authEnvironment } from '../../scope.js';
import { parse } from '../../validate.js';
import { mfaApi } from './operations.js';

/** Second factors and passkeys under /auth: parse, call the service, shape the response. */
export function mfaRouter(mfa: MfaService, environments: EnvironmentCache): Router {
  const r = Router();
  const op = mfaApi.operations;
  const env = (req: Request) => authEnvironment(req, environments);
  const auth = (req: Request) => req.get('authorization');
  const meta = (req: Request) => ({ ip: clientIp(req), clientAddress: req.ip, userAgent: req.get('user-agent')?.slice(0, 512) ?? null });

  handle(r, op.totpEnroll, async (req, res) => {
    const e = await env(req);
    reply(res, op.totpEnroll, await mfa.enrollTotp(e, auth(req), parse(op.totpEnroll.body, req.body ?? {})));
  });
  handle(r, op.totpVerify, async (req, res) => {
    const e = await env(req);
    reply(res, op.totpVerify, await mfa.verifyTotp(e, auth(req), parse(op.totpVerify.body, req.body), meta(req)));
  });
  handle(r, op.listFactors, async (req, res) => {
    const e = await env(req);
    reply(res, op.listFactors, await mfa.listFactors(e, auth(req)));
  });
  handle(r, op.deleteFactor, async (req, res) => {
    const e = await env(req);
    const { id } = parse(op.deleteFactor.params, req.params);
    reply(res, op.deleteFactor, await mfa.deleteFactor(e, auth(req), id, meta(req)));
  });
  handle(r, op.regenerateRecoveryCodes, async (req, res) => {
    const e = await env(req);
    reply(res, op.regenerateRecoveryCodes, await mfa.regenerateRecoveryCodes(e, auth(req), meta(req)));
  });
  handle(r, op.mfaChallenge, async (req, res) => {
    const e = await env(req);
    reply(res, op.mfaChallenge, await mfa.challenge(e, parse(op.mfaChallenge.body, req.body), meta(req)));
  });
  handle(r, op.passkeyRegisterOptions, async (req, res) => {
    const e = await env(req);
    reply(res, op.passkeyRegisterOptions, await mfa.passkeyRegisterOptions(e, auth(req)));
  });
  handle(r, op.passkeyRegisterVerify, async (req, res) => {
    const e = await env(req);
    reply(
      res,
      op.passkeyRegisterVerify,
      await mfa.passkeyRegisterVerify(e, auth(req), parse(op.passkeyRegisterVerify.body, req.body), meta(req)),
    );
  });
  handle(r, op.passkeyLoginOptions, async (req, res) => {
    const e = await env(req);
    reply(res, op.passkeyLoginOptions, await mfa.passkeyLoginOptions(e, parse(op.passkeyLoginOptions.body, req.body ?? {}), meta(req)));
  });
  handle(r, op.passkeyLoginVerify, async (req, res) => {
    const e = await env(req);
    reply(res, op.passkeyLoginVerify, await mfa.passkeyLoginVerify(e, parse(op.passkeyLoginVerify.body, req.body), meta(req)));
  });

  refuseOtherMethods(r, mfaApi);
  return r;
}
