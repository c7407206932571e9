// The lean transport against the real kube-apiserver: requests and watches over one HTTP/2
// session (the protocol and the process's TCP connections to the server are checked), writes
// with each patch type, an ERROR 410 for a version the server no longer has, a token file
// re-read as it rotates, client-certificate authentication, an exec plugin through client-node,
// HTTP/1.1 against a server without h2, and a bad kubeconfig as a typed error.
import { execFileSync } from 'node:child_process';
import { once } from 'node:events';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import type { IncomingMessage } from 'node:http';
import { createServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { KubenodeError } from '../../ts/errors.js';
import { apiCode } from '../../ts/kube/api-error.js';
import { loadKubeConfig } from '../../ts/kube/config.js';
import { KubeCredentialError } from '../../ts/kube/credentials.js';
import { delegatedAuthorizer } from '../../ts/kube/delegated-auth.js';
import { ResilientInformer } from '../../ts/kube/informer.js';
import {
  KubeApiError,
  type KubeRest,
  PATCH_APPLY,
  PATCH_MERGE,
  PATCH_STRATEGIC,
  restClient,
  type WatchEvent,
} from '../../ts/kube/rest.js';
import { silentLogger } from '../../ts/servicecidr/logger.js';
import { type ApiServer, startApiServer } from '../support/apiserver.js';

vi.setConfig({ testTimeout: 120_000 });

let api: ApiServer;
let dir: string;
const clients: KubeRest[] = [];

function sh(cmd: string, args: string[]): void {
  execFileSync(cmd, args, { stdio: 'ignore' });
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'kubenode-rest-'));
  // A client CA and a client certificate in system:masters, for client-certificate auth.
  sh('openssl', [
    'req',
    '-x509',
    '-newkey',
    'ec',
    '-pkeyopt',
    'ec_paramgen_curve:prime256v1',
    '-nodes',
    '-days',
    '2',
    '-subj',
    '/CN=kubenode-test-client-ca',
    '-keyout',
    join(dir, 'client-ca.key'),
    '-out',
    join(dir, 'client-ca.crt'),
  ]);
  sh('openssl', [
    'req',
    '-newkey',
    'ec',
    '-pkeyopt',
    'ec_paramgen_curve:prime256v1',
    '-nodes',
    '-subj',
    '/O=system:masters/CN=cert-admin',
    '-keyout',
    join(dir, 'client.key'),
    '-out',
    join(dir, 'client.csr'),
  ]);
  sh('openssl', [
    'x509',
    '-req',
    '-in',
    join(dir, 'client.csr'),
    '-CA',
    join(dir, 'client-ca.crt'),
    '-CAkey',
    join(dir, 'client-ca.key'),
    '-CAcreateserial',
    '-days',
    '2',
    '-out',
    join(dir, 'client.crt'),
  ]);
  api = await startApiServer({ extraArgs: [`--client-ca-file=${join(dir, 'client-ca.crt')}`] });
});
afterAll(async () => {
  for (const c of clients) c.close();
  await api?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

function kubeconfig(
  name: string,
  user: Record<string, unknown>,
  cluster: Record<string, unknown> = {},
): string {
  const file = join(dir, name);
  writeFileSync(
    file,
    JSON.stringify({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [
        { name: 'c', cluster: { server: api.url, 'certificate-authority': api.caFile, ...cluster } },
      ],
      users: [{ name: 'u', user }],
      contexts: [{ name: 'x', context: { cluster: 'c', user: 'u' } }],
      'current-context': 'x',
    }),
  );
  return file;
}

async function client(file: string, component = 'kubenode-rest-test'): Promise<KubeRest> {
  const { connection } = await loadKubeConfig(file, { env: {} });
  const c = restClient(connection, component);
  clients.push(c);
  return c;
}

/** This process's established TCP connections to `port`. */
function connectionsTo(port: string): number {
  const out = execFileSync('ss', ['-Htnp', 'state', 'established', 'dport', `= :${port}`], {
    encoding: 'utf8',
  });
  return out.split('\n').filter((l) => l.includes(`pid=${process.pid},`)).length;
}

interface ConfigMap {
  metadata: { name: string; namespace?: string; resourceVersion?: string; labels?: Record<string, string> };
  data?: Record<string, string>;
}

describe('over HTTP/2', () => {
  it('creates, patches (merge, strategic, apply), lists and watches on one session', async () => {
    const port = new URL(api.url).port;
    // The test helper's own keep-alive connections are not the client's.
    const before = connectionsTo(port);
    const rest = await client(kubeconfig('token', { token: api.token }));
    const path = '/api/v1/namespaces/default/configmaps';
    const created = await rest.request<ConfigMap>({
      method: 'POST',
      path,
      body: { metadata: { name: 'rest-a' }, data: { a: '1' } },
    });
    expect(created.metadata.resourceVersion).toBeTruthy();
    expect(rest.protocol).toBe('h2');
    await rest.request({
      method: 'PATCH',
      path: `${path}/rest-a`,
      body: { data: { b: '2' } },
      contentType: PATCH_MERGE,
    });
    await rest.request({
      method: 'PATCH',
      path: `${path}/rest-a`,
      body: { data: { c: '3' } },
      contentType: PATCH_STRATEGIC,
    });
    const applied = await rest.request<ConfigMap>({
      method: 'PATCH',
      path: `${path}/rest-b`,
      query: { fieldManager: 'kubenode-rest-test', force: true },
      body: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'rest-b' }, data: { x: 'y' } },
      contentType: PATCH_APPLY,
    });
    expect(applied.data).toEqual({ x: 'y' });
    const list = await rest.request<{ metadata: { resourceVersion: string }; items: ConfigMap[] }>({ path });
    expect(list.items.find((c) => c.metadata.name === 'rest-a')?.data).toEqual({ a: '1', b: '2', c: '3' });

    // Five watches and requests in parallel: still one session, one TCP connection.
    const stop = new AbortController();
    const seen: WatchEvent<ConfigMap>[][] = [[], [], [], [], []];
    const watches = seen.map((events) =>
      rest.watch<ConfigMap>(
        path,
        { resourceVersion: list.metadata.resourceVersion, allowWatchBookmarks: true },
        (e) => events.push(e),
        stop.signal,
      ),
    );
    await rest.request({ method: 'POST', path, body: { metadata: { name: 'rest-c' } } });
    await vi.waitFor(() => {
      for (const events of seen)
        expect(events.some((e) => e.type === 'ADDED' && e.object.metadata.name === 'rest-c')).toBe(true);
    }, 20_000);
    expect(rest.sessionsOpened).toBe(1);
    expect(connectionsTo(port) - before).toBe(1);
    stop.abort();
    await Promise.all(watches);

    // The server's answer to an error is a typed error with its status and Status body.
    const missing = await rest.request({ path: `${path}/nope` }).catch((e: unknown) => e);
    expect(missing).toBeInstanceOf(KubeApiError);
    expect(missing).toBeInstanceOf(KubenodeError);
    expect(apiCode(missing)).toBe(404);
    expect((missing as KubeApiError).body).toMatchObject({ kind: 'Status', reason: 'NotFound' });
    const conflict = await rest
      .request({ method: 'POST', path, body: { metadata: { name: 'rest-a' } } })
      .catch((e: unknown) => e);
    expect(apiCode(conflict)).toBe(409);
    expect((conflict as KubeApiError).code).toBe('ERR_KUBENODE_CONFLICT');
  });

  it('sends the component User-Agent', async () => {
    const rest = await client(kubeconfig('token-ua', { token: api.token }), 'kubenode-ua-check');
    // The API server sets managedFields' manager from the User-Agent's first word.
    const cm = await rest.request<{ metadata: { managedFields?: { manager?: string }[] } }>({
      method: 'POST',
      path: '/api/v1/namespaces/default/configmaps',
      body: { metadata: { name: 'rest-ua' }, data: { a: '1' } },
    });
    expect(cm.metadata.managedFields?.[0]?.manager).toBe('kubenode-ua-check');
  });

  it('a watch event of multi-byte text across many DATA frames arrives whole', async () => {
    const rest = await client(kubeconfig('token-utf8', { token: api.token }));
    const path = '/api/v1/namespaces/default/configmaps';
    const list = await rest.request<{ metadata: { resourceVersion: string } }>({ path });
    // 3-byte characters over about 20 of the API server's 16 KiB DATA frames: frame edges fall
    // inside characters.
    const text = '\u540d\u00e9\u{1f600}'.repeat(40_000);
    const stop = new AbortController();
    let seen: string | undefined;
    const watch = rest.watch<{ metadata: { name: string }; data?: { t?: string } }>(
      path,
      { resourceVersion: list.metadata.resourceVersion },
      (e) => {
        if (e.object.metadata.name === 'rest-utf8') seen = e.object.data?.t;
      },
      stop.signal,
    );
    await rest.request({
      method: 'POST',
      path,
      body: { metadata: { name: 'rest-utf8' }, data: { t: text } },
    });
    await vi.waitFor(() => expect(seen).toBeDefined(), 20_000);
    stop.abort();
    await watch;
    expect(seen === text).toBe(true);
  });
});

describe('410 Gone', () => {
  // Watches served by etcd, compacted every 2 s: a version a few seconds old is gone.
  let compacting: ApiServer;
  beforeAll(async () => {
    compacting = await startApiServer({
      extraArgs: ['--watch-cache=false', '--etcd-compaction-interval=2s'],
    });
  });
  afterAll(async () => {
    await compacting?.stop();
  });

  async function write(rest: KubeRest, n: number): Promise<void> {
    for (let i = 0; i < n; i++) {
      await rest.request({
        method: 'POST',
        path: '/api/v1/namespaces/kube-system/configmaps',
        body: { metadata: { generateName: 'filler-' } },
      });
    }
  }

  it('a watch from a compacted version gets ERROR 410; the informer relists and reports what went as deleted', async () => {
    const { connection } = await loadKubeConfig(compacting.kubeconfigFile, { env: {} });
    const rest = restClient(connection, 'kubenode-rest-test');
    clients.push(rest);
    const path = '/api/v1/namespaces/default/configmaps';
    const first = await rest.request<ConfigMap>({ method: 'POST', path, body: { metadata: { name: 'a' } } });
    await rest.request({ method: 'POST', path, body: { metadata: { name: 'b' } } });
    await write(rest, 5);
    await new Promise((r) => setTimeout(r, 6000));
    await write(rest, 1);
    const events: WatchEvent<{ code?: number }>[] = [];
    await rest.watch<{ code?: number }>(
      path,
      { resourceVersion: first.metadata.resourceVersion },
      (e) => events.push(e),
      AbortSignal.timeout(20_000),
    );
    expect(events[0]).toMatchObject({ type: 'ERROR', object: { code: 410 } });

    // An informer whose watch comes back after its version was compacted away.
    let lists = 0;
    const counting: KubeRest = Object.create(rest, {
      request: {
        value: (req: Parameters<KubeRest['request']>[0]) => {
          if (!req.method) lists++;
          return rest.request(req);
        },
      },
    });
    const deleted: string[] = [];
    const inf = new ResilientInformer<ConfigMap & { apiVersion?: string; kind?: string }>(
      counting,
      path,
      undefined,
      'ConfigMap',
      silentLogger,
      {
        backoff: { initialMs: 25_000, jitter: 0 },
        onError: () => {},
      },
    );
    inf.on({ delete: (o) => deleted.push(o.metadata.name) });
    try {
      await inf.start();
      expect(
        inf
          .list()
          .map((o) => o.metadata.name)
          .sort(),
      ).toEqual(['a', 'b']);
      expect(lists).toBe(1);
      // Down, then up again with b deleted and the history compacted before the watch returns.
      await compacting.kill();
      await compacting.restart();
      const other = restClient(connection, 'kubenode-rest-test');
      clients.push(other);
      await other.request({ method: 'DELETE', path: `${path}/b` });
      await write(other, 5);
      await new Promise((r) => setTimeout(r, 6000));
      await write(other, 1);
      await vi.waitFor(() => expect(deleted).toEqual(['b']), 60_000);
      expect(lists).toBe(2);
      expect(inf.list().map((o) => o.metadata.name)).toEqual(['a']);
    } finally {
      await inf.stop();
    }
  });
});

describe('credentials', () => {
  it('a token file is re-read as it rotates', async () => {
    const tokenFile = join(dir, 'token-file');
    writeFileSync(tokenFile, 'not-a-valid-token\n');
    const rest = await client(kubeconfig('token-file.yaml', { tokenFile }));
    const denied = await rest.request({ path: '/api/v1/namespaces' }).catch((e: unknown) => e);
    expect(apiCode(denied)).toBe(401);
    writeFileSync(tokenFile, `${api.token}\n`);
    // Read again a minute after the last read, as client-go's cached file token source does.
    const now = performance.now();
    const clock = vi.spyOn(performance, 'now').mockImplementation(() => now + 61_000);
    try {
      await expect(rest.request({ path: '/api/v1/namespaces' })).resolves.toMatchObject({
        kind: 'NamespaceList',
      });
    } finally {
      clock.mockRestore();
    }
  });

  it('authenticates with a client certificate', async () => {
    const rest = await client(
      kubeconfig('client-cert', {
        'client-certificate': join(dir, 'client.crt'),
        'client-key-data': readFileSync(join(dir, 'client.key')).toString('base64'),
      }),
    );
    const review = await rest.request<{ status: { userInfo: { username: string } } }>({
      method: 'POST',
      path: '/apis/authentication.k8s.io/v1/selfsubjectreviews',
      body: { apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' },
    });
    expect(review.status.userInfo.username).toBe('cert-admin');
    expect(rest.protocol).toBe('h2');
    // A rotated certificate file is read again a minute later, on a new session.
    sh('openssl', [
      'req',
      '-new',
      '-key',
      join(dir, 'client.key'),
      '-subj',
      '/O=system:masters/CN=cert-admin-2',
      '-out',
      join(dir, 'client2.csr'),
    ]);
    sh('openssl', [
      'x509',
      '-req',
      '-in',
      join(dir, 'client2.csr'),
      '-CA',
      join(dir, 'client-ca.crt'),
      '-CAkey',
      join(dir, 'client-ca.key'),
      '-CAcreateserial',
      '-days',
      '2',
      '-out',
      join(dir, 'client.crt'),
    ]);
    const now = performance.now();
    const clock = vi.spyOn(performance, 'now').mockImplementation(() => now + 61_000);
    try {
      const again = await rest.request<{ status: { userInfo: { username: string } } }>({
        method: 'POST',
        path: '/apis/authentication.k8s.io/v1/selfsubjectreviews',
        body: { apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' },
      });
      expect(again.status.userInfo.username).toBe('cert-admin-2');
      expect(rest.sessionsOpened).toBe(2);
    } finally {
      clock.mockRestore();
    }
  });

  it('an exec plugin runs through client-node; its failure is a KubeCredentialError without the secret', async () => {
    const plugin = join(dir, 'plugin.sh');
    const stage = join(dir, 'plugin-stage');
    writeFileSync(stage, 'good');
    writeFileSync(
      plugin,
      `#!/bin/sh
if [ "$(cat ${stage})" = fail ]; then echo "login required" >&2; exit 1; fi
printf '%s' '${JSON.stringify({ apiVersion: 'client.authentication.k8s.io/v1', kind: 'ExecCredential', status: { token: api.token } })}'
`,
    );
    chmodSync(plugin, 0o755);
    const file = kubeconfig('exec', {
      exec: { apiVersion: 'client.authentication.k8s.io/v1', command: plugin, interactiveMode: 'Never' },
    });
    const { connection } = await loadKubeConfig(file, { env: {} });
    expect(connection.plugin).toBe('exec');
    const rest = restClient(connection, 'kubenode-rest-test');
    clients.push(rest);
    await expect(rest.request({ path: '/api/v1/namespaces/default' })).resolves.toMatchObject({
      kind: 'Namespace',
    });
    expect(rest.protocol).toBe('h2');
    // A second user, so client-node's token cache does not answer for the failing plugin.
    writeFileSync(stage, 'fail');
    const failing = restClient((await loadKubeConfig(file, { env: {} })).connection, 'kubenode-rest-test');
    clients.push(failing);
    const e = await failing.request({ path: '/api/v1/namespaces/default' }).catch((x: unknown) => x);
    expect(e).toBeInstanceOf(KubeCredentialError);
    expect((e as Error).message).toMatch(/exec credential plugin .*plugin\.sh" failed: login required/);
    expect((e as Error).message).not.toContain(api.token);
  });

  it('a bad kubeconfig is a typed error naming the file, with no secret in it', async () => {
    const file = join(dir, 'bad.yaml');
    writeFileSync(file, 'clusters: [\n  token: secret-in-broken-yaml');
    const e = await loadKubeConfig(file, { env: {} }).catch((x: unknown) => x);
    expect(e).toBeInstanceOf(KubenodeError);
    expect((e as KubenodeError).code).toBe('ERR_KUBENODE_INVALID_ARG');
    expect((e as Error).message).toContain(file);
    writeFileSync(file, '- just\n- a list\n');
    await expect(loadKubeConfig(file, { env: {} })).rejects.toThrow(/not a kubeconfig document/);
    const noServer = kubeconfig('no-server', { token: api.token }, { server: '' });
    await expect(loadKubeConfig(noServer, { env: {} })).rejects.toThrow(
      /has no current cluster with a server/,
    );
  });
});

describe('delegated authorization over the lean client', () => {
  it('a TokenReview and a SubjectAccessReview decide who reads /metrics', async () => {
    const rest = await client(kubeconfig('token-delegated', { token: api.token }));
    const authorize = delegatedAuthorizer(rest);
    const asking = (token: string) =>
      ({ headers: { authorization: `Bearer ${token}` }, url: '/metrics', method: 'GET' }) as IncomingMessage;
    await expect(authorize(asking(api.token))).resolves.toEqual({ status: 200 });
    await expect(authorize(asking('made-up-token'))).resolves.toMatchObject({ status: 401 });
  });
});

describe('HTTP/1.1', () => {
  it('a server that does not offer h2 gets keep-alive HTTP/1.1', async () => {
    const key = join(dir, 'h1.key');
    const crt = join(dir, 'h1.crt');
    sh('openssl', [
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:prime256v1',
      '-nodes',
      '-days',
      '2',
      '-subj',
      '/CN=127.0.0.1',
      '-addext',
      'subjectAltName=IP:127.0.0.1',
      '-keyout',
      key,
      '-out',
      crt,
    ]);
    let sockets = 0;
    const server = createServer({ key: readFileSync(key), cert: readFileSync(crt) }, (req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ ua: req.headers['user-agent'], auth: req.headers.authorization }));
    });
    server.on('secureConnection', () => sockets++);
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    try {
      const file = join(dir, 'h1-kubeconfig');
      writeFileSync(
        file,
        JSON.stringify({
          clusters: [
            {
              name: 'c',
              cluster: {
                server: `https://127.0.0.1:${(server.address() as AddressInfo).port}`,
                'certificate-authority': crt,
              },
            },
          ],
          users: [{ name: 'u', user: { token: 'h1-token' } }],
          contexts: [{ name: 'x', context: { cluster: 'c', user: 'u' } }],
          'current-context': 'x',
        }),
      );
      const rest = await client(file, 'kubenode-h1');
      for (let i = 0; i < 3; i++) {
        await expect(rest.request({ path: '/x' })).resolves.toMatchObject({
          auth: 'Bearer h1-token',
          ua: expect.stringMatching(/^kubenode-h1\//),
        });
      }
      expect(rest.protocol).toBe('http/1.1');
      expect(sockets).toBe(1);
      rest.close();
    } finally {
      server.close();
      server.closeAllConnections();
    }
  });
});
