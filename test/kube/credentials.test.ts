// Credentials in requests but never in messages: tokens trimmed as client-go trims a token file,
// credential failures as KubeCredentialErrors without the secret, and the redaction every log
// line goes through. The daemons' behaviour end to end is in credentials-daemons.test.ts.
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import { afterAll, describe, expect, it } from 'vitest';
import { withUserAgent } from '../../ts/kube/client.js';
import { KubeCredentialError } from '../../ts/kube/credentials.js';
import { jsonLogger } from '../../ts/kube/log.js';
import { redactCredentials, rememberCredential } from '../../ts/kube/redact.js';
import { settledWatch, type WatchLike } from '../../ts/kube/watch-list.js';
import { klogLogger } from '../../ts/servicecidr/logger.js';

const dir = mkdtempSync(join(tmpdir(), 'kubenode-creds-unit-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function kubeConfig(user: Record<string, unknown>): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: 'c', server: 'https://127.0.0.1:1', skipTLSVerify: true }],
    users: [{ name: 'u', ...user }],
    contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
    currentContext: 'x',
  });
  return kc;
}

async function authorization(kc: KubeConfig): Promise<string | null> {
  const init = await withUserAgent(kc, 'test').applyToFetchOptions({});
  return (init.headers as unknown as { get(k: string): string | null }).get('Authorization');
}

describe('bearer tokens', () => {
  it('are trimmed, as client-go trims a token file', async () => {
    expect(await authorization(kubeConfig({ token: 'abcdefgh12345678\n' }))).toBe('Bearer abcdefgh12345678');
  });

  it('with a line break inside fail as a KubeCredentialError that does not quote them', async () => {
    const e = await authorization(kubeConfig({ token: 'abcdefgh\n12345678' })).catch((x: unknown) => x);
    expect(e).toBeInstanceOf(KubeCredentialError);
    expect((e as Error).message).toBe(
      'the bearer token of user "u" is not a valid HTTP header value (it contains a control character or a line break)',
    );
  });

  it('from a failing exec plugin fail with the plugin named, its stderr redacted, never its stdout', async () => {
    const plugin = join(dir, 'plugin.sh');
    writeFileSync(
      plugin,
      '#!/bin/sh\necho \'{"status":{"token":"s3cr3t-t0ken-value"\'\necho "denied for Bearer s3cr3t-t0ken-value" >&2\nexit 3\n',
    );
    chmodSync(plugin, 0o755);
    const exec = { apiVersion: 'client.authentication.k8s.io/v1', command: plugin };
    const e = (await authorization(kubeConfig({ exec })).catch((x: unknown) => x)) as Error;
    expect(e).toBeInstanceOf(KubeCredentialError);
    expect(e.message).toBe(
      `cannot get credentials for user "u": exec credential plugin ${JSON.stringify(plugin)} failed: denied for Bearer [redacted]`,
    );
    writeFileSync(plugin, '#!/bin/sh\necho \'{"status":{"token":"s3cr3t-t0ken-value"\'\n');
    const bad = (await authorization(kubeConfig({ exec })).catch((x: unknown) => x)) as Error;
    expect(bad.message).toBe(
      `cannot get credentials for user "u": exec credential plugin ${JSON.stringify(plugin)} printed no ExecCredential JSON`,
    );
  });
});

describe('redactCredentials', () => {
  it.each([
    [
      "'Bearer abc.def-ghi\n' is not a legal HTTP header value",
      "'Bearer [redacted]\n' is not a legal HTTP header value",
    ],
    ['Authorization: Basic dXNlcjpwYXNz', 'Authorization: Basic [redacted]'],
    ['connect https://admin:hunter2@10.0.0.1:6443/api', 'connect https://[redacted]@10.0.0.1:6443/api'],
    ['got eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ4In0.c2ln back', 'got [redacted] back'],
    ['{"status":{"token":"abcdef"}}', '{"status":{"token":"[redacted]"}}'],
    ['err="{\\"token\\":\\"abcdef\\"}"', 'err="{\\"token\\":\\"[redacted]\\"}"'],
    ['  token: abcdef\n', '  token: [redacted]\n'],
    ['-----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END RSA PRIVATE KEY-----', '[redacted]'],
    // An auth-provider block quoted back by the kubeconfig parser.
    ['      refresh-token: 1//0abcdefg\n', '      refresh-token: [redacted]\n'],
    ['      access-token: ya29.abcdefg\n', '      access-token: [redacted]\n'],
    ['      client-secret: s3cr3tvalue\n', '      client-secret: [redacted]\n'],
    [
      '{"idToken":"abcdefgh","clientSecret":"xyz12345"}',
      '{"idToken":"[redacted]","clientSecret":"[redacted]"}',
    ],
    // Not credentials: paths named token, ordinary words.
    [
      'cannot read the service-account token /var/run/token: file is empty',
      'cannot read the service-account token /var/run/token: file is empty',
    ],
    ['basic checks for the bearer token of user "u"', 'basic checks for the bearer token of user "u"'],
  ])('%j', (input, want) => {
    expect(redactCredentials(input)).toBe(want);
  });

  it('removes a token once sent, wherever it appears, from both log formats', async () => {
    const token = 'f00dfeedcafe0123456789';
    await authorization(kubeConfig({ token }));
    const lines: string[] = [];
    const stream = { write: (s: string) => lines.push(s) };
    const err = new Error(`server said ${token}`);
    jsonLogger(0, stream).error('failed', err, { detail: `x${token}y` });
    klogLogger(0, stream).error('failed', err, { detail: `x${token}y` });
    expect(lines).toHaveLength(2);
    for (const l of lines) expect(l).not.toContain(token);
  });

  it('keeps redacting the newest tokens however often they rotate', () => {
    const tokens = Array.from({ length: 100 }, (_, i) => `rotated-token-${i}-abcdef`);
    for (const t of tokens) rememberCredential(t);
    expect(redactCredentials(`x ${tokens[99]} y`)).toBe('x [redacted] y');
  });
});

describe('settledWatch', () => {
  it('turns a watch that rejects before its request into a done(err) and an aborted controller', async () => {
    const failing: WatchLike = { watch: () => Promise.reject(new Error('no credentials')) };
    const reported: unknown[] = [];
    const done: unknown[] = [];
    const c = await settledWatch(failing, (e) => reported.push(e)).watch(
      '/x',
      {},
      () => {},
      (e) => done.push(e),
    );
    expect(c.signal.aborted).toBe(true);
    expect((done[0] as Error).message).toBe('no credentials');
    expect(reported).toEqual([]);
  });

  it('hands a done handler that rejects (client-node restarts the watch from it) to onError', async () => {
    const ends: WatchLike = {
      watch: async (_p, _q, _cb, done) => {
        done(null);
        return new AbortController();
      },
    };
    const reported: unknown[] = [];
    const rejecting = (() => Promise.reject(new Error('restart failed'))) as unknown as (e: unknown) => void;
    await settledWatch(ends, (e) => reported.push(e)).watch('/x', {}, () => {}, rejecting);
    await new Promise((r) => setImmediate(r));
    expect((reported[0] as Error).message).toBe('restart failed');
  });
});
