import type { Command } from 'commander';
import { countDeadDeliveries, replayDeadDeliveries } from '../delivery/sql/history.js';
import { isoDate } from './options.js';
import { progress, withCliContext } from './runtime.js';

export function registerDeliveryCommands(program: Command): void {
  const deliveries = program.command('deliveries').description('webhook deliveries');

  deliveries
    .command('replay')
    .description('move dead-letter deliveries back to pending (due now, with fresh attempts), and say how many')
    .option('--webhook <id>', 'only this subscription (wh_…)')
    .option('--since <ISO>', 'only deliveries created at or after this time', isoDate)
    .option('--until <ISO>', 'only deliveries created before this time', isoDate)
    .option('--dry-run', 'count what would be replayed, change nothing')
    .action(async (o: { webhook?: string; since?: Date; until?: Date; dryRun?: boolean }) => {
      await withCliContext(async (ctx) => {
        const filter = { webhookId: o.webhook, since: o.since, until: o.until };
        const total = await countDeadDeliveries(ctx.pool, filter);
        if (o.dryRun) {
          console.log(`${total} dead-letter deliver${total === 1 ? 'y' : 'ies'} would be replayed (dry run: nothing changed)`);
          return;
        }
        const bar = progress('replayed', total);
        const moved = await replayDeadDeliveries(ctx.pool, filter, ctx.clock(), (n) => bar.tick(n));
        bar.done(moved);
        console.log(`replayed ${moved} dead-letter deliver${moved === 1 ? 'y' : 'ies'}: they are pending and will be sent by the tailer`);
      });
    });
}
