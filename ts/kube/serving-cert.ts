// The secure port's certificate: the files `--tls-cert-file`/`--tls-private-key-file` name, or
// one generated in memory at start-up, as kube-controller-manager does when given none
// (`localhost@<unix time>`, for localhost and 127.0.0.1, a year long). @peculiar/x509 builds
// it on Node's own WebCrypto, so no OpenSSL binary and no native code are involved.
import { webcrypto } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { hostname } from 'node:os';

export interface ServingCert {
  cert: string;
  key: string;
  /** Where it came from: the two files, or `self-signed`. */
  source: string;
}

const DAY_MS = 86_400_000;

/** A self-signed ECDSA P-256 serving certificate and its PKCS#8 key, in PEM. */
export async function selfSignedCert(now = new Date()): Promise<ServingCert> {
  // @peculiar/x509's dependency injection needs the Reflect metadata API in place first; only
  // the controller process that generates a certificate loads either.
  await import('reflect-metadata');
  const x509 = await import('@peculiar/x509');
  const crypto = webcrypto as unknown as NonNullable<
    Parameters<typeof x509.X509CertificateGenerator.createSelfSigned>[1]
  >;
  const alg = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' };
  const keys = (await webcrypto.subtle.generateKey(alg, true, ['sign', 'verify'])) as webcrypto.CryptoKeyPair;
  const dns = [...new Set(['localhost', hostname().toLowerCase()])];
  const cert = await x509.X509CertificateGenerator.createSelfSigned(
    {
      serialNumber: Buffer.from(webcrypto.getRandomValues(new Uint8Array(16)))
        .toString('hex')
        .replace(/^[89a-f]/, '1'),
      name: `CN=localhost@${Math.floor(now.getTime() / 1000)}`,
      notBefore: new Date(now.getTime() - 60_000),
      notAfter: new Date(now.getTime() + 365 * DAY_MS),
      signingAlgorithm: alg,
      keys,
      extensions: [
        new x509.BasicConstraintsExtension(false, undefined, true),
        new x509.KeyUsagesExtension(
          x509.KeyUsageFlags.digitalSignature | x509.KeyUsageFlags.keyEncipherment,
          true,
        ),
        new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.serverAuth]),
        new x509.SubjectAlternativeNameExtension([
          ...dns.map((value) => ({ type: 'dns' as const, value })),
          { type: 'ip', value: '127.0.0.1' },
        ]),
      ],
    },
    crypto,
  );
  const pkcs8 = Buffer.from(await webcrypto.subtle.exportKey('pkcs8', keys.privateKey)).toString('base64');
  const key = `-----BEGIN PRIVATE KEY-----\n${pkcs8.replace(/.{1,64}/g, '$&\n')}-----END PRIVATE KEY-----\n`;
  return { cert: cert.toString('pem'), key, source: 'self-signed' };
}

/** The certificate and key from files (both or neither), else a self-signed one. */
export async function servingCert(certFile?: string, keyFile?: string): Promise<ServingCert> {
  if (!certFile && !keyFile) return selfSignedCert();
  if (!certFile || !keyFile) {
    throw new Error('--tls-cert-file and --tls-private-key-file go together: give both or neither');
  }
  const [cert, key] = await Promise.all([readFile(certFile, 'utf8'), readFile(keyFile, 'utf8')]);
  return { cert, key, source: `${certFile}, ${keyFile}` };
}
