// Pre-flight check of a pool / idsPerPod against pods on disk (`userns.checkPool`,
// `kubenode userns check`): real pod directories written by the manager, plus hostile entries.
import { execFileSync, spawnSync } from 'node:child_process';
import { closeSync, ftruncateSync, mkdirSync, openSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { userns } from '../../ts/index.js';
import { podsDir } from './dirs.js';

const root = path.resolve(import.meta.dirname, '../..');
const L = 65536;

function cli(...args: string[]) {
  return spawnSync(process.execPath, ['--import', 'tsx', 'ts/cli/main.ts', ...args], {
    cwd: root,
    encoding: 'utf8',
  });
}

/** `n` pods given ranges by a manager on the pool [L, L*2000); returns pod → first host ID. */
async function podsByManager(dir: string, n: number): Promise<Map<string, number>> {
  const m = await userns.UserNsManager.create({
    podsDir: dir,
    mappings: { firstId: L, length: L * 2000 },
    seed: 5,
  });
  const got = new Map<string, number>();
  for (let i = 0; i < n; i++) {
    const uid = `pod-${String(i).padStart(3, '0')}`;
    const ns = await m.getOrCreateUserNamespaceMappings({ metadata: { uid }, spec: { hostUsers: false } });
    got.set(uid, ns?.uids[0]?.hostId ?? -1);
  }
  m.close();
  return got;
}

describe('userns.checkPool', () => {
  it('fits with the configuration the pods were made with, and names every pod after a change', async () => {
    const dir = podsDir();
    const pods = await podsByManager(dir, 12);
    const same = await userns.checkPool({ podsDir: dir, mappings: { firstId: L, length: L * 2000 } });
    expect(same).toMatchObject({
      fits: true,
      pods: 12,
      usableSlots: 2000,
      misfits: [],
      idsPerPod: L,
      maxPods: 110,
    });

    const r = await userns.checkPool({
      podsDir: dir,
      idsPerPod: 2 * L,
      mappings: { firstId: 2 * L, length: 2 * L * 1000 },
    });
    expect(r.fits).toBe(false);
    expect(r.misfits.map((m) => m.pod)).toEqual([...pods.keys()].sort());
    for (const m of r.misfits) {
      expect(m).toEqual({
        pod: m.pod,
        hostId: pods.get(m.pod),
        length: L,
        reason: 'wrong user namespace length 65536',
      });
    }
    // The manager with that configuration refuses the first of them, as reported.
    await expect(
      userns.UserNsManager.create({
        podsDir: dir,
        idsPerPod: 2 * L,
        mappings: { firstId: 2 * L, length: 2 * L * 1000 },
      }),
    ).rejects.toThrow(
      `record pod mappings for existing pod "${r.misfits[0]?.pod}": wrong user namespace length 65536`,
    );
  });

  it('rejects a bad configuration with the typed error creation gives, and bad shapes with TypeError or RangeError', async () => {
    const dir = podsDir();
    const e = await userns
      .checkPool({ podsDir: dir, mappings: { firstId: L, length: L * 100 } })
      .catch((x) => x);
    expect(e).toBeInstanceOf(userns.UsernsError);
    expect(e.message).toBe('kubelet user assigned IDs are not enough to support 110 pods');
    await expect(userns.checkPool({ podsDir: dir, idsPerPod: 1000 })).rejects.toThrow(
      'invalid configuration: userNamespaces.idsPerPod must not be less than 65536',
    );
    await expect(userns.checkPool({ podsDir: 5 as unknown as string })).rejects.toBeInstanceOf(TypeError);
    await expect(userns.checkPool({ podsDir: dir, maxPods: -1 })).rejects.toBeInstanceOf(RangeError);
  });
});

describe('kubenode userns check', () => {
  it('exit 0 when every pod fits, 1 naming each pod that does not, 2 on bad input', async () => {
    const dir = podsDir();
    const pods = await podsByManager(dir, 20);
    // Hostile entries: a symbolic link and a FIFO where pods would be (not pods), and pods
    // whose file is a FIFO, a 1 GiB sparse file, and a symbolic link to another pod's file.
    const outside = path.join(path.dirname(dir), 'outside');
    mkdirSync(path.join(outside, 'x'), { recursive: true });
    writeFileSync(path.join(outside, 'x', 'userns'), userns.encodeFile(L * 9000, L));
    symlinkSync(path.join(outside, 'x'), path.join(dir, 'link-pod'));
    execFileSync('mkfifo', [path.join(dir, 'fifo-entry')]);
    mkdirSync(path.join(dir, 'p-fifo'));
    execFileSync('mkfifo', [path.join(dir, 'p-fifo', 'userns')]);
    mkdirSync(path.join(dir, 'p-huge'));
    const fd = openSync(path.join(dir, 'p-huge', 'userns'), 'w');
    ftruncateSync(fd, 2 ** 30);
    closeSync(fd);
    mkdirSync(path.join(dir, 'p-link'));
    symlinkSync(path.join(dir, 'pod-000', 'userns'), path.join(dir, 'p-link', 'userns'));

    const pool = ['--first-id', String(L), '--length', String(L * 2000)];
    const ok = cli('userns', 'check', '--pods-dir', dir, '--ids-per-pod', String(L), ...pool, '-o', 'json');
    expect(ok.stderr).toBe('');
    const hostile = ['p-fifo', 'p-huge', 'p-link'];
    expect(ok.status).toBe(1);
    const report = JSON.parse(ok.stdout);
    expect(report.misfits.map((m: { pod: string }) => m.pod)).toEqual(hostile);
    expect(report.misfits[0].reason).toContain('not a regular file (named pipe), refusing to open it');
    expect(report.misfits[1].reason).toContain('file of 1073741824 bytes is larger than 65536 bytes');
    expect(report.misfits[2].reason).toContain('not a regular file (symbolic link), refusing to open it');
    expect(report.pods).toBe(23);
    expect(report.pool).toEqual({ firstId: L, length: L * 2000, source: 'default' });

    // Without the hostile pods every pod fits: exit 0.
    for (const p of hostile) execFileSync('rm', ['-rf', path.join(dir, p)]);
    const fits = cli('userns', 'check', '--pods-dir', dir, ...pool);
    expect(fits.status).toBe(0);
    expect(fits.stdout).toContain('ok: every pod on disk fits');
    expect(fits.stdout).toContain('20 pods on disk with a range');

    // A smaller pool: each pod outside it named with its ID, exit 1.
    const small = cli(
      'userns',
      'check',
      '--pods-dir',
      dir,
      '--first-id',
      String(L),
      '--length',
      String(L * 500),
    );
    const outsidePool = [...pods].filter(([, h]) => h >= L * 501);
    expect(outsidePool.length).toBeGreaterThan(0);
    expect(small.status).toBe(1);
    expect(small.stdout).toContain(`${outsidePool.length} of 20 pods do not fit:`);
    for (const [pod, h] of outsidePool) {
      expect(small.stdout).toMatch(new RegExp(`^${pod} +${h} +65536 +id ${h} is out of range$`, 'm'));
    }

    // Bad input: nothing checked, exit 2 with the reason on stderr.
    const bad: Array<[string[], string]> = [
      [['--ids-per-pod', '1000'], 'userNamespaces.idsPerPod must not be less than 65536'],
      [['--ids-per-pod', '-65536'], '--ids-per-pod must be a whole number'],
      [['--first-id', String(L)], '--first-id and --length go together'],
      [['--first-id', String(L), '--length', String(L * 10)], 'not enough to support 110 pods'],
      [['--max-pods', '1e3'], '--max-pods must be a whole number'],
    ];
    for (const [args, text] of bad) {
      const r = cli('userns', 'check', '--pods-dir', dir, ...args);
      expect(r.status, args.join(' ')).toBe(2);
      expect(r.stderr).toContain(text);
      expect(r.stdout).toBe('');
    }
    const missing = cli('userns', 'check', '--pods-dir', path.join(dir, 'missing'), ...pool);
    expect(missing.status).toBe(2);
    expect(missing.stderr).toContain('no such file or directory');
    expect(cli('userns', 'check').status).toBe(2);
  }, 300_000);
});
