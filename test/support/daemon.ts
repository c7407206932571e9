// A `kubenode` daemon as a child process, with its output collected and its exit observable.
// It runs as `node --import tsx` rather than under the tsx launcher: the launcher relays
// SIGTERM and SIGKILLs a child that has not acknowledged it within 30 ms, which on a busy
// machine turns a clean stop into exit 143.
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { join } from 'node:path';

const repo = join(import.meta.dirname, '..', '..');
const main = join(repo, 'ts', 'cli', 'main.ts');
const node = [process.execPath, '--import', 'tsx', main];

export interface Daemon {
  child: ChildProcess;
  readonly stdout: string;
  readonly stderr: string;
  /** Resolves with the exit code (or the signal name) once the process is gone. */
  exited: Promise<number | string | null>;
  /** True until the process exits. */
  readonly alive: boolean;
  /** Waits until `re` matches stdout+stderr; rejects if the process exits first. */
  waitOutput(re: RegExp, timeoutMs?: number): Promise<void>;
  /** SIGTERM, then the exit code. */
  stop(): Promise<number | string | null>;
}

export function startDaemon(args: string[], env: NodeJS.ProcessEnv = process.env): Daemon {
  const child = spawn(node[0] as string, [...node.slice(1), ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env,
    cwd: repo,
  });
  let stdout = '';
  let stderr = '';
  let alive = true;
  child.stdout?.on('data', (c) => {
    stdout += c;
  });
  child.stderr?.on('data', (c) => {
    stderr += c;
  });
  const exited = new Promise<number | string | null>((r) =>
    child.once('exit', (code, sig) => {
      alive = false;
      r(code ?? sig);
    }),
  );
  return {
    child,
    exited,
    get stdout() {
      return stdout;
    },
    get stderr() {
      return stderr;
    },
    get alive() {
      return alive;
    },
    async waitOutput(re, timeoutMs = 60_000) {
      const deadline = Date.now() + timeoutMs;
      while (!re.test(stdout + stderr)) {
        if (!alive) throw new Error(`exited before ${re}: ${stdout}${stderr}`);
        if (Date.now() > deadline) throw new Error(`timed out waiting for ${re}: ${stdout}${stderr}`);
        await new Promise((r) => setTimeout(r, 100));
      }
    },
    async stop() {
      if (alive) child.kill('SIGTERM');
      return exited;
    },
  };
}

/** Runs a daemon that is expected to exit by itself; a minute is "never" (status null). */
export function runToExit(args: string[], env: NodeJS.ProcessEnv): { status: number | null; stderr: string } {
  const r = spawnSync(node[0] as string, [...node.slice(1), ...args], {
    encoding: 'utf8',
    env,
    timeout: 60_000,
    cwd: repo,
  });
  return { status: r.status, stderr: r.stderr };
}

/** What a daemon says when it has no cluster at all. */
export const NOT_CONFIGURED = /no --kubeconfig flag, KUBECONFIG is not set, and not running in a cluster/;
