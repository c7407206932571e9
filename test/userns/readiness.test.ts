// Node readiness for pods with `hostUsers: false`, against this kernel and real filesystems:
// idmapped mounts on a scratch tmpfs, on an ext4/tmpfs directory, on a ramfs mounted in a
// private mount namespace (no idmap support), and the kernel release check.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { userns } from '../../ts/index.js';

const main = join(import.meta.dirname, '..', '..', 'ts', 'cli', 'main.ts');
const tsx = join(import.meta.dirname, '..', '..', 'node_modules', '.bin', 'tsx');
const dirs: string[] = [];
function scratch(base: string): string {
  const d = mkdtempSync(join(base, 'kubenode-idmap-'));
  dirs.push(d);
  return d;
}
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

interface Section {
  section: string;
  checks: { name: string; status: string; value: unknown; detail?: string }[];
}

function doctorUserns(podsDir: string, wrap: string[] = []): Section {
  const argv = [...wrap, tsx, main, 'doctor', '--pods-dir', podsDir, '-o', 'json'];
  const r = spawnSync(argv[0] as string, argv.slice(1), { encoding: 'utf8' });
  expect(r.status, r.stderr).toBe(0);
  const report = JSON.parse(r.stdout) as { sections: Section[] };
  const s = report.sections.find((x) => x.section === 'user namespaces');
  if (!s) throw new Error(`no user namespaces section in ${r.stdout}`);
  return s;
}

describe('idmapped-mount probe (real kernel and filesystems)', () => {
  it('tmpfs and the local filesystem support idmapped mounts; procfs does not', async () => {
    const before = readFileSync('/proc/self/mountinfo', 'utf8');
    const onDisk = scratch(tmpdir());
    const onShm = scratch('/dev/shm');
    const r = await userns.probeIdmapMounts([onDisk, onShm, '/proc/self', '/nonexistent/pods']);
    expect(r.map((p) => [p.target, p.status])).toEqual([
      ['tmpfs', 'supported'],
      [onDisk, 'supported'],
      [onShm, 'supported'],
      ['/proc/self', 'unsupported'],
      ['/nonexistent/pods', 'cannot-probe'],
    ]);
    expect(r[2]?.fsType).toBe('tmpfs');
    expect(r[3]).toMatchObject({ fsType: '0x9fa0', errno: 'EINVAL' });
    expect(r[3]?.detail).toMatch(/^mount_setattr\(MOUNT_ATTR_IDMAP\): /);
    expect(r[4]).toMatchObject({ errno: 'ENOENT' });
    // Detached mounts only: the mount table is as it was.
    expect(readFileSync('/proc/self/mountinfo', 'utf8')).toBe(before);
    await expect(userns.probeIdmapMounts('x' as never)).rejects.toThrow(/paths must be an array/);
  });

  it('kernel check: 6.3 is the minimum', () => {
    expect(userns.kernelCheck('6.3.0')).toEqual({ min: '6.3', ok: true });
    expect(userns.kernelCheck('6.2.16-300.fc38.x86_64')).toEqual({ min: '6.3', ok: false });
    expect(userns.kernelCheck('5.15.0-75-generic').ok).toBe(false);
    expect(() => userns.kernelCheck('not-a-version')).toThrow(
      expect.objectContaining({ code: 'ERR_KUBENODE_PARSE' }),
    );
  });

  it('kubenode doctor reports each filesystem; a pods directory on ramfs is missing idmap support', () => {
    const pods = scratch(tmpdir());
    const ok = doctorUserns(pods);
    expect(ok.checks.find((c) => c.name === 'idmap mounts on tmpfs')).toMatchObject({
      status: 'ok',
      value: 'supported (tmpfs)',
    });
    expect(ok.checks.find((c) => c.name === `idmap mounts on ${pods}`)).toMatchObject({ status: 'ok' });
    expect(ok.checks.find((c) => c.name === 'kernel for hostUsers: false')).toMatchObject({ status: 'ok' });

    // A ramfs mounted in a private mount namespace (the host's table is untouched).
    const base = scratch(tmpdir());
    const ram = join(base, 'pods');
    const script = `mount -t ramfs none ${base} && mkdir ${ram} && exec "$@"`;
    const s = doctorUserns(ram, ['unshare', '-m', 'sh', '-c', script, 'sh']);
    expect(s.checks.find((c) => c.name === `idmap mounts on ${ram}`)).toEqual({
      name: `idmap mounts on ${ram}`,
      status: 'missing',
      value: 'unsupported (ramfs)',
      detail: 'mount_setattr(MOUNT_ATTR_IDMAP): invalid argument',
    });
    const none = doctorUserns('/nonexistent/kubelet/pods');
    expect(none.checks.find((c) => c.name === 'idmap mounts on /nonexistent/kubelet/pods')).toMatchObject({
      status: 'warn',
      value: 'cannot-probe',
    });
  }, 60_000);
});
