// withUserAgent: API clients and watches made from the view send the component's User-Agent
// (checked on a real HTTP server on loopback that records each request's headers), and reuse
// their TLS connections (a real HTTPS server counts them).
import { execFileSync, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { createServer as createHttpsServer, type Server as HttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoreV1Api, KubeConfig, Watch } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { componentUserAgent, withUserAgent } from '../../ts/kube/client.js';

const seen: { url: string; ua: string | undefined; auth: string | undefined }[] = [];
const server = createServer((req, res) => {
  seen.push({ url: req.url ?? '', ua: req.headers['user-agent'], auth: req.headers.authorization });
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end(
    JSON.stringify({ kind: 'ServiceList', apiVersion: 'v1', metadata: { resourceVersion: '1' }, items: [] }),
  );
});
let kc: KubeConfig;

beforeAll(async () => {
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: 'c', server: `http://127.0.0.1:${port}`, skipTLSVerify: true }],
    users: [{ name: 'u', token: 'secret-token' }],
    contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
    currentContext: 'x',
  });
});
afterAll(() => server.close());

it('API clients and watches of the view send the component User-Agent and keep the credentials', async () => {
  const ua = componentUserAgent('kubenode-test-component');
  expect(ua).toMatch(/^kubenode-test-component\/v\d+\.\d+\.\d+\S* \(linux\/[a-z0-9]+\) kubenode$/);
  const view = withUserAgent(kc, 'kubenode-test-component');
  await view.makeApiClient(CoreV1Api).listServiceForAllNamespaces();
  const done = new Promise<void>((resolve) => {
    void new Watch(view).watch(
      '/api/v1/services',
      { resourceVersion: '1' },
      () => {},
      () => resolve(),
    );
  });
  await done;
  const list = seen.find((s) => s.url === '/api/v1/services');
  const watch = seen.find((s) => s.url.includes('watch=true'));
  expect(list).toMatchObject({ ua, auth: 'Bearer secret-token' });
  expect(watch).toMatchObject({ ua, auth: 'Bearer secret-token' });
  // The KubeConfig the view was made from is unchanged.
  seen.length = 0;
  await kc.makeApiClient(CoreV1Api).listServiceForAllNamespaces();
  expect(seen[0]?.ua).not.toBe(ua);
});

describe('connection reuse', () => {
  const repo = join(import.meta.dirname, '..', '..');
  const dir = mkdtempSync(join(tmpdir(), 'kubenode-client-test-'));
  const caFile = join(dir, 'tls.crt');
  const keyFile = join(dir, 'tls.key');
  let tlsServer: HttpsServer;
  let connections = 0;
  let tlsKc: KubeConfig;

  beforeAll(async () => {
    execFileSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'ec',
        '-pkeyopt',
        'ec_paramgen_curve:P-256',
        '-nodes',
        '-days',
        '1',
        '-subj',
        '/CN=127.0.0.1',
        '-addext',
        'subjectAltName=IP:127.0.0.1',
        '-keyout',
        keyFile,
        '-out',
        caFile,
      ],
      { stdio: 'ignore' },
    );
    tlsServer = createHttpsServer({ cert: readFileSync(caFile), key: readFileSync(keyFile) }, (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ kind: 'ServiceList', apiVersion: 'v1', metadata: {}, items: [] }));
    });
    tlsServer.on('secureConnection', () => {
      connections++;
    });
    tlsServer.listen(0, '127.0.0.1');
    await once(tlsServer, 'listening');
    const { port } = tlsServer.address() as AddressInfo;
    tlsKc = new KubeConfig();
    tlsKc.loadFromOptions({
      clusters: [{ name: 'c', server: `https://127.0.0.1:${port}`, caFile, skipTLSVerify: false }],
      users: [{ name: 'u', token: 'secret-token' }],
      contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
      currentContext: 'x',
    });
  });
  afterAll(() => {
    tlsServer?.closeAllConnections();
    tlsServer?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('sequential requests of a view share one TLS connection; a changed CA file gets a new one', async () => {
    const api = withUserAgent(tlsKc, 'kubenode-test-component').makeApiClient(CoreV1Api);
    connections = 0;
    for (let i = 0; i < 10; i++) await api.listServiceForAllNamespaces();
    expect(connections).toBe(1);
    // The same certificate twice is a different CA bundle that still verifies the server: the
    // rotated material must be used, so a new agent and connection.
    const pem = readFileSync(caFile, 'utf8');
    writeFileSync(caFile, pem + pem);
    await api.listServiceForAllNamespaces();
    await api.listServiceForAllNamespaces();
    expect(connections).toBe(2);
    writeFileSync(caFile, pem);
  });

  it('an idle kept-alive connection does not keep the process running', async () => {
    const script = join(dir, 'idle.mts');
    writeFileSync(
      script,
      `import { CoreV1Api, KubeConfig } from ${JSON.stringify(join(repo, 'node_modules', '@kubernetes', 'client-node', 'dist', 'index.js'))};
import { withUserAgent } from ${JSON.stringify(join(repo, 'ts', 'kube', 'client.ts'))};
const kc = new KubeConfig();
kc.loadFromString(process.env.KC as string);
await withUserAgent(kc, 'kubenode-test-component').makeApiClient(CoreV1Api).listServiceForAllNamespaces();
console.log('listed');
`,
    );
    // Asynchronous: the server answering it runs in this process.
    const child = spawn(join(repo, 'node_modules', '.bin', 'tsx'), [script], {
      cwd: repo,
      env: { ...process.env, KC: tlsKc.exportConfig() },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
    const [code, signal] = (await once(child, 'exit')) as [number | null, string | null];
    clearTimeout(timer);
    expect(out.trim()).toBe('listed');
    expect(signal).toBeNull();
    expect(code).toBe(0);
  });
});
