// A daemon (`kubenode conntrack reconcile` or `servicecidr-controller`) as a child process
// with JSON logs and its health/metrics listener on a loopback port.
import { type ChildProcess, spawn } from 'node:child_process';
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { createServer } from 'node:net';
import { join } from 'node:path';

const main = join(import.meta.dirname, '..', '..', 'ts', 'cli', 'main.ts');

export type LogLine = Record<string, unknown>;

export interface Daemon {
  child: ChildProcess;
  /**
   * `http://127.0.0.1:PORT` of the reconciler's one health + metrics listener (from its log
   * line; port 0, where nothing answers, until the daemon has logged it), or
   * `https://127.0.0.1:PORT` of the controller's secure port.
   */
  readonly base: string;
  /** stderr as written. */
  stderr(): string;
  /** stderr lines parsed as JSON (throws on a line that is not JSON). */
  logs(): LogLine[];
  exited: Promise<number | null>;
  /** SIGTERM, then the exit code. */
  stop(): Promise<number | null>;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A loopback port free a moment ago (the controller's --secure-port has no "pick one"). */
export function freePort(): Promise<number> {
  return new Promise((res, rej) => {
    const s = createServer();
    s.on('error', rej);
    s.listen(0, '127.0.0.1', () => {
      const a = s.address();
      s.close(() => (typeof a === 'object' && a ? res(a.port) : rej(new Error('no port'))));
    });
  });
}

/**
 * How the daemon runs: by default the sources under this test's Node through tsx; an installed
 * CLI (`main`, a dist/cli/main.js) under another Node binary and user, as the image runs it;
 * `wrap` runs it through a command first (`setpriv ...`).
 */
export interface DaemonRuntime {
  node?: string;
  main?: string;
  uid?: number;
  gid?: number;
  wrap?: string[];
  /** Node's own flags (V8's), before the CLI, and environment added to this process's. */
  nodeFlags?: string[];
  env?: Record<string, string>;
}

/** A manifest's arguments that `startDaemon` replaces (listeners and log format). */
export const LISTENER_FLAGS =
  /^--(health-addr|metrics-addr|log-format|healthz-bind-address|metrics-bind-address|secure-port|bind-address|logging-format)=/;

/** Starts the daemon with loopback listeners and JSON logs. */
export async function startDaemon(args: string[], runtime: DaemonRuntime = {}): Promise<Daemon> {
  // The reconciler on port 0: it binds a free port and logs it (one listener serves all when
  // both addresses are equal). The controller's secure port takes a port number.
  const controller = args[0] === 'servicecidr-controller';
  const addr = '127.0.0.1:0';
  const securePort = controller ? await freePort() : 0;
  const listener = controller
    ? ['--bind-address=127.0.0.1', `--secure-port=${securePort}`]
    : [`--healthz-bind-address=${addr}`, `--metrics-bind-address=${addr}`];
  // tsx as a loader in the one process: the tsx CLI's signal relay SIGKILLs a child that does not
  // acknowledge SIGTERM within 30 ms, which a loaded machine misses.
  const entry = runtime.main ? [runtime.main] : ['--import', 'tsx', main];
  const argv = [
    ...(runtime.wrap ?? []),
    runtime.node ?? process.execPath,
    ...(runtime.nodeFlags ?? []),
    ...entry,
    ...args,
    ...listener,
    '--logging-format=json',
  ];
  const child = spawn(argv[0] as string, argv.slice(1), {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, ...runtime.env },
    uid: runtime.uid,
    gid: runtime.gid,
  });
  let err = '';
  child.stderr?.on('data', (c) => {
    err += c;
  });
  child.stdout?.resume();
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  let base: string | undefined;
  return {
    child,
    get base() {
      if (controller) return `https://127.0.0.1:${securePort}`;
      base ??= /"msg":"Serving health and metrics".*?"addresses":\["([^"]+)"/.exec(err)?.[1];
      return `http://${base ?? addr}`;
    },
    stderr: () => err,
    logs: () =>
      err
        .split('\n')
        .filter((l) => l !== '')
        .map((l) => {
          try {
            return JSON.parse(l) as LogLine;
          } catch {
            throw new Error(`log line is not JSON: ${l}`);
          }
        }),
    exited,
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      const t = setTimeout(() => child.kill('SIGKILL'), 20_000);
      const code = await exited;
      clearTimeout(t);
      return code;
    },
  };
}

/**
 * GET → status and body; status 0 when nothing listens. HTTPS accepts the controller's
 * self-signed certificate; `token` goes in as a bearer token.
 */
export function httpGet(url: string, token?: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve) => {
    const request = url.startsWith('https:') ? httpsRequest : httpRequest;
    const req = request(
      url,
      {
        rejectUnauthorized: false,
        timeout: 2000,
        headers: token ? { Authorization: `Bearer ${token}` } : {},
      },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c) => {
          body += c;
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
        res.on('error', () => resolve({ status: 0, body: '' }));
      },
    );
    req.on('timeout', () => req.destroy());
    req.on('error', () => resolve({ status: 0, body: '' }));
    req.end();
  });
}

export async function waitFor<T>(
  what: string | (() => string),
  f: () => Promise<T | undefined | false> | T | undefined | false,
  timeoutMs = 30_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await f();
    if (v !== undefined && v !== false) return v as T;
    if (Date.now() > deadline)
      throw new Error(`timed out waiting for ${typeof what === 'function' ? what() : what}`);
    await sleep(100);
  }
}
