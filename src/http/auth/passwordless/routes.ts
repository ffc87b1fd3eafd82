import { Router, type Request } from 'express';
import type { PasswordlessService } from '../../../auth/passwordless/service.js';
import type { EnvironmentCache } from '../../../projects/environments.js';
import { clientIp } from '../../client-ip.js';
import { handle, refuseOtherMethods, reply } from '../../operation.js';
import { authEnvironment } from '../../scope.js';
import { parse } from '../../validate.js';
import { passwordlessApi } from './operations.js';

/** Passwordless sign-in under /auth: parse, call the service, shape the response. */
export function passwordlessRouter(service: PasswordlessService, environments: EnvironmentCache): Router {
  const r = Router();
  const op = passwordlessApi.operations;
  const env = (req: Request) => authEnvironment(req, environments);
  const meta = (req: Request) => ({
    ip: clientIp(req),
    clientAddress: req.ip,
    userAgent: req.get('user-agent')?.slice(0, 512) ?? null,
    deviceToken: req.get('x-device-token'),
  });

  handle(r, op.otp, async (req, res) => {
    const e = await env(req);
    reply(res, op.otp, await service.sendCode(e, parse(op.otp.body, req.body), meta(req)));
  });
  handle(r, op.otpVerify, async (req, res) => {
    const e = await env(req);
    reply(res, op.otpVerify, await service.verifyCode(e, parse(op.otpVerify.body, req.body), meta(req)));
  });
  handle(r, op.magicLink, async (req, res) => {
    const e = await env(req);
    reply(res, op.magicLink, await service.sendMagicLink(e, parse(op.magicLink.body, req.body), meta(req)));
  });
  handle(r, op.magicLinkVerify, async (req, res) => {
    const e = await env(req);
    reply(res, op.magicLinkVerify, await service.verifyMagicLink(e, parse(op.magicLinkVerify.body, req.body), meta(req)));
  });

  refuseOtherMethods(r, passwordlessApi);
  return r;
}
