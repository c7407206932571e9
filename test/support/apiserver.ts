// A real kube-apiserver backed by a real etcd, for integration tests.
//
//   const api = await startApiServer();       // builds (cached), starts, waits for /readyz
//   new NetworkingV1Api(...) via api.kubeConfig // or pass api.kubeconfigFile to a CLI
//   await api.restart();                       // kube-apiserver only; etcd keeps the data
//   await api.stop();                          // kills both, removes the temp dir
//
// Binaries come from `benches/peers/prepare.sh kube-apiserver etcd` (Go modules pinned in
// benches/peers/go.mod, the reference release, output in .cache/peers/bin or $KUBENODE_PEERS_BIN);
// `{ release: '1.36.3' }` starts an older release kept buildable there (prepare.sh --release). The first build on a fresh machine downloads
// the module graph and compiles kube-apiserver: expect 5–15 minutes on 2 cores; later runs reuse
// the binaries (seconds). Everything listens on loopback ports picked at random; certificates
// and the bearer token are generated per instance with openssl. Set KUBENODE_APISERVER_LOGS=1
// to keep the temp dir (with etcd.log and kube-apiserver.log) after stop().
import { type ChildProcess, execFileSync, spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { closeSync, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { KubeConfig } from '@kubernetes/client-node';
import { forgetProcess, killGroup, recordProcess } from './fixture-procs.js';

const repo = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');

export interface ApiServerOptions {
  /** `--service-cluster-ip-range` (default `10.96.0.0/28`: 14 usable addresses). */
  serviceClusterIPRange?: string;
  /** Extra kube-apiserver flags. */
  extraArgs?: string[];
  /** `--authorization-mode` (default `AlwaysAllow`; `RBAC` to test roles, the admin token is in system:masters). */
  authorizationMode?: string;
  /** Time allowed for /readyz after start (default 120 s). */
  readyTimeoutMs?: number;
  /**
   * Kubernetes release to run, e.g. `1.36.3` (default: the reference release of
   * benches/peers/go.mod). An older one needs its module files (benches/peers/update-deps.sh).
   */
  release?: string;
  /** Where the instance's temp dir (etcd's data, the logs) is made (default: the OS temp dir). */
  parentDir?: string;
}

export interface ApiServer {
  kubeConfig: KubeConfig;
  /** A kubeconfig file for the same cluster (for CLIs). */
  kubeconfigFile: string;
  url: string;
  token: string;
  caFile: string;
  dir: string;
  /** Stops kube-apiserver and etcd and removes the temp dir. Idempotent. */
  stop(): Promise<void>;
  /** Restarts kube-apiserver on the same port (etcd, and so all objects, stay). */
  restart(): Promise<void>;
  /** Kills kube-apiserver without restarting it (for outage tests); `restart()` brings it back. */
  kill(): Promise<void>;
  /** Process IDs of the running kube-apiserver and etcd (for CPU accounting in benches). */
  pids(): { apiserver?: number; etcd?: number };
}

/** Builds or reuses the binaries of `release` (default: the reference one); returns their paths. */
export function ensureBinaries(release?: string): { kubeApiserver: string; etcd: string } {
  const args = [...(release ? ['--release', release] : []), 'kube-apiserver', 'etcd'];
  const r = spawnSync('bash', [join(repo, 'benches/peers/prepare.sh'), ...args], {
    cwd: repo,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
    timeout: 60 * 60 * 1000,
  });
  if (r.status !== 0) {
    throw new Error(
      `benches/peers/prepare.sh ${args.join(' ')} failed (status ${r.status}, ${r.error ?? ''})`,
    );
  }
  const lines = r.stdout.trim().split('\n');
  const find = (n: string) => {
    const p = lines.find((l) => l.endsWith(`/${n}`));
    if (!p) throw new Error(`prepare.sh did not report a path for ${n}: ${r.stdout}`);
    return p;
  };
  return { kubeApiserver: find('kube-apiserver'), etcd: find('etcd') };
}

async function freePort(): Promise<number> {
  return new Promise((res, rej) => {
    const s = createServer();
    s.unref();
    s.on('error', rej);
    s.listen(0, '127.0.0.1', () => {
      const a = s.address();
      s.close(() => (typeof a === 'object' && a ? res(a.port) : rej(new Error('no port'))));
    });
  });
}

function get(
  url: string,
  opts: { ca?: Buffer; token?: string } = {},
): Promise<{ status: number; body: string }> {
  return new Promise((res, rej) => {
    const u = new URL(url);
    const req = (u.protocol === 'https:' ? httpsRequest : httpRequest)(
      u,
      {
        method: 'GET',
        timeout: 2000,
        ...(opts.ca ? { ca: opts.ca } : {}),
        headers: opts.token ? { Authorization: `Bearer ${opts.token}` } : {},
      },
      (r) => {
        let body = '';
        r.setEncoding('utf8');
        r.on('data', (c) => {
          body += c;
        });
        r.on('end', () => res({ status: r.statusCode ?? 0, body }));
      },
    );
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', rej);
    req.end();
  });
}

function tail(file: string, lines = 30): string {
  try {
    return readFileSync(file, 'utf8').trim().split('\n').slice(-lines).join('\n');
  } catch {
    return '(no log)';
  }
}

async function waitFor(
  what: string,
  child: ChildProcess,
  log: string,
  timeoutMs: number,
  probe: () => Promise<boolean>,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null) {
      throw new Error(
        `${what} exited (${child.exitCode ?? child.signalCode}) before it was ready:\n${tail(log)}`,
      );
    }
    if (await probe().catch(() => false)) return;
    if (Date.now() > deadline) throw new Error(`${what} not ready after ${timeoutMs} ms:\n${tail(log)}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** Stops a server and its whole process group (it was spawned detached, as group leader). */
async function killChild(c: ChildProcess | undefined): Promise<void> {
  if (!c?.pid) return;
  const pid = c.pid;
  if (c.exitCode === null && c.signalCode === null) {
    const exited = new Promise<void>((r) => c.once('exit', () => r()));
    killGroup(pid, 'SIGTERM');
    const t = setTimeout(() => killGroup(pid, 'SIGKILL'), 5000);
    await exited;
    clearTimeout(t);
  }
  forgetProcess(pid);
}

const live = new Set<ChildProcess>();
let exitHook = false;
/**
 * Never leave servers behind: an `exit` hook kills them when the test process ends without
 * calling stop(), and a pidfile lets the vitest globalSetup sweep them when it dies by a signal.
 */
function track(c: ChildProcess, dir: string): void {
  const pid = c.pid;
  if (pid === undefined) return; // spawn failed: the 'error'/'exit' path reports it
  live.add(c);
  recordProcess(pid, dir);
  c.once('exit', () => live.delete(c));
  if (!exitHook) {
    exitHook = true;
    process.once('exit', () => {
      for (const p of live) {
        if (p.pid === undefined) continue;
        killGroup(p.pid, 'SIGKILL');
        forgetProcess(p.pid);
      }
    });
  }
}

/**
 * Starts etcd and kube-apiserver. The ports are picked free a moment before the servers bind
 * them, so another process (a parallel test's daemon, a client's ephemeral port) can take one
 * in between: a start that fails on a taken port is tried again on new ports.
 */
export async function startApiServer(options: ApiServerOptions = {}): Promise<ApiServer> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await startApiServerOnce(options);
    } catch (e) {
      if (attempt >= 3 || !/address already in use/.test((e as Error).message)) throw e;
    }
  }
}

async function startApiServerOnce(options: ApiServerOptions): Promise<ApiServer> {
  const bins = ensureBinaries(options.release);
  const dir = mkdtempSync(join(options.parentDir ?? tmpdir(), 'kubenode-apiserver-'));
  const token = randomBytes(16).toString('hex');
  const caFile = join(dir, 'tls.crt');
  const keyFile = join(dir, 'tls.key');
  let ca: Buffer;
  try {
    execFileSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'rsa:2048',
        '-nodes',
        '-days',
        '2',
        '-subj',
        '/CN=127.0.0.1',
        '-addext',
        'subjectAltName=IP:127.0.0.1,DNS:localhost',
        '-keyout',
        keyFile,
        '-out',
        caFile,
      ],
      { stdio: 'ignore' },
    );
    execFileSync('openssl', ['genrsa', '-out', join(dir, 'sa.key'), '2048'], { stdio: 'ignore' });
    execFileSync('openssl', ['rsa', '-in', join(dir, 'sa.key'), '-pubout', '-out', join(dir, 'sa.pub')], {
      stdio: 'ignore',
    });
    writeFileSync(join(dir, 'tokens.csv'), `${token},admin,admin-uid,"system:masters"\n`);
    mkdirSync(join(dir, 'certs'));
    ca = readFileSync(caFile);
  } catch (e) {
    rmSync(dir, { recursive: true, force: true });
    throw new Error(`could not prepare the test API server's certificates: ${(e as Error).message}`);
  }

  const [clientPort, peerPort, securePort] = [await freePort(), await freePort(), await freePort()];
  const etcdUrl = `http://127.0.0.1:${clientPort}`;
  const peerUrl = `http://127.0.0.1:${peerPort}`;
  const url = `https://127.0.0.1:${securePort}`;

  let etcd: ChildProcess | undefined;
  let apiserver: ChildProcess | undefined;
  let stopped = false;

  const etcdLog = join(dir, 'etcd.log');
  const apiLog = join(dir, 'kube-apiserver.log');

  const startEtcd = async () => {
    const out = openSync(etcdLog, 'a');
    etcd = spawn(
      bins.etcd,
      [
        `--data-dir=${join(dir, 'etcd')}`,
        `--listen-client-urls=${etcdUrl}`,
        `--advertise-client-urls=${etcdUrl}`,
        `--listen-peer-urls=${peerUrl}`,
        `--initial-advertise-peer-urls=${peerUrl}`,
        `--initial-cluster=default=${peerUrl}`,
        '--listen-metrics-urls=',
        '--unsafe-no-fsync',
      ],
      { stdio: ['ignore', out, out], detached: true },
    );
    closeSync(out); // the child has its own copy
    track(etcd, dir);
    const e = etcd;
    await waitFor('etcd', e, etcdLog, 30_000, async () => {
      const r = await get(`${etcdUrl}/health`);
      return r.status === 200 && r.body.includes('"true"');
    });
  };

  const startApi = async () => {
    const out = openSync(apiLog, 'a');
    apiserver = spawn(
      bins.kubeApiserver,
      [
        `--etcd-servers=${etcdUrl}`,
        '--bind-address=127.0.0.1',
        `--secure-port=${securePort}`,
        '--advertise-address=127.0.0.1',
        '--endpoint-reconciler-type=none',
        `--tls-cert-file=${caFile}`,
        `--tls-private-key-file=${keyFile}`,
        `--cert-dir=${join(dir, 'certs')}`,
        `--token-auth-file=${join(dir, 'tokens.csv')}`,
        `--authorization-mode=${options.authorizationMode ?? 'AlwaysAllow'}`,
        '--anonymous-auth=false',
        '--service-account-issuer=https://kubernetes.default.svc',
        `--service-account-key-file=${join(dir, 'sa.pub')}`,
        `--service-account-signing-key-file=${join(dir, 'sa.key')}`,
        `--service-cluster-ip-range=${options.serviceClusterIPRange ?? '10.96.0.0/28'}`,
        '--enable-priority-and-fairness=false',
        '--disable-admission-plugins=ServiceAccount',
        ...(options.extraArgs ?? []),
      ],
      { stdio: ['ignore', out, out], detached: true },
    );
    closeSync(out);
    track(apiserver, dir);
    const a = apiserver;
    await waitFor('kube-apiserver', a, apiLog, options.readyTimeoutMs ?? 120_000, async () => {
      const r = await get(`${url}/readyz`, { ca, token });
      return r.status === 200 && r.body.trim() === 'ok';
    });
  };

  const stop = async () => {
    if (stopped) return;
    stopped = true;
    await killChild(apiserver);
    await killChild(etcd);
    if (!process.env.KUBENODE_APISERVER_LOGS) rmSync(dir, { recursive: true, force: true });
  };

  try {
    await startEtcd();
    await startApi();
  } catch (e) {
    const msg = (e as Error).message;
    await stop();
    throw new Error(`could not start the test API server: ${msg}`);
  }

  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromOptions({
    clusters: [{ name: 'test', server: url, caFile }],
    users: [{ name: 'admin', token }],
    contexts: [{ name: 'test', cluster: 'test', user: 'admin' }],
    currentContext: 'test',
  });
  const kubeconfigFile = join(dir, 'kubeconfig');
  writeFileSync(kubeconfigFile, kubeConfig.exportConfig());

  return {
    kubeConfig,
    kubeconfigFile,
    url,
    token,
    caFile,
    dir,
    stop,
    kill: () => killChild(apiserver),
    pids: () => ({ apiserver: apiserver?.pid, etcd: etcd?.pid }),
    restart: async () => {
      await killChild(apiserver);
      await startApi();
    },
  };
}
