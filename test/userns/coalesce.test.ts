// Per-pod calls made concurrently are coalesced into batches on the manager's thread; each
// promise still settles with its own outcome, after its own file is written, in call order.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { userns } from '../../ts/index.js';
import { PodCalls } from '../../ts/userns/calls.js';
import { podsDir as tempPodsDir } from './dirs.js';

const L = 65536;
const root = path.resolve(import.meta.dirname, '../..');
const managers: userns.UserNsManager[] = [];
afterEach(() => {
  for (const m of managers.splice(0)) m.close();
});

const podsDir = () => tempPodsDir('kubenode-userns-coalesce-');

async function make(dir: string, maxPods = 110) {
  const m = await userns.UserNsManager.create({
    podsDir: dir,
    maxPods,
    mappings: { firstId: L, length: L * 2000 },
    seed: 5,
  });
  managers.push(m);
  return m;
}

const pod = (uid: string) => ({ metadata: { uid }, spec: { hostUsers: false } });
const uids = (n: number, p = 'pod') => Array.from({ length: n }, (_, i) => `${p}-${i}`);

/** Counts the native crossings of per-pod calls (a spy on the real core: calls go through). */
function countSubmits(calls: PodCalls): { submits: number; calls: number } {
  const seen = { submits: 0, calls: 0 };
  const core = calls.core;
  const submit = core.submit.bind(core);
  core.submit = (c) => {
    seen.submits++;
    seen.calls += c.length;
    return submit(c);
  };
  return seen;
}

describe('coalesced per-pod calls', () => {
  it('110 concurrent getOrCreate calls cross once, each gets its own disjoint range and file', async () => {
    const dir = podsDir();
    const calls = new PodCalls();
    const seen = countSubmits(calls);
    const o = await calls.core.open({
      podsDir: dir,
      idsPerPod: L,
      firstId: L,
      length: L * 200,
      maxPods: 110,
    });
    expect(o.error ?? null).toBeNull();
    try {
      const names = uids(110);
      const files: boolean[] = [];
      const outcomes = await Promise.all(
        names.map((u) =>
          calls.run(u, false).then((x) => {
            // Settled after its own durable write: the file is there with its range.
            files.push(
              readFileSync(path.join(dir, u, 'userns'), 'utf8').includes(
                `"hostId":${x.namespace?.uidMappings[0]?.hostId}`,
              ),
            );
            return x;
          }),
        ),
      );
      expect(seen).toEqual({ submits: 1, calls: 110 });
      expect(outcomes.filter((x) => x.error)).toEqual([]);
      expect(files).toEqual(names.map(() => true));
      expect(new Set(outcomes.map((x) => x.namespace?.uidMappings[0]?.hostId)).size).toBe(110);
      expect(calls.core.allocations()).toHaveLength(110);
      calls.core.close();
      // The same through the manager's public API (handler check and all).
      const m = await make(dir);
      const again = await Promise.all(names.map((u) => m.getOrCreateUserNamespaceMappings(pod(u))));
      expect(again.map((x) => x?.uids[0]?.hostId)).toEqual(
        outcomes.map((x) => x.namespace?.uidMappings[0]?.hostId),
      );
    } finally {
      calls.core.close();
    }
  });

  it('calls made while a batch runs join the next one, in call order', async () => {
    const dir = podsDir();
    const calls = new PodCalls();
    const seen = countSubmits(calls);
    await calls.core.open({ podsDir: dir, idsPerPod: L, firstId: L, length: L * 200, maxPods: 110 });
    try {
      const order: string[] = [];
      const first = calls.run('a', false).then(() => order.push('a'));
      // Next turn: the first batch is on the manager's thread (or done).
      await new Promise((r) => setImmediate(r));
      const rest = ['b', 'c', 'd'].map((u) => calls.run(u, false).then(() => order.push(u)));
      await Promise.all([first, ...rest]);
      expect(order).toEqual(['a', 'b', 'c', 'd']);
      expect(seen).toEqual({ submits: 2, calls: 4 });
    } finally {
      calls.core.close();
    }
  });

  it('interleaved releases behave as the same calls one after the other', async () => {
    const dir = podsDir();
    const m = await make(dir);
    const held = uids(20, 'held');
    await Promise.all(held.map((u) => m.getOrCreateUserNamespaceMappings(pod(u))));
    // One turn: create x, release it, create it again; release y before it exists; release
    // every other held pod while new pods are created between.
    const ops: Array<Promise<unknown>> = [];
    ops.push(m.getOrCreateUserNamespaceMappings(pod('x')));
    ops.push(m.release('x'));
    ops.push(m.release('y'));
    ops.push(m.getOrCreateUserNamespaceMappings(pod('y')));
    for (const [i, u] of held.entries()) {
      if (i % 2 === 0) ops.push(m.release(u));
      ops.push(m.getOrCreateUserNamespaceMappings(pod(`new-${i}`)));
    }
    ops.push(m.release('x'));
    const settled = await Promise.allSettled(ops);
    expect(settled.filter((s) => s.status === 'rejected')).toEqual([]);
    const want = [...held.filter((_, i) => i % 2 === 1), ...held.map((_, i) => `new-${i}`), 'y'].sort();
    expect(m.allocations().map((a) => a.pod)).toEqual(want);
    expect(existsSync(path.join(dir, 'x', 'userns'))).toBe(false);
    expect(
      readdirSync(dir)
        .filter((d) => existsSync(path.join(dir, d, 'userns')))
        .sort(),
    ).toEqual(want);
    // The state on disk is what a fresh manager restores.
    m.close();
    const again = await make(dir);
    expect(again.allocations().map((a) => a.pod)).toEqual(want);
  });

  it('a failing pod fails alone; its neighbours in the batch succeed', async () => {
    const dir = podsDir();
    const m = await make(dir);
    // A regular file where the pod directory should be: the write fails for that pod only.
    writeFileSync(path.join(dir, 'blocked'), 'not a directory');
    const names = ['ok-1', '../escape', 'ok-2', 'blocked', '', 'ok-3'];
    const settled = await Promise.allSettled(names.map((u) => m.getOrCreateUserNamespaceMappings(pod(u))));
    expect(settled.map((s) => s.status)).toEqual([
      'fulfilled',
      'rejected',
      'fulfilled',
      'rejected',
      'rejected',
      'fulfilled',
    ]);
    expect((settled[1] as PromiseRejectedResult).reason).toMatchObject({ kind: 'invalid-pod-uid' });
    expect((settled[3] as PromiseRejectedResult).reason).toBeInstanceOf(userns.UsernsError);
    expect((settled[4] as PromiseRejectedResult).reason).toMatchObject({ kind: 'invalid-pod-uid' });
    expect(m.allocations().map((a) => a.pod)).toEqual(['ok-1', 'ok-2', 'ok-3']);
  });

  it('calls after close() fail as not open, each with its own error', async () => {
    const m = await make(podsDir());
    await m.getOrCreateUserNamespaceMappings(pod('a'));
    const late = [m.getOrCreateUserNamespaceMappings(pod('b')), m.release('a')];
    m.close();
    const settled = await Promise.allSettled(late);
    for (const s of settled) {
      expect(s).toMatchObject({
        status: 'rejected',
        reason: { message: 'the user namespace manager is not open' },
      });
    }
  });
});

describe('a slow runtime handler lookup', () => {
  it("holds up only its own pod's later calls, not other pods' calls", async () => {
    const dir = podsDir();
    let answer: (ok: boolean) => void = () => {};
    const slow = new Promise<boolean>((r) => {
      answer = r;
    });
    const m = await userns.UserNsManager.create({
      podsDir: dir,
      maxPods: 10,
      mappings: { firstId: L, length: L * 20 },
      runtimeHandlerSupportsUserns: (h) => (h === 'slow' ? slow : true),
    });
    managers.push(m);
    await m.getOrCreateUserNamespaceMappings(pod('c'));
    const order: string[] = [];
    const note = <T>(name: string, p: Promise<T>) =>
      p.then((v) => {
        order.push(name);
        return v;
      });
    const a = note('a create', m.getOrCreateUserNamespaceMappings(pod('a'), 'slow'));
    const aRelease = note('a release', m.release('a'));
    const b = note('b create', m.getOrCreateUserNamespaceMappings(pod('b')));
    const c = note('c release', m.release('c'));
    // The other pods' calls settle while pod a still waits for its handler.
    const waited = await Promise.race([
      Promise.all([b, c]).then(() => 'settled'),
      new Promise((r) => setTimeout(r, 3000, 'held up')),
    ]);
    if (waited !== 'settled') answer(true);
    expect(waited).toBe('settled');
    expect(order).toEqual(['b create', 'c release']);
    expect(existsSync(path.join(dir, 'b', 'userns'))).toBe(true);
    expect(existsSync(path.join(dir, 'c', 'userns'))).toBe(false);
    // Pod a's release still runs after its own create.
    answer(true);
    expect((await a)?.mode).toBe('POD');
    await aRelease;
    expect(order).toEqual(['b create', 'c release', 'a create', 'a release']);
    expect(m.allocations().map((x) => x.pod)).toEqual(['b']);
    expect(existsSync(path.join(dir, 'a', 'userns'))).toBe(false);
  });

  it("a pod's failed handler check rejects its call; its later calls and other pods still run", async () => {
    const dir = podsDir();
    let answer: (ok: boolean) => void = () => {};
    const slow = new Promise<boolean>((r) => {
      answer = r;
    });
    const m = await userns.UserNsManager.create({
      podsDir: dir,
      maxPods: 10,
      mappings: { firstId: L, length: L * 20 },
      runtimeHandlerSupportsUserns: (h) => (h === 'slow' ? slow : true),
    });
    managers.push(m);
    const a = m.getOrCreateUserNamespaceMappings(pod('a'), 'slow');
    const a2 = m.getOrCreateUserNamespaceMappings(pod('a'));
    const b = await Promise.race([
      m.getOrCreateUserNamespaceMappings(pod('b')).then((ns) => ns?.mode),
      new Promise((r) => setTimeout(r, 3000, 'held up')),
    ]);
    answer(false);
    expect(b).toBe('POD');
    await expect(a).rejects.toThrow('RuntimeClass handler "slow" does not support user namespaces');
    expect((await a2)?.mode).toBe('POD');
    expect(
      m
        .allocations()
        .map((x) => x.pod)
        .sort(),
    ).toEqual(['a', 'b']);
  });
});

/** Runs an ESM script in a child Node with the package's TS sources (tsx). */
function child(script: string, dir: string) {
  const file = path.join(path.dirname(dir), 'child.mts');
  writeFileSync(file, script);
  return file;
}

// `node --import tsx` rather than the tsx wrapper, so that a signal reaches the process itself.
const node = (file: string) => [process.execPath, ['--import', 'tsx', file], { cwd: root }] as const;
const entry = path.join(root, 'ts', 'index.ts');

describe('the process around a manager', () => {
  it('an idle manager, never closed, lets the process exit; a pending call keeps it until it settles', () => {
    const dir = podsDir();
    const file = child(
      `import { userns } from ${JSON.stringify(entry)};
const m = await userns.UserNsManager.create({ podsDir: ${JSON.stringify(dir)}, mappings: { firstId: ${L}, length: ${L * 200} } });
const ns = await m.getOrCreateUserNamespaceMappings({ metadata: { uid: 'a' }, spec: { hostUsers: false } });
console.log('a', ns.uids[0].hostId);
// Not awaited, nothing else pending: only the call itself may keep the process alive.
let settled = 0;
m.getOrCreateUserNamespaceMappings({ metadata: { uid: 'b' }, spec: { hostUsers: false } }).then((x) => {
  settled = performance.now();
  console.log('b', x.uids[0].hostId);
});
process.on('exit', () => console.log('exit after', Math.round(performance.now() - settled)));
`,
      dir,
    );
    // Killed (signal set) if the manager held the process open.
    const [cmd, args, opts] = node(file);
    const r = spawnSync(cmd, args, { ...opts, encoding: 'utf8', timeout: 60_000 });
    expect(r.stderr).toBe('');
    expect({ status: r.status, signal: r.signal }).toEqual({ status: 0, signal: null });
    const m = /^a \d+\nb \d+\nexit after (\d+)\n$/.exec(r.stdout);
    expect(m, r.stdout).not.toBeNull();
    // At once once nothing is pending (the manager's idle thread is no reason to stay).
    expect(Number(m?.[1])).toBeLessThan(1000);
    expect(existsSync(path.join(dir, 'b', 'userns'))).toBe(true);
  });

  it('SIGKILL during a batch: a fresh manager restores every settled pod, no overlap, no torn file', async () => {
    const dir = podsDir();
    const file = child(
      `import { userns } from ${JSON.stringify(entry)};
const m = await userns.UserNsManager.create({ podsDir: ${JSON.stringify(dir)}, maxPods: 400, mappings: { firstId: ${L}, length: ${L * 400} } });
process.stdout.write('S\\n');
for (let round = 0; ; round++) {
  const names = Array.from({ length: 110 }, (_, i) => 'r' + (round % 3) + '-' + i);
  await Promise.all(names.map((u) => {
    process.stdout.write('c ' + u + '\\n');
    return m.getOrCreateUserNamespaceMappings({ metadata: { uid: u }, spec: { hostUsers: false } })
      .then((ns) => process.stdout.write('C ' + u + ' ' + ns.uids[0].hostId + '\\n'));
  }));
  await Promise.all(names.filter((_, i) => i % 2 === 0).map((u) => {
    process.stdout.write('r ' + u + '\\n');
    return m.release(u).then(() => process.stdout.write('R ' + u + '\\n'));
  }));
}
`,
      dir,
    );
    for (let kill = 0; kill < 5; kill++) {
      const [cmd, args, opts] = node(file);
      const p = spawn(cmd, args, { ...opts, stdio: ['ignore', 'pipe', 'inherit'] });
      let out = '';
      p.stdout.on('data', (d: Buffer) => {
        out += d.toString();
      });
      // Kill at a moment that varies with the round, once pods are being created.
      await new Promise<void>((resolve) => {
        const check = () => {
          const creates = out.split('\n').filter((l) => l.startsWith('C ')).length;
          if (creates > 50 + kill * 97) {
            p.kill('SIGKILL');
            resolve();
          } else setTimeout(check, 1);
        };
        check();
      });
      await new Promise((r) => p.on('close', r));
      // Per pod, the last settled call (a range, or null once released); a call started and
      // not settled may or may not have reached the disk.
      const last = new Map<string, number | null>();
      for (const l of out.split('\n')) {
        const [op, u, h] = l.split(' ');
        if (op === 'C' && u) last.set(u, Number(h));
        if (op === 'R' && u) last.set(u, null);
        if ((op === 'r' || op === 'c') && u) last.delete(u);
      }
      const m = await make(dir, 400);
      const held = new Map(m.allocations().map((a) => [a.pod, a.hostId]));
      for (const [u, h] of last) {
        // A pod whose create settled last is on disk with the range the caller got; a release
        // that settled removed it.
        if (h === null) expect(held.has(u)).toBe(false);
        else expect(held.get(u)).toBe(h);
      }
      expect(new Set(held.values()).size).toBe(held.size);
      m.close();
      managers.pop();
    }
  }, 120_000);
});
