import type { Context } from '../core/context.js';
import { AppError } from '../core/errors.js';
import type { Environment } from '../projects/environments.js';
import { acknowledgeGap, listGaps, type CaptureGap } from '../tailer/capture/index.js';

// Capture gaps as one project environment sees them (each gap is recorded per environment it touched).

export class GapService {
  constructor(private readonly ctx: Context) {}

  async list(env: Environment, open: boolean): Promise<{ gaps: CaptureGap[] }> {
    return { gaps: await listGaps(this.ctx.pool, env.projectId, env.name, open) };
  }

  async acknowledge(env: Environment, id: string, tokenId: string): Promise<{ gap: CaptureGap }> {
    const gap = await acknowledgeGap(this.ctx.pool, id, { projectId: env.projectId, environment: env.name }, tokenId, this.ctx.clock());
    if (!gap) throw new AppError('GAP_NOT_FOUND');
    return { gap };
  }
}
