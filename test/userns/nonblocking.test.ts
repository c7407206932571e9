// The synchronous calls made on the JS thread must not wait for a running task, which holds
// the manager for its whole run (each new pod is a durable write with fsyncs).
import { execFileSync } from 'node:child_process';
import { constants, mkdirSync, mkdtempSync, openSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { userns } from '../../ts/index.js';
import { PodCalls } from '../../ts/userns/calls.js';

const L = 65536;
const N = 3000;
const dirs: string[] = [];
const cores: PodCalls['core'][] = [];
afterEach(() => {
  for (const c of cores.splice(0)) c.close();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function podsDir(): string {
  const d = mkdtempSync(path.join(tmpdir(), 'kubenode-userns-'));
  dirs.push(d);
  const pods = path.join(d, 'pods');
  mkdirSync(pods);
  return pods;
}

async function openCalls(dir: string) {
  const calls = new PodCalls();
  const core = calls.core;
  cores.push(core);
  const o = await core.open({ podsDir: dir, idsPerPod: L, firstId: L, length: L * (N + 10), maxPods: 110 });
  expect(o.error ?? null).toBeNull();
  return calls;
}

const openCore = async (dir: string) => (await openCalls(dir)).core;

/** Busy-waits (on the JS thread, as an embedder's sync code would) until the batch has begun. */
function waitForFirstPod(dir: string) {
  const deadline = Date.now() + 10_000;
  while (readdirSync(dir).filter((n) => n.startsWith('p')).length === 0) {
    if (Date.now() > deadline) throw new Error('the batch never started');
  }
}

const podCount = (dir: string) => readdirSync(dir).filter((n) => n.startsWith('p')).length;

describe('UsernsCore from the JS thread while a task runs', () => {
  it('allocations() and isOpen answer at once, from the last finished call', async () => {
    const dir = podsDir();
    const calls = await openCalls(dir);
    const core = calls.core;
    expect((await calls.run('first', false)).error ?? null).toBeNull();
    const batch = core.getOrCreateMany(Array.from({ length: N }, (_, i) => `p${i}`));
    waitForFirstPod(dir);
    const allocs = core.allocations();
    const open = core.isOpen;
    // Had either call waited for the task, every pod directory would exist by now.
    const seen = podCount(dir);
    expect(seen).toBeLessThan(N);
    expect(open).toBe(true);
    expect(allocs.map((a) => a.pod)).toEqual(['first']);
    const outcomes = await batch;
    expect(outcomes.filter((o) => o.error)).toEqual([]);
    const after = core.allocations();
    expect(after).toHaveLength(N + 1);
    expect(after[0]).toMatchObject({ pod: 'first', length: L });
  });

  it('close() returns at once, drops the manager when the running task ends, and wins over later calls', async () => {
    const dir = podsDir();
    const calls = await openCalls(dir);
    const core = calls.core;
    const batch = core.getOrCreateMany(Array.from({ length: N }, (_, i) => `p${i}`));
    waitForFirstPod(dir);
    core.close();
    expect(podCount(dir)).toBeLessThan(N);
    expect(core.isOpen).toBe(false);
    expect(core.allocations()).toEqual([]);
    const late = calls.run('late', false);
    // The running batch completes; the call issued after close() sees a closed manager.
    expect((await batch).filter((o) => o.error)).toEqual([]);
    expect((await late).error?.message).toBe('the user namespace manager is not open');
    // The lock is released: another manager opens the same directory.
    const again = await openCore(dir);
    expect(again.allocations()).toHaveLength(N);
  });

  it('verifyMapping refuses a FIFO as the pod file without opening it, so nothing blocks', async () => {
    const dir = podsDir();
    mkdirSync(path.join(dir, 'fifo-pod'), { recursive: true });
    const fifo = path.join(dir, 'fifo-pod', 'userns');
    // Opening a FIFO for reading blocks until a writer comes, on the JS thread or on a worker
    // (which then never returns and keeps the process from exiting).
    execFileSync('mkfifo', [fifo]);
    await expect(userns.verifyMapping(dir, 'fifo-pod')).rejects.toMatchObject({
      kind: 'io',
      message: `read ${fifo}: not a regular file (named pipe), refusing to open it`,
    });
    // No reader ever opened it: a non-blocking writer finds none.
    expect(() => openSync(fifo, constants.O_WRONLY | constants.O_NONBLOCK)).toThrow(/ENXIO/);
  });
});
