// Hostile pools and pods directories through the JS API and the CLI: a pool past 2^32 (from
// options or from getsubids), files that are not regular or are huge, directory names that are
// not UTF-8.
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { KubenodeRangeError, userns } from '../../ts/index.js';

const L = 65536;
const root = path.resolve(import.meta.dirname, '../..');
const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function tmp(): string {
  const d = mkdtempSync(path.join(tmpdir(), 'kubenode-userns-hostile-'));
  dirs.push(d);
  return d;
}

function run(args: string[], env: NodeJS.ProcessEnv = process.env) {
  return spawnSync(process.execPath, ['--import', 'tsx', ...args], {
    cwd: root,
    encoding: 'utf8',
    env,
    timeout: 30_000,
  });
}

/** A PATH where `kubelet` exists and getsubids reports `first count`. */
function fakeKubeletAccount(first: number, count: number): string {
  const bin = path.join(tmp(), 'bin');
  mkdirSync(bin);
  writeFileSync(
    path.join(bin, 'getent'),
    '#!/bin/sh\n[ "$1 $2" = "passwd kubelet" ] && { echo "kubelet:x:999:999::/:/bin/false"; exit 0; }\nexit 2\n',
    { mode: 0o755 },
  );
  writeFileSync(path.join(bin, 'getsubids'), `#!/bin/sh\necho "0: kubelet ${first} ${count}"\n`, {
    mode: 0o755,
  });
  return `${bin}${path.delimiter}${process.env.PATH ?? ''}`;
}

/** Every host ID a manager on `mappings` hands out to `pods` pods, or the error it refuses with. */
async function handOut(mappings: { firstId: number; length: number }, pods: number, seed = 39) {
  let m: userns.UserNsManager;
  const podsDir = path.join(tmp(), 'pods');
  mkdirSync(podsDir);
  try {
    m = await userns.UserNsManager.create({
      podsDir,
      mappings,
      maxPods: pods,
      seed,
    });
  } catch (e) {
    return e as Error;
  }
  try {
    const ids: number[] = [];
    for (let i = 0; i < pods; i++) {
      const ns = await m.getOrCreateUserNamespaceMappings({
        metadata: { uid: `pod-${i}` },
        spec: { hostUsers: false },
      });
      ids.push(ns?.uids[0]?.hostId ?? -1);
    }
    return ids;
  } finally {
    m.close();
  }
}

describe('user namespace pools past 2^32', () => {
  it('refuses the pool that gave pod 39 host ID 0', async () => {
    const r = await handOut({ firstId: 2 ** 32 - L, length: L * 110 }, 110);
    expect(r).toBeInstanceOf(userns.UsernsError);
    const e = r as userns.UsernsError;
    expect(e.code).toBe('ERR_KUBENODE_INVALID_ARG');
    expect(e.kind).toBe('config');
    expect(e.message).toBe(
      'kubelet user assigned IDs from 4294901760 with length 7208960 go past the largest ID 4294967295',
    );
  });

  it('property: no pool hands out a range that wraps or starts below idsPerPod', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 4 }),
        fc.integer({ min: -3, max: 3 }),
        fc.integer({ min: 0, max: 2 ** 31 }),
        async (slots, shift, seed) => {
          const firstId = (2 ** 16 - slots + shift) * L;
          const length = slots * L;
          const r = await handOut({ firstId, length }, slots, seed);
          if (firstId > 0xffffffff) {
            // Not even a 32-bit ID: refused by the argument check.
            expect(r).toBeInstanceOf(KubenodeRangeError);
          } else if (firstId + length > 2 ** 32) {
            expect(r).toBeInstanceOf(userns.UsernsError);
            expect((r as userns.UsernsError).kind).toBe('config');
          } else if (firstId + length === 2 ** 32) {
            // The last range holds 4294967295: kept back, so the pool fits one pod fewer.
            expect((r as Error).message).toContain('the range with ID 4294967295 is never handed out');
            const ids = (await handOut({ firstId, length }, slots - 1, seed)) as number[];
            expect(new Set(ids).size).toBe(slots - 1);
            for (const id of ids) {
              expect(id).toBeGreaterThanOrEqual(Math.max(L, firstId));
              expect(id + L).toBeLessThan(2 ** 32);
            }
          } else {
            expect(Array.isArray(r), String(r)).toBe(true);
            const ids = r as number[];
            expect(new Set(ids).size).toBe(slots);
            for (const id of ids) {
              expect(id).toBeGreaterThanOrEqual(Math.max(L, firstId));
              expect(id + L).toBeLessThanOrEqual(firstId + length);
            }
          }
        },
      ),
      { numRuns: 30 },
    );
  }, 60_000);

  it('refuses such a pool from getsubids, and doctor does not call it ok', async () => {
    const PATH = fakeKubeletAccount(2 ** 32 - L, L * 110);
    const saved = process.env.PATH;
    process.env.PATH = PATH;
    try {
      const podsDir = path.join(tmp(), 'pods');
      mkdirSync(podsDir);
      await expect(userns.UserNsManager.create({ podsDir })).rejects.toMatchObject({
        kind: 'config',
        message: expect.stringContaining('go past the largest ID 4294967295'),
      });
    } finally {
      process.env.PATH = saved;
    }
    const doctor = run(['ts/cli/main.ts', 'doctor', '-o', 'json'], { ...process.env, PATH });
    const sections = JSON.parse(doctor.stdout).sections as Array<{
      section: string;
      checks: Array<{ name: string; status: string; detail?: string }>;
    }>;
    const pool = sections.find((s) => s.section === 'user namespace pool')?.checks ?? [];
    expect(pool.find((c) => c.name === 'kubelet ID pool')).toMatchObject({
      status: 'warn',
      detail: expect.stringContaining('go past the largest ID 4294967295'),
    });
    expect(pool.filter((c) => c.status === 'ok')).toEqual([]);
  }, 60_000);

  it('verify never reports ok for container root on host root', async () => {
    const pods = path.join(tmp(), 'pods');
    mkdirSync(path.join(pods, 'pod-root'), { recursive: true });
    writeFileSync(path.join(pods, 'pod-root', 'userns'), userns.encodeFile(0, L));
    await expect(userns.verifyMapping(pods, 'pod-root')).rejects.toMatchObject({
      kind: 'config',
      message: expect.stringContaining('host ID 0, below 65536'),
    });
    const v = run(['ts/cli/main.ts', 'userns', 'verify', pods, 'pod-root']);
    expect(v.status).toBe(1);
    expect(v.stdout).not.toMatch(/ok/);
    expect(v.stderr).toContain('host ID 0, below 65536');
  }, 30_000);
});

const HOSTILE: Array<[string, (f: string) => void, string]> = [
  ['fifo', (f) => spawnSync('mkfifo', [f]), 'not a regular file (named pipe)'],
  ['symlink', (f) => symlinkSync('/etc/hostname', f), 'not a regular file (symbolic link)'],
  ['directory', (f) => mkdirSync(f), 'is a directory'],
  [
    'sparse 2 GB file',
    (f) => spawnSync('truncate', ['-s', '2G', f]),
    'file of 2147483648 bytes is larger than 65536 bytes',
  ],
];

describe('a userns file that is not a small regular file', () => {
  it.each(HOSTILE)(
    '%s: create and ls refuse it at once, and the process exits',
    (_name, make, want) => {
      const base = tmp();
      const pods = path.join(base, 'pods');
      mkdirSync(path.join(pods, 'p'), { recursive: true });
      const file = path.join(pods, 'p', 'userns');
      make(file);
      // A child that creates a manager, then calls process.exit() while a second creation runs.
      const child = path.join(base, 'child.mts');
      writeFileSync(
        child,
        `import { userns } from ${JSON.stringify(path.join(root, 'ts/index.ts'))};
const t = Date.now();
try {
  await userns.UserNsManager.create({ podsDir: ${JSON.stringify(pods)}, mappings: { firstId: ${L}, length: ${L * 200} } });
  console.log('created');
} catch (e) {
  console.log(JSON.stringify({ kind: e.kind, code: e.code, message: e.message, ms: Date.now() - t, rss: process.resourceUsage().maxRSS }));
}
userns.listPods(${JSON.stringify(pods)}).catch(() => {});
setTimeout(() => process.exit(0), 100);
`,
      );
      const r = run([child]);
      expect(r.signal, 'the child hung').toBeNull();
      expect(r.status).toBe(0);
      const out = JSON.parse(r.stdout.trim()) as {
        kind: string;
        code: string;
        message: string;
        ms: number;
        rss: number;
      };
      expect(out.kind).toBe('io');
      expect(out.code).toBe('ERR_KUBENODE_IO');
      expect(out.message).toContain(`${file}: ${want}`);
      expect(out.ms).toBeLessThan(2000);
      expect(out.rss).toBeLessThan(512 * 1024); // KiB
      const ls = run(['ts/cli/main.ts', 'userns', 'ls', pods, '-o', 'json']);
      expect(ls.signal, 'ls hung').toBeNull();
      expect(ls.status).toBe(1);
      expect(JSON.parse(ls.stdout)).toEqual([
        { pod: 'p', hostId: null, length: null, error: expect.stringContaining(`${file}: ${want}`) },
      ]);
    },
    90_000,
  );
});

describe('pod directories whose name is not UTF-8', () => {
  it('are restored, listed and cleaned up like the kubelet does', async () => {
    const pods = path.join(tmp(), 'pods');
    const odd = Buffer.concat([Buffer.from(`${pods}/pod-`), Buffer.from([0xff, 0xfe])]);
    mkdirSync(odd, { recursive: true });
    writeFileSync(Buffer.concat([odd, Buffer.from('/userns')]), userns.encodeFile(3 * L, L));
    const m = await userns.UserNsManager.create({ podsDir: pods, mappings: { firstId: L, length: L * 200 } });
    try {
      expect(m.restored).toBe(1);
      expect(m.allocations()).toEqual([{ pod: 'pod-\ufffd\ufffd', hostId: 3 * L, length: L }]);
      expect(await userns.listPods(pods)).toEqual([
        { pod: 'pod-\ufffd\ufffd', hostId: 3 * L, length: L, error: null },
      ]);
      await m.cleanupOrphanedPodUsernsAllocations([], []);
      expect(m.allocations()).toEqual([]);
    } finally {
      m.close();
    }
  });
});
