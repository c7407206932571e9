// A daemon (`kubenode conntrack reconcile` or `servicecidr-controller`) as a child process
// with JSON logs and its health/metrics listener on a loopback port.
import { type ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';

const main = join(import.meta.dirname, '..', '..', 'ts', 'cli', 'main.ts');

export type LogLine = Record<string, unknown>;

export interface Daemon {
  child: ChildProcess;
  /**
   * `http://127.0.0.1:PORT` of the one health + metrics listener, from its log line; port 0
   * (nothing answers) until the daemon has logged it.
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

/**
 * How the daemon runs: by default the sources under this test's Node through tsx; an installed
 * CLI (`main`, a dist/cli/main.js) under another Node binary and user, as the image runs it.
 */
export interface DaemonRuntime {
  node?: string;
  main?: string;
  uid?: number;
  gid?: number;
}

/**
 * The listener and log flags every test daemon gets (replacing a manifest's own listener flags,
 * see `LISTENER_FLAGS`): one loopback listener on a free port, JSON logs.
 */
function listenerArgs(addr: string): string[] {
  return [`--health-addr=${addr}`, `--metrics-addr=${addr}`, '--log-format=json'];
}

/** A manifest's arguments that `listenerArgs` replaces (listeners and log format). */
export const LISTENER_FLAGS =
  /^--(health-addr|metrics-addr|log-format|healthz-bind-address|metrics-bind-address|secure-port|bind-address|logging-format)=/;

export function startDaemon(args: string[], runtime: DaemonRuntime = {}): Daemon {
  // Port 0: the daemon binds a free port and logs it; a random fixed port can be taken.
  const addr = '127.0.0.1:0';
  // tsx as a loader in the one process: the tsx CLI's signal relay SIGKILLs a child that does not
  // acknowledge SIGTERM within 30 ms, which a loaded machine misses.
  const entry = runtime.main ? [runtime.main] : ['--import', 'tsx', main];
  const child = spawn(runtime.node ?? process.execPath, [...entry, ...args, ...listenerArgs(addr)], {
    stdio: ['ignore', 'pipe', 'pipe'],
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

/** GET → status and body; status 0 when nothing listens. */
export async function httpGet(url: string): Promise<{ status: number; body: string }> {
  try {
    const r = await fetch(url, { signal: AbortSignal.timeout(2000) });
    return { status: r.status, body: await r.text() };
  } catch {
    return { status: 0, body: '' };
  }
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
