import { Router } from 'express';
import type { Context } from '../context.js';

/** The authentication API under /auth (issue #2). */
export function authRouter(_ctx: Context): Router {
  return Router();
}
