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
