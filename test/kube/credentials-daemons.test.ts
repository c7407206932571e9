// Both daemons against the real API server with credentials that fail: an exec credential plugin
// that fails, then prints a token no HTTP header can carry, then a good token ending in a
// newline; a service-account token file written by `kubectl create token sa > token` (a trailing
// newline) that disappears during the run and comes back. A credential failure is logged on one
// line, backed off and retried like an unreachable server; no log line, in either format, ever
// holds the token; configuration files that are FIFOs or devices end start-up with exit 2.
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, rmSync, symlinkSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoreV1Api, DiscoveryV1Api } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { TestNetns } from '../conntrack/netns.js';
import { createCIDR, apis as sccApis, waitReady } from '../servicecidr/helpers.js';
import { type ApiServer, startApiServer } from '../support/apiserver.js';
import { type Daemon, startDaemon } from '../support/daemon.js';
import { inCluster } from '../support/incluster.js';

vi.setConfig({ testTimeout: 240_000 });

let api: ApiServer;
let ns: TestNetns;
let dir: string;

beforeAll(async () => {
  ns = new TestNetns();
  dir = mkdtempSync(join(tmpdir(), 'kubenode-creds-'));
  api = await startApiServer();
  // A UDP Service with an endpoint: the conntrack reconciler's first pass runs (and logs) for it.
  const core = api.kubeConfig.makeApiClient(CoreV1Api);
  const disc = api.kubeConfig.makeApiClient(DiscoveryV1Api);
  await core.createNamespacedService({
    namespace: 'default',
    body: {
      metadata: { name: 'dns', namespace: 'default' },
      spec: { clusterIP: '10.96.0.10', clusterIPs: ['10.96.0.10'], ports: [{ protocol: 'UDP', port: 53 }] },
    },
  });
  await disc.createNamespacedEndpointSlice({
    namespace: 'default',
    body: {
      metadata: { name: 'dns-1', namespace: 'default', labels: { 'kubernetes.io/service-name': 'dns' } },
      addressType: 'IPv4',
      ports: [{ protocol: 'UDP', port: 5353 }],
      endpoints: [
        { addresses: ['10.244.0.1'], conditions: { ready: true, serving: true, terminating: false } },
      ],
    },
  });
});
afterAll(async () => {
  await api?.stop();
  ns?.destroy();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

type Format = 'text' | 'json';
type Which = 'servicecidr-controller' | 'conntrack reconcile';

function daemonArgs(which: Which, format: Format, extra: string[] = []): string[] {
  const base =
    which === 'servicecidr-controller'
      ? ['servicecidr-controller', '--workers', '1', '--secure-port=0']
      : [
          'conntrack',
          'reconcile',
          '--family',
          'ipv4',
          '--dry-run',
          '--netns',
          ns.path,
          // Listeners off: runs in parallel must not fight over the default ports.
          '--healthz-bind-address=',
          '--metrics-bind-address=',
        ];
  return [...base, '--logging-format', format, ...extra];
}

/**
 * A kubeconfig whose user runs `plugin.sh`: it fails while `<stage>` says `fail`, prints a token
 * with a line break inside while it says `bad`, and the real token with a trailing newline
 * after that (no expiry, so it runs for every request and each stage takes effect at once).
 */
function execKubeconfig(name: string): { kubeconfig: string; stage: (s: 'fail' | 'bad' | 'good') => void } {
  const d = mkdtempSync(join(dir, `${name}-`));
  const stageFile = join(d, 'stage');
  const plugin = join(d, 'plugin.sh');
  const half = api.token.length / 2;
  const cred = (token: string) =>
    JSON.stringify({
      apiVersion: 'client.authentication.k8s.io/v1',
      kind: 'ExecCredential',
      status: { token },
    });
  writeFileSync(
    plugin,
    `#!/bin/sh
case "$(cat ${stageFile})" in
fail) echo "login required: run the login helper first" >&2; exit 1 ;;
bad) printf '%s' '${cred(`${api.token.slice(0, half)}\n${api.token.slice(half)}`)}' ;;
*) printf '%s' '${cred(`${api.token}\n`)}' ;;
esac
`,
  );
  chmodSync(plugin, 0o755);
  writeFileSync(stageFile, 'fail');
  const kubeconfig = join(d, 'kubeconfig');
  writeFileSync(
    kubeconfig,
    JSON.stringify({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [{ name: 'c', cluster: { server: api.url, 'certificate-authority': api.caFile } }],
      users: [
        {
          name: 'plugin-user',
          user: {
            exec: {
              apiVersion: 'client.authentication.k8s.io/v1',
              command: plugin,
              interactiveMode: 'Never',
            },
          },
        },
      ],
      contexts: [{ name: 'x', context: { cluster: 'c', user: 'plugin-user' } }],
      'current-context': 'x',
    }),
  );
  return { kubeconfig, stage: (s) => writeFileSync(stageFile, s) };
}

/** Every line of both streams: one log record each, and none holding the token or half of it. */
function checkLog(d: Daemon, format: Format): void {
  const half = api.token.length / 2;
  const secrets = [api.token, api.token.slice(0, half), api.token.slice(half)];
  const lines = `${d.stdout}${d.stderr}`.split('\n').filter((l) => l !== '');
  expect(lines.length).toBeGreaterThan(0);
  for (const l of lines) {
    for (const s of secrets) expect(l, 'a log line holds the token').not.toContain(s);
    // One line per record: no stack trace, no message continued on the next line.
    expect(l).not.toMatch(/^\s+at /);
    if (format === 'json') {
      // conntrack's text-mode sync summaries are stdout lines; in JSON mode everything is JSON.
      expect(() => JSON.parse(l), `not a JSON log line: ${l}`).not.toThrow();
    } else {
      expect(l, `not a log line: ${l}`).toMatch(/^([IEW]\d{4} |\d{4}-\d\d-\d\dT)/);
    }
  }
}

/** How a daemon shows it works: a ServiceCIDR made Ready, or a conntrack pass logged. */
async function works(d: Daemon, which: Which, name: string): Promise<void> {
  if (which === 'servicecidr-controller') {
    const { net } = sccApis(api.kubeConfig);
    const octet = 200 + Math.floor(Math.random() * 50);
    await createCIDR(net, name, [`10.${octet}.${Math.floor(Math.random() * 250)}.0/24`]);
    await waitReady(net, name, 90_000).catch((e: Error) => {
      throw new Error(`${e.message}: ${d.stderr}`);
    });
  } else {
    await d.waitOutput(/IPv4: listed \d+|Cleaned stale conntrack entries/, 90_000);
  }
}

const count = (text: string, re: RegExp) => (text.match(re) ?? []).length;

describe('credential failures in the daemons', () => {
  const cases: [Which, Format][] = [
    ['servicecidr-controller', 'text'],
    ['servicecidr-controller', 'json'],
    ['conntrack reconcile', 'text'],
    ['conntrack reconcile', 'json'],
  ];
  it.each(cases)(
    '%s (%s logs): an exec plugin failing, then a bad token, then a good one',
    async (which, format) => {
      const name = `exec-${which.split(' ')[0]}-${format}`;
      const { kubeconfig, stage } = execKubeconfig(name);
      const d = startDaemon(daemonArgs(which, format, ['--kubeconfig', kubeconfig]));
      try {
        // Failures are retried with backoff: two of them, and the process is still up.
        const failed = /exec credential plugin \\?".*plugin\.sh\\?" failed: login required/g;
        await d.waitOutput(
          /exec credential plugin[^\n]*failed[\s\S]*exec credential plugin[^\n]*failed/,
          60_000,
        );
        expect(d.alive, d.stderr).toBe(true);
        expect(count(d.stdout + d.stderr, failed)).toBeGreaterThanOrEqual(2);
        stage('bad');
        await d.waitOutput(/is not a valid HTTP header value/, 60_000);
        expect(d.alive, d.stderr).toBe(true);
        stage('good');
        await works(d, which, name);
      } finally {
        expect(await d.stop(), d.stderr).toBe(0);
      }
      checkLog(d, format);
    },
  );

  it('a kubeconfig token ending in a newline is trimmed; one with a line break inside exits 2', async () => {
    const kubeconfig = join(dir, 'token-newline');
    const config = (token: string) =>
      JSON.stringify({
        apiVersion: 'v1',
        kind: 'Config',
        clusters: [{ name: 'c', cluster: { server: api.url, 'certificate-authority': api.caFile } }],
        users: [{ name: 'u', user: { token } }],
        contexts: [{ name: 'x', context: { cluster: 'c', user: 'u' } }],
        'current-context': 'x',
      });
    writeFileSync(kubeconfig, config(`${api.token}\n`));
    const d = startDaemon(daemonArgs('conntrack reconcile', 'text', ['--kubeconfig', kubeconfig]));
    try {
      await works(d, 'conntrack reconcile', 'inline');
    } finally {
      expect(await d.stop(), d.stderr).toBe(0);
    }
    checkLog(d, 'text');
    const half = api.token.length / 2;
    writeFileSync(kubeconfig, config(`${api.token.slice(0, half)}\n${api.token.slice(half)}`));
    const r = spawnSync(
      process.execPath,
      ['--import', 'tsx', 'ts/cli/main.ts', 'servicecidr-controller', '--kubeconfig', kubeconfig],
      { encoding: 'utf8', timeout: 20_000, cwd: join(import.meta.dirname, '..', '..') },
    );
    expect(r.status, r.stderr).toBe(2);
    expect(r.stderr).toContain('the bearer token of user "u" is not a valid HTTP header value');
    expect(r.stderr).not.toContain(api.token.slice(0, half));
    expect(r.stderr).not.toContain(api.token.slice(half));
  });

  it('in-cluster: a token file ending in a newline works, and survives being removed and restored', async () => {
    const pod = inCluster(api);
    writeFileSync(join(pod.dir, 'token'), `${api.token}\n`);
    const d = startDaemon(daemonArgs('servicecidr-controller', 'json'), pod.env);
    try {
      await works(d, 'servicecidr-controller', 'token-newline');
      // Gone past the next re-read (one minute after the last): the last token read stays in use.
      unlinkSync(join(pod.dir, 'token'));
      await new Promise((r) => setTimeout(r, 62_000));
      await works(d, 'servicecidr-controller', 'token-removed');
      await d.waitOutput(/Unable to rotate token/, 30_000);
      writeFileSync(join(pod.dir, 'token'), `${api.token}\n`);
      await works(d, 'servicecidr-controller', 'token-restored');
      // One line for the whole outage, however many requests it saw.
      expect(count(d.stderr, /Unable to rotate token/g), d.stderr).toBe(1);
      expect(d.stderr).toMatch(/cannot read the token file .*token: ENOENT/);
    } finally {
      expect(await d.stop(), d.stderr).toBe(0);
      pod.remove();
    }
    checkLog(d, 'json');
  });
});

describe('configuration files that are not regular files', () => {
  /** Runs a daemon expected to exit at once; 20 s is "hung". */
  function run(which: Which, env: NodeJS.ProcessEnv, extra: string[] = []) {
    const main = join(import.meta.dirname, '..', '..', 'ts', 'cli', 'main.ts');
    const r = spawnSync(process.execPath, ['--import', 'tsx', main, ...daemonArgs(which, 'text', extra)], {
      encoding: 'utf8',
      env,
      timeout: 20_000,
      cwd: join(import.meta.dirname, '..', '..'),
    });
    return { status: r.status, stderr: r.stderr };
  }

  const replace = (file: string, how: 'fifo' | 'zero') => {
    rmSync(file, { force: true });
    if (how === 'fifo') spawnSync('mkfifo', [file]);
    else symlinkSync('/dev/zero', file);
  };

  it.each([
    ['token', 'fifo', 'servicecidr-controller', 'a FIFO'],
    ['token', 'zero', 'conntrack reconcile', 'a character device'],
    ['ca.crt', 'zero', 'servicecidr-controller', 'a character device'],
    ['ca.crt', 'fifo', 'conntrack reconcile', 'a FIFO'],
    ['namespace', 'fifo', 'servicecidr-controller', 'a FIFO'],
    ['namespace', 'zero', 'conntrack reconcile', 'a character device'],
  ] as const)('in-cluster %s as a %s: %s exits 2 naming the file', (file, how, which, kind) => {
    const pod = inCluster(api);
    try {
      const path = join(pod.dir, file);
      replace(path, how);
      const r = run(which, pod.env);
      expect(r.status, r.stderr).toBe(2);
      expect(r.stderr).toContain(`${path}: not a regular file (${kind})`);
      expect(r.stderr).not.toMatch(/^\s+at /m);
    } finally {
      pod.remove();
    }
  });

  it('a --kubeconfig, or a CA file it names, that is a FIFO exits 2 naming it', () => {
    const fifo = join(dir, 'kubeconfig-fifo');
    if (!existsSync(fifo)) spawnSync('mkfifo', [fifo]);
    const r = run('servicecidr-controller', process.env, ['--kubeconfig', fifo]);
    expect(r.status, r.stderr).toBe(2);
    expect(r.stderr).toContain(`cannot read the kubeconfig ${fifo}: not a regular file (a FIFO)`);
    const kubeconfig = join(dir, 'ca-fifo');
    writeFileSync(
      kubeconfig,
      JSON.stringify({
        apiVersion: 'v1',
        kind: 'Config',
        clusters: [{ name: 'c', cluster: { server: api.url, 'certificate-authority': fifo } }],
        users: [{ name: 'u', user: { token: api.token } }],
        contexts: [{ name: 'x', context: { cluster: 'c', user: 'u' } }],
        'current-context': 'x',
      }),
    );
    const ca = run('conntrack reconcile', process.env, ['--kubeconfig', kubeconfig]);
    expect(ca.status, ca.stderr).toBe(2);
    expect(ca.stderr).toContain(
      `cannot read the certificate authority file ${fifo}: not a regular file (a FIFO)`,
    );
  });
});
