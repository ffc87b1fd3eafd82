import { InvalidArgumentError, Option } from 'commander';

export function authOption(): Option {
  return new Option('--auth <on|off>', 'serve the authentication API for this environment').argParser((v) => {
    if (v !== 'on' && v !== 'off') throw new InvalidArgumentError('expected on or off');
    return v === 'on';
  });
}

export function tokenFormatOption(): Option {
  return new Option('--token-format <format>', 'access tokens as signed JWTs (jws) or encrypted (jwe)').choices(['jws', 'jwe']);
}

export function isoDate(v: string): Date {
  const d = new Date(v);
  if (Number.isNaN(d.getTime())) throw new InvalidArgumentError('expected an ISO 8601 date or timestamp');
  return d;
}
