import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { KubenodeError, userns } from '../../ts/index.js';

const L = 65536;
const dirs: string[] = [];
const managers: userns.UserNsManager[] = [];
afterEach(() => {
  for (const m of managers.splice(0)) m.close();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function podsDir(): string {
  const d = mkdtempSync(path.join(tmpdir(), 'kubenode-userns-'));
  dirs.push(d);
  const pods = path.join(d, 'pods');
  mkdirSync(pods);
  return pods;
}

async function make(opts: Partial<userns.UserNsManagerOptions> & { podsDir: string }) {
  const m = await userns.UserNsManager.create({
    mappings: { firstId: L, length: L * 2000 },
    seed: 3,
    ...opts,
  });
  managers.push(m);
  return m;
}

const pod = (uid: string, hostUsers?: boolean | null) => ({ metadata: { uid }, spec: { hostUsers } });
// The example file of the spec (§7), byte for byte.
const SPEC_FILE =
  '{"uidMappings":[{"hostId":131072,"containerId":0,"length":65536}],"gidMappings":[{"hostId":131072,"containerId":0,"length":65536}]}';

describe('UserNsManager', () => {
  it('refuses a pods directory that does not exist, and creates nothing', async () => {
    const parent = path.dirname(podsDir());
    const missing = path.join(parent, 'nonexistent');
    const e = await userns.UserNsManager.create({
      podsDir: missing,
      mappings: { firstId: L, length: L * 2000 },
    }).then(
      () => null,
      (x: unknown) => x,
    );
    expect(e).toBeInstanceOf(userns.UsernsError);
    expect(e).toBeInstanceOf(KubenodeError);
    expect(e).toMatchObject({ code: 'ERR_KUBENODE_IO', kind: 'io' });
    expect((e as Error).message).toContain(`pods directory ${missing} does not exist`);
    expect(readdirSync(parent)).toEqual(['pods']);
  });

  it('reads the exact bytes the kubelet writes, and writes them', async () => {
    const dir = podsDir();
    mkdirSync(path.join(dir, 'kubelet-pod'), { recursive: true });
    writeFileSync(path.join(dir, 'kubelet-pod', 'userns'), SPEC_FILE);
    const m = await make({ podsDir: dir });
    expect(m.restored).toBe(1);
    expect(m.allocations()).toEqual([{ pod: 'kubelet-pod', hostId: 131072, length: L }]);
    const ns = await m.getOrCreateUserNamespaceMappings(pod('kubelet-pod', false));
    expect(ns).toEqual({
      mode: 'POD',
      uids: [{ hostId: 131072, containerId: 0, length: L }],
      gids: [{ hostId: 131072, containerId: 0, length: L }],
    });
    expect(userns.encodeFile(131072, L)).toBe(SPEC_FILE);
    const mine = await m.getOrCreateUserNamespaceMappings(pod('new-pod', false));
    const id = mine?.uids[0]?.hostId ?? -1;
    expect(readFileSync(path.join(dir, 'new-pod', 'userns'), 'utf8')).toBe(
      SPEC_FILE.replaceAll('131072', String(id)),
    );
  });

  it('follows every upstream branch of getOrCreate', async () => {
    const dir = podsDir();
    const m = await make({ podsDir: dir });
    const node = { mode: 'NODE', uids: [], gids: [] };
    expect(await m.getOrCreateUserNamespaceMappings(null)).toEqual(node);
    expect(await m.getOrCreateUserNamespaceMappings(pod('a'))).toEqual(node);
    expect(await m.getOrCreateUserNamespaceMappings(pod('a', true))).toEqual(node);
    expect(readdirSync(dir).filter((n) => !n.startsWith('.'))).toEqual([]);

    const off = await make({ podsDir: podsDir(), featureGateEnabled: false });
    expect(off.enabled).toBe(false);
    expect(await off.getOrCreateUserNamespaceMappings(pod('a'))).toBeNull();
    for (const h of [true, false]) {
      await expect(off.getOrCreateUserNamespaceMappings(pod('a', h))).rejects.toThrow(
        'the feature gate "UserNamespacesSupport" is disabled: can\'t set spec.HostUsers',
      );
    }
    await off.release('a');
    await off.cleanupOrphanedPodUsernsAllocations([], []);

    const noRt = await make({ podsDir: podsDir(), runtimeHandlerSupportsUserns: false });
    await expect(noRt.getOrCreateUserNamespaceMappings(pod('a', false))).rejects.toThrow(
      "can't set `spec.hostUsers: false`, runtime does not support user namespaces",
    );
    await expect(noRt.getOrCreateUserNamespaceMappings(pod('a', false), 'kata')).rejects.toThrow(
      'can\'t set `spec.hostUsers: false`, RuntimeClass handler "kata" does not support user namespaces',
    );
    const errRt = await make({
      podsDir: podsDir(),
      runtimeHandlerSupportsUserns: (h) => {
        if (h === 'error') throw new Error('unknown runtime');
        return h === 'runc';
      },
    });
    await expect(errRt.getOrCreateUserNamespaceMappings(pod('a', false), 'error')).rejects.toThrow(
      'can\'t set `spec.hostUsers: false`, RuntimeClass handler "error" does not support user namespaces: unknown runtime',
    );
    expect((await errRt.getOrCreateUserNamespaceMappings(pod('a', false), 'runc'))?.mode).toBe('POD');
    expect(errRt.allocations()).toHaveLength(1);
  });

  it('applies upstream configuration checks in order', async () => {
    const dir = podsDir();
    const err = (o: Partial<userns.UserNsManagerOptions>) =>
      userns.UserNsManager.create({ podsDir: dir, ...o }).then(
        () => 'created',
        (e: Error) => e.message,
      );
    expect(await err({ idsPerPod: 1000 })).toBe(
      'invalid configuration: userNamespaces.idsPerPod must not be less than 65536',
    );
    expect(await err({ idsPerPod: L + 1 })).toBe(
      'invalid configuration: userNamespaces.idsPerPod must be a multiple of 65536',
    );
    expect(await err({ idsPerPod: 2 ** 32 })).toBe(
      'invalid configuration: userNamespaces.idsPerPod must not be more than 4294967295',
    );
    expect(await err({ mappings: { firstId: L + 1, length: L * 200 } })).toBe(
      'kubelet user assigned ID 65537 is not a multiple of 65536',
    );
    expect(await err({ mappings: { firstId: 0, length: L * 200 } })).toBe(
      'kubelet user assigned ID 0 must be greater or equal to 65536',
    );
    expect(await err({ mappings: { firstId: L, length: L + 1 } })).toBe(
      'kubelet user assigned IDs length 65537 is not a multiple of 65536',
    );
    expect(await err({ mappings: { firstId: L, length: L }, maxPods: 2 })).toBe(
      'kubelet user assigned IDs are not enough to support 2 pods',
    );
    expect(await err({ idsPerPod: 3 * L, mappings: { firstId: 3 * L, length: 2 ** 32 - 3 * L } })).toBe(
      'kubelet user assigned IDs length 4294770688 is not a multiple of 196608',
    );
    await expect(userns.UserNsManager.create({ podsDir: dir, idsPerPod: 1.5 })).rejects.toBeInstanceOf(
      TypeError,
    );
  });

  it('refuses a bad or conflicting file at creation with upstream texts', async () => {
    const cases: Array<[string, string]> = [
      [SPEC_FILE.slice(0, 50), 'invalid user namespace mappings file: unexpected end of JSON input'],
      [
        '{"uidMappings":[{"hostId":-1}]}',
        'invalid user namespace mappings file: json: cannot unmarshal number -1 into Go struct field idMapping.uidMappings.hostId of type uint32',
      ],
      [SPEC_FILE.replace('"containerId":0', '"containerId":1'), 'GID and UID mapping should be identical'],
      [
        SPEC_FILE.replaceAll('"containerId":0', '"containerId":1'),
        'invalid user namespace configuration: UID 0 must be mapped',
      ],
      [SPEC_FILE.replaceAll('65536', '131072'), 'wrong user namespace length 131072'],
      [SPEC_FILE.replaceAll('131072', String(L * 5000)), `id ${L * 5000} is out of range`],
    ];
    for (const [content, want] of cases) {
      const dir = podsDir();
      mkdirSync(path.join(dir, 'p'), { recursive: true });
      writeFileSync(path.join(dir, 'p', 'userns'), content);
      const e = await make({ podsDir: dir }).catch((x: unknown) => x);
      expect(e).toBeInstanceOf(userns.UsernsError);
      expect((e as Error).message).toBe(
        `record pod mappings for existing pod "p": ${want}`.replace(
          ': GID',
          ': invalid user namespace configuration: GID',
        ),
      );
    }
    // Extra fields are ignored, as Go's decoder does.
    const dir = podsDir();
    mkdirSync(path.join(dir, 'p'), { recursive: true });
    writeFileSync(
      path.join(dir, 'p', 'userns'),
      SPEC_FILE.replace('{"uidMappings"', '{"note":{"x":[1]},"uidMappings"'),
    );
    expect((await make({ podsDir: dir })).allocations()).toEqual([{ pod: 'p', hostId: 131072, length: L }]);
    // Two files claiming one range.
    const two = podsDir();
    for (const p of ['a', 'b']) {
      mkdirSync(path.join(two, p), { recursive: true });
      writeFileSync(path.join(two, p, 'userns'), SPEC_FILE);
    }
    const e = await make({ podsDir: two }).catch((x: unknown) => x as userns.UsernsError);
    expect(e).toMatchObject({ kind: 'conflict', code: 'ERR_KUBENODE_CONFLICT' });
    expect((e as Error).message).toBe(
      'record pod mappings for existing pod "b": range picked for pod "b" already taken',
    );
  });

  it('exhausts at maxPods with upstream error and a release makes room', async () => {
    const dir = podsDir();
    const m = await make({ podsDir: dir, mappings: { firstId: L, length: 4 * L }, maxPods: 4 });
    const got = await Promise.all(
      ['a', 'b', 'c', 'd'].map((p) => m.getOrCreateUserNamespaceMappings(pod(p, false))),
    );
    expect(new Set(got.map((g) => g?.uids[0]?.hostId)).size).toBe(4);
    const e = await m.getOrCreateUserNamespaceMappings(pod('e', false)).catch((x: unknown) => x);
    expect(e).toMatchObject({ kind: 'exhausted' });
    expect((e as Error).message).toBe(
      'create user namespace: could not find an empty slot to allocate a user namespace',
    );
    await m.release('c');
    expect((await m.getOrCreateUserNamespaceMappings(pod('e', false)))?.uids[0]?.hostId).toBe(
      got[2]?.uids[0]?.hostId,
    );
  });

  it('never hands out one range twice under concurrent calls', async () => {
    const dir = podsDir();
    const m = await make({ podsDir: dir, mappings: { firstId: L, length: 300 * L }, maxPods: 300 });
    const res = await Promise.all(
      Array.from({ length: 300 }, (_, i) => m.getOrCreateUserNamespaceMappings(pod(`p${i % 250}`, false))),
    );
    const byPod = new Map<string, number>();
    res.forEach((r, i) => {
      const id = r?.uids[0]?.hostId ?? -1;
      const prev = byPod.get(`p${i % 250}`);
      if (prev !== undefined) expect(id).toBe(prev);
      byPod.set(`p${i % 250}`, id);
    });
    expect(new Set(byPod.values()).size).toBe(250);
    expect(m.allocations()).toHaveLength(250);
  });

  it('refuses a second manager on the same directory, also from another process', async () => {
    const dir = podsDir();
    const m = await make({ podsDir: dir });
    await expect(make({ podsDir: dir })).rejects.toMatchObject({ kind: 'locked' });
    const out = execFileSync(
      process.execPath,
      [
        '--import',
        'tsx',
        '-e',
        `import('./ts/index.ts').then(({userns}) => userns.UserNsManager.create({ podsDir: ${JSON.stringify(dir)} })).then(() => console.log('created'), (e) => console.log(e.kind))`,
      ],
      { cwd: path.resolve(import.meta.dirname, '../..'), encoding: 'utf8' },
    );
    expect(out.trim()).toBe('locked');
    m.close();
    managers.push(
      await userns.UserNsManager.create({ podsDir: dir, mappings: { firstId: L, length: L * 200 } }),
    );
  });

  it('release and cleanup follow upstream', async () => {
    const dir = podsDir();
    const m = await make({ podsDir: dir });
    for (const p of ['pod-1', 'pod-2', 'pod-3']) await m.getOrCreateUserNamespaceMappings(pod(p, false));
    await m.release('pod-3');
    await m.release('pod-3');
    expect(readdirSync(path.join(dir, 'pod-3'))).toEqual([]);
    await m.cleanupOrphanedPodUsernsAllocations([], [{ id: 'pod-1' }]);
    expect(m.allocations().map((a) => a.pod)).toEqual(['pod-1']);
    rmSync(path.join(dir, 'pod-1'), { recursive: true });
    await m.cleanupOrphanedPodUsernsAllocations([pod('pod-1')], ['pod-1']);
    expect(m.allocations()).toEqual([]);
  });

  it('batch calls give the same results as one call per pod, each pod settled on its own', async () => {
    const one = await make({ podsDir: podsDir(), mappings: { firstId: L, length: 4 * L }, maxPods: 4 });
    const many = await make({ podsDir: podsDir(), mappings: { firstId: L, length: 4 * L }, maxPods: 4 });
    const pods = [
      pod('a', false),
      pod('b', true),
      pod('../x', false),
      pod('c', null),
      pod('a', false),
      pod('d', false),
      pod('e', false),
      pod('f', false),
      pod('g', false),
    ];
    const seq: Array<PromiseSettledResult<userns.UserNamespace | null>> = [];
    for (const p of pods) {
      seq.push(
        await one.getOrCreateUserNamespaceMappings(p).then(
          (value) => ({ status: 'fulfilled' as const, value }),
          (reason: unknown) => ({ status: 'rejected' as const, reason }),
        ),
      );
    }
    const got = await many.getOrCreateUserNamespaceMappingsMany(pods);
    expect(got.map((r) => r.status)).toEqual(seq.map((r) => r.status));
    got.forEach((r, i) => {
      const s = seq[i];
      if (r.status === 'fulfilled' && s?.status === 'fulfilled') expect(r.value).toEqual(s.value);
      if (r.status === 'rejected' && s?.status === 'rejected') {
        expect(r.reason).toMatchObject({ kind: (s.reason as { kind: string }).kind });
        expect((r.reason as Error).message).toBe((s.reason as Error).message);
      }
    });
    // a, d, e, f hold the 4 slots; g is refused as exhausted; bad UID and non-POD pods settle alone.
    expect(got.map((r) => (r.status === 'rejected' ? (r.reason as { kind?: string }).kind : 'ok'))).toEqual([
      'ok',
      'ok',
      'invalid-pod-uid',
      'ok',
      'ok',
      'ok',
      'ok',
      'ok',
      'exhausted',
    ]);
    expect(many.allocations()).toEqual(one.allocations());
    await many.releaseMany(['a', 'zz', 'd']);
    expect(many.allocations().map((a) => a.pod)).toEqual(['e', 'f']);
    expect(readdirSync(path.join(many.podsDir, 'a'))).toEqual([]);
    const again = await many.getOrCreateUserNamespaceMappingsMany([pod('g', false)], 'kata');
    expect(again[0]?.status).toBe('fulfilled');
    const refused = await make({ podsDir: podsDir(), runtimeHandlerSupportsUserns: false });
    const r = await refused.getOrCreateUserNamespaceMappingsMany([pod('x', false), pod('y', true)], 'runc');
    expect(r[0]).toMatchObject({ status: 'rejected', reason: { kind: 'unsupported' } });
    expect(r[1]).toEqual({ status: 'fulfilled', value: { mode: 'NODE', uids: [], gids: [] } });
    expect(refused.allocations()).toEqual([]);
    await expect(many.releaseMany(['a', 1 as unknown as string])).rejects.toBeInstanceOf(TypeError);
  });

  it('rejects pod UIDs that would leave the pods directory', async () => {
    const dir = podsDir();
    const m = await make({ podsDir: dir });
    for (const bad of ['', '..', '../x', 'a/b', '.']) {
      await expect(m.getOrCreateUserNamespaceMappings(pod(bad, false))).rejects.toMatchObject({
        kind: 'invalid-pod-uid',
        code: 'ERR_KUBENODE_INVALID_ARG',
      });
    }
    expect(readdirSync(path.dirname(dir))).toEqual(['pods']);
    await expect(m.getOrCreateUserNamespaceMappings({ spec: { hostUsers: false } })).rejects.toBeInstanceOf(
      TypeError,
    );
  });

  it('property: random create/release/cleanup/restart agrees with a model', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.oneof(
            fc.record({ op: fc.constant('create' as const), p: fc.integer({ min: 0, max: 7 }) }),
            fc.record({ op: fc.constant('release' as const), p: fc.integer({ min: 0, max: 7 }) }),
            fc.record({ op: fc.constant('cleanup' as const), keep: fc.integer({ min: 0, max: 255 }) }),
            fc.constant({ op: 'restart' as const }),
          ),
          { maxLength: 25 },
        ),
        async (ops) => {
          const dir = podsDir();
          const opts = { podsDir: dir, mappings: { firstId: 2 * L, length: 5 * L }, maxPods: 5 };
          let m = await userns.UserNsManager.create(opts);
          const model = new Map<string, number>();
          const dirsMade = new Set<string>();
          try {
            for (const o of ops) {
              if (o.op === 'create') {
                const p = `p${o.p}`;
                dirsMade.add(p);
                const r = await m
                  .getOrCreateUserNamespaceMappings(pod(p, false))
                  .catch((e: userns.UsernsError) => e);
                if (r instanceof Error) {
                  expect(r.kind).toBe('exhausted');
                  expect(model.size).toBe(5);
                } else {
                  const id = r?.uids[0]?.hostId ?? -1;
                  const prev = model.get(p);
                  if (prev !== undefined) expect(id).toBe(prev);
                  else expect([...model.values()]).not.toContain(id);
                  model.set(p, id);
                }
              } else if (o.op === 'release') {
                await m.release(`p${o.p}`);
                model.delete(`p${o.p}`);
              } else if (o.op === 'cleanup') {
                const keep = [...Array(8).keys()].filter((i) => o.keep & (1 << i)).map((i) => `p${i}`);
                await m.cleanupOrphanedPodUsernsAllocations(keep, []);
                for (const p of [...model.keys()]) if (!keep.includes(p) || !dirsMade.has(p)) model.delete(p);
              } else {
                m.close();
                m = await userns.UserNsManager.create(opts);
              }
              const got = Object.fromEntries(m.allocations().map((a) => [a.pod, a.hostId]));
              expect(got).toEqual(Object.fromEntries([...model].sort()));
            }
          } finally {
            m.close();
          }
        },
      ),
      { numRuns: 25 },
    );
  }, 60_000);
});

describe('getsubids', () => {
  it('parses output with upstream rules and texts', () => {
    expect(userns.parseGetSubIdsOutput('0: kubelet 65536 2147483648\n')).toEqual([65536, 2147483648]);
    expect(() => userns.parseGetSubIdsOutput('a\nb')).toThrow(
      'error parsing line "a\\nb": it must contain only one line',
    );
    expect(() => userns.parseGetSubIdsOutput('0: kubelet 65536')).toThrow('invalid line "0: kubelet 65536"');
    expect(() => userns.parseGetSubIdsOutput('0: kubelet x 1')).toThrow(
      'error parsing line "0: kubelet x 1": strconv.ParseUint: parsing "x": invalid syntax',
    );
    expect(() => userns.parseGetSubIdsOutput('0: kubelet 1 4294967296')).toThrow(
      'error parsing line "0: kubelet 1 4294967296": strconv.ParseUint: parsing "4294967296": value out of range',
    );
  });

  it('cuts the default pool by the core rule, refusing an idsPerPod the kubelet refuses', () => {
    expect(userns.defaultPool(3 * L)).toEqual({ firstId: 3 * L, length: 2 ** 32 - 3 * L, source: 'default' });
    expect(() => userns.defaultPool(L + 1)).toThrow('userNamespaces.idsPerPod must be a multiple of 65536');
    expect(() => userns.defaultPool(0.5)).toThrow(KubenodeError);
  });

  it('uses the default pool without a kubelet account and fails like upstream without getsubids', async () => {
    expect(await userns.resolveKubeletMappings({ idsPerPod: L, user: 'no-such-user-kubenode' })).toEqual({
      firstId: L,
      length: 2 ** 32 - L,
      source: 'default',
    });
    expect(
      await userns.resolveKubeletMappings({ idsPerPod: L, featureGateEnabled: false, user: 'root' }),
    ).toMatchObject({
      source: 'default',
    });
    // root exists; a PATH holding getent but no getsubids.
    const getent = await userns.lookPath('getent');
    const only = mkdtempSync(path.join(tmpdir(), 'kubenode-path-'));
    dirs.push(only);
    if (getent) execFileSync('ln', ['-s', getent, path.join(only, 'getent')]);
    await expect(
      userns.resolveKubeletMappings({ idsPerPod: L, user: 'root', pathEnv: only }),
    ).rejects.toThrow('exec: "getsubids": executable file not found in $PATH');
    // A fake getsubids on PATH: the range it prints is used.
    writeFileSync(path.join(only, 'getsubids'), '#!/bin/sh\necho "0: root 131072 655360"\n', { mode: 0o755 });
    expect(await userns.resolveKubeletMappings({ idsPerPod: L, user: 'root', pathEnv: only })).toEqual({
      firstId: 131072,
      length: 655360,
      source: 'getsubids',
    });
    writeFileSync(
      path.join(only, 'getsubids'),
      '#!/bin/sh\n[ "$1" = -g ] && echo "0: root 1 2" || echo "0: root 3 4"\n',
      {
        mode: 0o755,
      },
    );
    await expect(
      userns.resolveKubeletMappings({ idsPerPod: L, user: 'root', pathEnv: only }),
    ).rejects.toThrow('mismatched subuids and subgids for user "root"');
    writeFileSync(path.join(only, 'getsubids'), '#!/bin/sh\necho Error fetching ranges >&2; exit 1\n', {
      mode: 0o755,
    });
    await expect(
      userns.resolveKubeletMappings({ idsPerPod: L, user: 'root', pathEnv: only }),
    ).rejects.toThrow('error retrieving additional uids for user "root": exit status 1');
  });

  it('lookup and exec failures are UsernsErrors, never raw errors', async () => {
    const bin = mkdtempSync(path.join(tmpdir(), 'kubenode-path-'));
    dirs.push(bin);
    const script = (name: string, body: string) => writeFileSync(path.join(bin, name), body, { mode: 0o755 });
    const rejectsWith = async (p: Promise<unknown>, kind: string, message: string) => {
      const e = await p.then(
        () => null,
        (err: unknown) => err,
      );
      expect(e).toBeInstanceOf(userns.UsernsError);
      expect(e).toBeInstanceOf(KubenodeError);
      expect((e as userns.UsernsError).kind).toBe(kind);
      expect((e as Error).message).toBe(message);
    };
    // getent failing for another reason than "no such key" (status 2).
    script('getent', '#!/bin/sh\nexit 3\n');
    await rejectsWith(
      userns.accountExists('root', bin),
      'io',
      'user: lookup username root: getent exited with status 3',
    );
    await rejectsWith(
      userns.resolveKubeletMappings({ idsPerPod: L, user: 'root', pathEnv: bin }),
      'io',
      'user: lookup username root: getent exited with status 3',
    );
    // A getent that cannot be started at all (its interpreter is missing).
    script('getent', '#!/nonexistent/sh\nexit 0\n');
    const e = await userns.accountExists('root', bin).catch((err: unknown) => err);
    expect(e).toBeInstanceOf(userns.UsernsError);
    expect((e as userns.UsernsError).kind).toBe('io');
    expect((e as Error).message).toMatch(/^user: lookup username root: spawn .*getent ENOENT$/);
    // getsubids that cannot be started.
    script('getent', '#!/bin/sh\nexit 0\n');
    script('getsubids', '#!/nonexistent/sh\n');
    const g = await userns
      .resolveKubeletMappings({ idsPerPod: L, user: 'root', pathEnv: bin })
      .catch((err: unknown) => err);
    expect(g).toBeInstanceOf(userns.UsernsError);
    expect((g as Error).message).toMatch(
      /^error retrieving additional uids for user "root": spawn .*ENOENT$/,
    );
  });
});
