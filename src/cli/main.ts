// `walgate`: the operator CLI. Every command works on DATABASE_URL, or on the embedded cluster
// under DATA_DIR whether or not `npm start` is running.
import { Command, CommanderError } from 'commander';
import { ConfigError } from '../core/config.js';
import { registerDeliveryCommands } from './deliveries.js';
import { registerDestinationCommands } from './destinations.js';
import { registerKeyCommands } from './keys.js';
import { registerProjectCommands } from './project.js';
import { CliError, cliSettings } from './runtime.js';
import { registerTokenCommands } from './token.js';
import { registerUserCommands } from './users.js';
import { registerOrganizationCommands } from './organizations.js';

const program = new Command('walgate')
  .description('operate walgate: migrations, delivery workers, projects, tokens, keys, users, organizations, deliveries and destinations')
  .showHelpAfterError()
  .exitOverride()
  .option('--create-database', 'without DATABASE_URL: create a new, empty embedded database under DATA_DIR if there is none')
  .hook('preAction', () => {
    cliSettings.createDatabase = program.opts<{ createDatabase?: boolean }>().createDatabase === true;
  });

program
  .command('migrate')
  .description('apply pending database migrations (the daemons also do this at start)')
  .action(async () => {
    const { withCliContext } = await import('./runtime.js');
    await withCliContext(async () => undefined);
    console.log('migrations are current');
  });

program
  .command('worker')
  .description('run a delivery worker of the bus (DELIVERY_BUS, DATABASE_URL): the same as `npm run worker`')
  .action(async () => {
    await import('../main/worker.js'); // runs until SIGTERM
  });

registerProjectCommands(program);
registerTokenCommands(program);
registerKeyCommands(program);
registerUserCommands(program);
registerOrganizationCommands(program);
registerDeliveryCommands(program);
registerDestinationCommands(program);

try {
  await program.parseAsync(process.argv);
} catch (err) {
  if (err instanceof CommanderError) process.exit(err.exitCode);
  if (err instanceof CliError || err instanceof ConfigError) {
    process.stderr.write(`walgate: ${err.message}\n`);
    process.exit(1);
  }
  throw err;
}
