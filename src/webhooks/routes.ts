import { Router } from 'express';
import type { Context } from '../context.js';

/** The management API for webhook subscriptions (issue #3). */
export function webhooksRouter(_ctx: Context): Router {
  return Router();
}
