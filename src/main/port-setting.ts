/**
 * A listener that cannot bind, said in terms of the setting that chose its port: "listen
 * EADDRINUSE 127.0.0.1:3000" leaves a newcomer guessing which variable moves it.
 */
export function listenErrorNamingSetting(err: unknown, setting: string, port: number, host: string): unknown {
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  if (code === 'EADDRINUSE')
    return new Error(
      `${host}:${port} is already in use: stop what listens there, or set ${setting} to a free port (${setting}=${port} now)`,
    );
  if (code === 'EACCES')
    return new Error(`not allowed to listen on ${host}:${port}: set ${setting} to a port above 1023 (${setting}=${port} now)`);
  return err;
}
