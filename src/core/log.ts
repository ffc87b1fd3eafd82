import { pino, type DestinationStream, type Logger } from 'pino';

export type { Logger };

// Anything that could carry a credential is censored wherever it appears in a log object.
// (Not `code`: errors carry their SQLSTATE there, and codes are never logged as such.)
const REDACT = [
  'password',
  'newPassword',
  'secret',
  'token',
  'accessToken',
  'refreshToken',
  '*.password',
  '*.newPassword',
  '*.secret',
  '*.token',
  '*.accessToken',
  '*.refreshToken',
  'req.headers.authorization',
  'req.headers.cookie',
  'res.headers["set-cookie"]',
];

export function createLogger(level: string, destination?: DestinationStream, name = 'walgate'): Logger {
  return pino(
    {
      name,
      level,
      redact: { paths: REDACT, censor: '[redacted]' },
      base: { pid: process.pid },
      timestamp: pino.stdTimeFunctions.isoTime,
    },
    destination,
  );
}

/**
 * Where `npm start` logs: readable lines (pino-pretty, synchronous so nothing is lost at exit) when
 * stdout is a terminal, JSON lines otherwise — a file, a pipe or a log collector parses those.
 */
export async function consoleDestination(): Promise<DestinationStream | undefined> {
  if (!process.stdout.isTTY) return undefined;
  const { default: pretty } = await import('pino-pretty');
  return pretty({ colorize: true, sync: true, translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname,name' });
}
