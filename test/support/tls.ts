// @peculiar/x509 resolves its services through tsyringe, which needs the Reflect metadata API.
import 'reflect-metadata';
import { webcrypto } from 'node:crypto';
import * as x509 from '@peculiar/x509';

x509.cryptoProvider.set(webcrypto as never);

export interface TestCertificates {
  /** PEM of the test CA: what the sender is told to trust. */
  ca: string;
  /** The receiver's certificate (for 127.0.0.1, ::1 and localhost) and key, PEM. */
  cert: string;
  key: string;
}

const ALG = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' } as const;

async function pkcs8Pem(key: webcrypto.CryptoKey): Promise<string> {
  const der = Buffer.from(await webcrypto.subtle.exportKey('pkcs8', key));
  return `-----BEGIN PRIVATE KEY-----\n${der
    .toString('base64')
    .match(/.{1,64}/g)!
    .join('\n')}\n-----END PRIVATE KEY-----\n`;
}

let cached: Promise<TestCertificates> | undefined;

/** A CA made for this test run, and a server certificate it signed. */
export function testCertificates(): Promise<TestCertificates> {
  cached ??= (async () => {
    const notBefore = new Date(Date.now() - 60_000);
    const notAfter = new Date(Date.now() + 24 * 3600_000);
    const caKeys = (await webcrypto.subtle.generateKey(ALG, true, ['sign', 'verify'])) as webcrypto.CryptoKeyPair;
    const ca = await x509.X509CertificateGenerator.createSelfSigned({
      serialNumber: '01',
      name: 'CN=walgate test CA',
      notBefore,
      notAfter,
      keys: caKeys,
      signingAlgorithm: ALG,
      extensions: [
        new x509.BasicConstraintsExtension(true, 0, true),
        new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true),
      ],
    });
    const leafKeys = (await webcrypto.subtle.generateKey(ALG, true, ['sign', 'verify'])) as webcrypto.CryptoKeyPair;
    const leaf = await x509.X509CertificateGenerator.create({
      serialNumber: '02',
      subject: 'CN=localhost',
      issuer: ca.subject,
      notBefore,
      notAfter,
      publicKey: leafKeys.publicKey,
      signingKey: caKeys.privateKey,
      signingAlgorithm: ALG,
      extensions: [
        new x509.SubjectAlternativeNameExtension([
          { type: 'dns', value: 'localhost' },
          { type: 'ip', value: '127.0.0.1' },
          { type: 'ip', value: '::1' },
        ]),
        new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.serverAuth]),
      ],
    });
    return { ca: ca.toString('pem'), cert: leaf.toString('pem'), key: await pkcs8Pem(leafKeys.privateKey) };
  })();
  return cached;
}
