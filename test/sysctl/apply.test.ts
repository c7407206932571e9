// Real namespaces: the test creates them with unshare(1) as root and checks the host is untouched.
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { sysctl } from '../../ts/index.js';

const children: ChildProcess[] = [];
afterEach(() => {
  for (const c of children.splice(0)) c.kill('SIGKILL');
});

beforeAll(() => {
  if (process.getuid?.() !== 0)
    throw new Error('these tests need root (they create namespaces and write /proc/sys)');
});

async function sandbox(): Promise<number> {
  const c = spawn('unshare', ['--net', '--ipc', '--uts', 'sleep', '60'], { stdio: 'ignore' });
  children.push(c);
  const pid = c.pid;
  if (pid === undefined) throw new Error('unshare(1) did not start');
  const own = statSync('/proc/self/ns/ipc').ino;
  for (let i = 0; i < 500; i++) {
    try {
      if (statSync(`/proc/${pid}/ns/ipc`).ino !== own) return pid;
    } catch {}
    await new Promise((r) => setTimeout(r, 5));
  }
  throw new Error('unshare did not create namespaces');
}

const host = (p: string) => readFileSync(p, 'utf8').trim();
const inside = (pid: number, p: string) =>
  execFileSync('nsenter', ['-t', String(pid), '-n', '-i', '-u', 'cat', p], { encoding: 'utf8' }).trim();

describe('applySysctls', () => {
  it('writes net, IPC and UTS sysctls into the target only', async () => {
    const pid = await sandbox();
    const files = [
      '/proc/sys/net/ipv4/tcp_keepalive_time',
      '/proc/sys/kernel/msgmax',
      '/proc/sys/net/ipv4/conf/lo/rp_filter',
      '/proc/sys/kernel/domainname',
    ];
    const before = files.map(host);
    const applied = await sysctl.applySysctls({ pid }, [
      { name: 'net.ipv4.tcp_keepalive_time', value: 333 },
      { name: 'kernel/msgmax', value: '9999' },
      { name: 'net/ipv4/conf/lo/rp_filter', value: '2' },
      { name: 'kernel.domainname', value: 'pod.example' },
    ]);
    expect(applied.map((a) => [a.name, a.value])).toEqual([
      ['net.ipv4.tcp_keepalive_time', '333'],
      ['kernel.msgmax', '9999'],
      ['net.ipv4.conf.lo.rp_filter', '2'],
      ['kernel.domainname', 'pod.example'],
    ]);
    expect(files.map((f) => inside(pid, f))).toEqual(['333', '9999', '2', 'pod.example']);
    expect(files.map(host)).toEqual(before);
  });

  it('accepts a netns path and a record of sysctls', async () => {
    const pid = await sandbox();
    const before = host('/proc/sys/net/ipv4/ping_group_range');
    await sysctl.applySysctls(
      { netnsPath: `/proc/${pid}/ns/net` },
      { 'net.ipv4.ping_group_range': '0 1000' },
    );
    expect(inside(pid, '/proc/sys/net/ipv4/ping_group_range').split(/\s+/)).toEqual(['0', '1000']);
    expect(host('/proc/sys/net/ipv4/ping_group_range')).toBe(before);
  });

  it('refuses non-namespaced names, the host namespaces and bad input before writing', async () => {
    const pid = await sandbox();
    await expect(sysctl.applySysctls({ pid }, [{ name: 'vm.swappiness', value: '1' }])).rejects.toThrow(
      'sysctl "vm.swappiness" is not in a separate kernel namespace',
    );
    await expect(
      sysctl.applySysctls({ pid: process.pid }, [{ name: 'net.ipv4.tcp_syncookies', value: '1' }]),
    ).rejects.toMatchObject({ code: 'ERR_KUBENODE_CONFLICT' });
    await expect(
      sysctl.applySysctls({ netnsPath: `/proc/${pid}/ns/net` }, [{ name: 'kernel.sem', value: '1' }]),
    ).rejects.toThrow(/no ipc namespace path was given/);
    await expect(
      sysctl.applySysctls({ pid }, [{ name: 'user.max_user_namespaces', value: '1' }]),
    ).rejects.toMatchObject({ code: 'ERR_KUBENODE_UNSUPPORTED' });
    await expect(
      sysctl.applySysctls({ pid }, [{ name: 'net.//.//.//.etc.shadow', value: '1' }]),
    ).rejects.toMatchObject({
      code: 'ERR_KUBENODE_INVALID_ARG',
      message: 'sysctl "net.//.//.//.etc.shadow" is not a valid sysctl name',
    });
    await expect(sysctl.applySysctls({ pid: 1.5 }, [])).rejects.toThrow(/pid must be an integer/);
    await expect(
      sysctl.applySysctls({ pid }, [{ name: 7 as unknown as string, value: '1' }]),
    ).rejects.toThrow(/name must be a string/);
    await expect(
      sysctl.applySysctls({ pid: 999_999_999 }, [{ name: 'net.ipv4.tcp_syncookies', value: '1' }]),
    ).rejects.toThrow(/opening namespace/);
    // A failing write rolls back the earlier ones.
    const fin = inside(pid, '/proc/sys/net/ipv4/tcp_fin_timeout');
    await expect(
      sysctl.applySysctls({ pid }, [
        { name: 'net.ipv4.tcp_fin_timeout', value: '7' },
        { name: 'net.ipv4.tcp_syncookies', value: 'x' },
      ]),
    ).rejects.toMatchObject({ code: 'ERR_KUBENODE_IO' });
    expect(inside(pid, '/proc/sys/net/ipv4/tcp_fin_timeout')).toBe(fin);
  });
});

describe('probe', () => {
  it('finds every safe sysctl isolated on this kernel and leaves the host untouched', async () => {
    const safe = sysctl.safeSysctlAllowlist();
    const paths = safe.map((n) => `/proc/sys/${n.replaceAll('.', '/')}`);
    const before = paths.map(host);
    const report = await sysctl.probe();
    expect(report.summary.leaked).toBe(0);
    for (const n of safe) expect(report.results.find((r) => r.name === n)?.outcome, n).toBe('isolated');
    for (const n of [
      'kernel.sem',
      'kernel.msgmnb',
      'kernel.shmmni',
      'fs.mqueue.queues_max',
      'kernel.domainname',
    ]) {
      expect(report.results.find((r) => r.name === n)?.outcome, n).toBe('isolated');
    }
    expect(report.results.find((r) => r.name === 'kernel.shm')?.outcome).toBe('absent');
    expect(paths.map(host)).toEqual(before);
  });

  it('never writes a sysctl outside the net/IPC/UTS namespaces', async () => {
    const paths = [
      '/proc/sys/vm/stat_interval',
      '/proc/sys/kernel/core_pattern',
      '/proc/sys/user/max_user_namespaces',
    ];
    const before = paths.map(host);
    const r = await sysctl.probe(['vm.stat_interval', 'kernel.core_pattern', 'user/max_user_namespaces']);
    expect(r.results.map((x) => [x.name, x.namespace, x.outcome, x.hostValue])).toEqual([
      ['vm.stat_interval', '', 'not-namespaced', undefined],
      ['kernel.core_pattern', '', 'not-namespaced', undefined],
      ['user.max_user_namespaces', 'User', 'not-namespaced', undefined],
    ]);
    expect(r.results[0]?.detail).toBe('sysctl "vm.stat_interval" is not in a separate kernel namespace');
    expect(r.summary['not-namespaced']).toBe(3);
    expect(r.summary.leaked).toBe(0);
    expect(paths.map(host)).toEqual(before);
  });

  it('rejects a name that would leave /proc/sys before writing anything', async () => {
    // The traversal would reach this scratch file; nothing else could ever be touched.
    const dir = mkdtempSync('/tmp/kubenodeprobe');
    const file = `${dir}/f`;
    writeFileSync(file, '42\n');
    try {
      const name = `net.//.//.//.${dir.slice(1).replaceAll('/', '.')}.f`;
      expect(sysctl.normalizeName(name)).toBe(name);
      await expect(sysctl.probe(['net.ipv4.tcp_rmem', name])).rejects.toMatchObject({
        code: 'ERR_KUBENODE_INVALID_ARG',
        message: `sysctl ${JSON.stringify(name)} is not a valid sysctl name`,
      });
      expect(readFileSync(file, 'utf8')).toBe('42\n');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
