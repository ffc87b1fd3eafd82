import { loadConfig } from '../core/config.js';
import { createContext, type Context } from '../core/context.js';
import { migrate } from '../core/db/migrate.js';
import { AppError } from '../core/errors.js';
import { createLogger } from '../core/log.js';
import { NoDatabaseError, openDatabase } from '../main/database.js';

/** A user-facing failure: printed without a stack trace, exit code 1. */
export class CliError extends Error {
  override name = 'CliError';
}

/**
 * Runs a service call for a command: a refusal of the API's own (AppError) is printed as the API
 * says it — a validation error as its violations, `path message` each — rather than as a crash.
 */
export async function asCommand<T>(call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (err) {
    if (err instanceof AppError) throw new CliError(err.code === 'VALIDATION_ERROR' ? violations(err) : err.message);
    throw err;
  }
}

function violations(err: AppError): string {
  const list = (err.extra.violations as Array<{ path: string; message: string }> | undefined) ?? [];
  return list.length ? list.map((v) => `${v.path} ${v.message}`).join('; ') : err.message;
}

/** Global options: `--create-database` lets a command start a new embedded cluster. */
export const cliSettings = { createDatabase: false };

/**
 * Runs a command against the same database as the daemons: DATABASE_URL, or the embedded cluster
 * under DATA_DIR (joined when `npm start` runs it, started for the command otherwise). Where there
 * is neither, it stops and says where it looked: a new empty cluster would list no projects and
 * take commands meant for the real one (unless `--create-database` asks for exactly that).
 */
export async function withCliContext<T>(fn: (ctx: Context) => Promise<T>): Promise<T> {
  const config = loadConfig();
  // Logs go to stderr so that standard output carries only the command's answer.
  const log = createLogger(process.env.LOG_LEVEL ?? 'warn', process.stderr as never);
  const database = await openDatabase(config, log, { create: cliSettings.createDatabase }).catch((err: unknown) => {
    throw err instanceof NoDatabaseError ? new CliError(err.message) : err;
  });
  try {
    const ctx = await createContext(config, database.url, { log, poolMax: 4, applicationName: 'walgate-cli' });
    try {
      await migrate(ctx.pool);
      return await fn(ctx);
    } finally {
      await ctx.close();
    }
  } finally {
    await database.release();
  }
}

/** Fixed-width columns for human-readable lists. */
export function table(rows: Array<Record<string, unknown>>, columns: string[]): string {
  const cell = (v: unknown) => (v instanceof Date ? v.toISOString() : v === null || v === undefined ? '-' : String(v));
  const widths = columns.map((c) => Math.max(c.length, ...rows.map((r) => cell(r[c]).length)));
  const line = (values: string[]) =>
    values
      .map((v, i) => v.padEnd(widths[i]!))
      .join('  ')
      .trimEnd();
  return [line(columns), ...rows.map((r) => line(columns.map((c) => cell(r[c]))))].join('\n');
}

/** Prints progress for long work on stderr, at most every 250 ms, and a final line. */
export function progress(label: string, total?: number): { tick(n: number): void; done(n: number): void } {
  let last = 0;
  const show = (n: number, final = false) => {
    const now = Date.now();
    if (!final && now - last < 250) return;
    last = now;
    if (process.stderr.isTTY || final)
      process.stderr.write(`\r${label}: ${n}${total !== undefined ? `/${total}` : ''}${final ? '\n' : ''}`);
  };
  return { tick: (n) => show(n), done: (n) => show(n, true) };
}
