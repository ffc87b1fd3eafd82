// oidc-provider ships no type declarations; the tests use this much of it.
declare module 'oidc-provider' {
  import type { Server } from 'node:http';
  export default class Provider {
    constructor(issuer: string, configuration: Record<string, unknown>);
    listen(port: number, host?: string): Server;
    on(event: string, listener: (...args: any[]) => void): this;
  }
}
