import { X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';

// NODE_EXTRA_CA_CERTS is Node's own setting, and how a receiver (or an identity provider) with a
// private CA is trusted. Node reads it as each process starts and treats a file it cannot load as a
// warning only ("Ignoring extra certs from …, load failed") — after which the process runs without
// that CA, so every delivery to the receiver it was meant for fails its certificate check. A file
// with no certificate in it is not even a warning. The daemons that open TLS connections check it
// once instead, and refuse to start, naming the variable and the path it resolved to.

/** What is wrong with NODE_EXTRA_CA_CERTS, or undefined when it is unset or names certificates. */
export function extraCaCertsProblem(env: NodeJS.ProcessEnv = process.env, cwd: string = process.cwd()): string | undefined {
  const file = env.NODE_EXTRA_CA_CERTS;
  if (!file) return undefined;
  // Node resolves a relative path from the directory the process starts in; so does this.
  const resolved = path.resolve(cwd, file);
  const fix = 'set it to a PEM file of CA certificates (a relative path is from the directory walgate starts in), or unset it';
  let text: string;
  try {
    text = readFileSync(resolved, 'utf8');
  } catch (err) {
    const reason = (err as NodeJS.ErrnoException).code ?? String(err);
    return `NODE_EXTRA_CA_CERTS=${file}: cannot read ${resolved} (${reason}), so no receiver signed by that CA would be trusted: ${fix}`;
  }
  const certificates = (text.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? []).filter((pem) => {
    try {
      return Boolean(new X509Certificate(pem));
    } catch {
      return false;
    }
  });
  if (certificates.length === 0)
    return `NODE_EXTRA_CA_CERTS=${file}: ${resolved} holds no PEM certificate (-----BEGIN CERTIFICATE-----), so it trusts nothing: ${fix}`;
  return undefined;
}

/** Throws the problem (the daemons' start-up handler prints it and exits 1). */
export function requireLoadableExtraCaCerts(env: NodeJS.ProcessEnv = process.env, cwd: string = process.cwd()): void {
  const problem = extraCaCertsProblem(env, cwd);
  if (problem) throw new Error(problem);
}
