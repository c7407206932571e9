// Namespace paths that are not namespaces (a FIFO, a regular file, a device, a namespace of
// another kind) given to `Conntrack.open` and `applySysctls`: a typed error naming the path,
// quickly, without blocking the event loop or keeping the process alive. Each case runs in a
// child process so that a call that blocks shows up as a timeout, not a hung test runner.
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sysctl } from '../ts/index.js';
import { native } from '../ts/native.js';

const root = path.resolve(import.meta.dirname, '..');
let dir = '';
const files: Record<string, string> = {};

beforeAll(() => {
  if (process.getuid?.() !== 0) throw new Error('these tests need root (setns, namespace files)');
  dir = mkdtempSync(path.join(tmpdir(), `kn-ns-handles-${process.pid}-`));
  files.fifo = path.join(dir, 'fifo');
  execFileSync('mkfifo', [files.fifo]);
  files.regular = path.join(dir, 'regular');
  writeFileSync(files.regular, 'net\n');
  files.devnull = '/dev/null';
  files.uts = '/proc/self/ns/uts';
});
afterAll(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
});

interface Outcome {
  syncMs: number;
  totalMs: number;
  ticks: number;
  name?: string;
  code?: string;
  message?: string;
}

// Runs `call` (an expression over `m`, the package) in a fresh process: how long the call
// itself took to return, how long until it settled, and how often a 5 ms timer ticked.
function inChild(call: string): Outcome {
  const script = `
    const m = await import('./ts/index.ts');
    let ticks = 0;
    const timer = setInterval(() => { ticks++; }, 5);
    const t0 = performance.now();
    const p = ${call};
    const syncMs = performance.now() - t0;
    const out = await p.then(() => ({}), (e) => ({ name: e.name, code: e.code, message: e.message }));
    // Let the timer tick at least once more: the loop must be free after the call too.
    await new Promise((r) => setTimeout(r, 20));
    clearInterval(timer);
    console.log(JSON.stringify({ syncMs, totalMs: performance.now() - t0, ticks, ...out }));`;
  const r = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
    cwd: root,
    encoding: 'utf8',
    // Generous: starting tsx on a loaded machine takes seconds; a blocked call never ends.
    timeout: 40_000,
  });
  expect(r.signal, `blocked or kept alive (killed after 40 s): ${r.stderr}`).toBeNull();
  expect(r.status, r.stderr).toBe(0);
  return JSON.parse(r.stdout.trim().split('\n').at(-1) ?? '') as Outcome;
}

const cases = [
  ['a FIFO', 'fifo', /is not a namespace file/],
  ['a regular file', 'regular', /is not a namespace file/],
  ['/dev/null', 'devnull', /is not a namespace file/],
  ['a UTS namespace', 'uts', /is a uts namespace, not a net namespace/],
] as const;

const calls = [
  ['Conntrack.open', (p: string) => `m.conntrack.Conntrack.open({ netns: ${JSON.stringify(p)} })`],
  [
    'applySysctls',
    (p: string) =>
      `m.sysctl.applySysctls({ netnsPath: ${JSON.stringify(p)} }, { 'net.ipv4.ip_forward': '1' })`,
  ],
] as const;

describe('Conntrack.open', () => {
  it('does its namespace, setns and socket work in a native task, not on the JS thread', async () => {
    const pending = native.Conntrack.open('/proc/self/ns/net');
    expect(pending).toBeInstanceOf(Promise);
    const o = await pending;
    expect(o.error ?? null).toBeNull();
    expect(o.value).toBeInstanceOf(native.Conntrack);
    (o.value as InstanceType<typeof native.Conntrack>).close();
  });
});

describe('a netns path that is not a network namespace', () => {
  for (const [what, key, message] of cases) {
    for (const [op, call] of calls) {
      it(`${op} refuses ${what} without blocking`, () => {
        const p = files[key] as string;
        const o = inChild(call(p));
        expect(o).toMatchObject({ name: 'KubenodeTypeError', code: 'ERR_KUBENODE_INVALID_ARG' });
        expect(o.message).toContain(p);
        expect(o.message).toMatch(message);
        expect(o.syncMs).toBeLessThan(200);
        expect(o.totalMs).toBeLessThan(2_000);
        expect(o.ticks).toBeGreaterThan(0);
      }, 90_000);
    }
  }
});

describe('applySysctls target', () => {
  it('refuses both a pid and a netnsPath with the core message, before touching anything', async () => {
    const err = {
      name: 'KubenodeTypeError',
      code: 'ERR_KUBENODE_INVALID_ARG',
      message: 'target must be { pid } or namespace paths { netnsPath, ipcnsPath, utsnsPath }, not both',
    };
    const both = { pid: process.pid, netnsPath: '/proc/self/ns/net' };
    await expect(sysctl.applySysctls(both, { 'net.ipv4.ip_forward': '1' })).rejects.toMatchObject(err);
    await expect(
      sysctl.applySysctls({ pid: process.pid, utsnsPath: '/proc/self/ns/uts' }, { 'kernel.domainname': 'x' }),
    ).rejects.toMatchObject(err);
  });
});
