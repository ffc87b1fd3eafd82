import { readFileSync } from 'node:fs';

/** walgate's version, from package.json (sent as `User-Agent: walgate/<version>`). */
export const VERSION: string = (JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as { version: string })
  .version;
