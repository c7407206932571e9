// kube-proxy's conntrack sysctl rules, on a real temporary /proc + /sys tree, and a dry run on
// the machine's own files.
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { conntrack } from '../../ts/index.js';

describe('conntrackMax (upstream TestGetConntrackMax)', () => {
  it.each([
    [{ maxPerCore: 0, min: 0 }, 0],
    [{ maxPerCore: 0, min: 131072 }, 0], // Min alone does nothing
    [{ maxPerCore: 32768, min: 131072, n: 4 }, 131072],
    [{ maxPerCore: 32768, min: 131072, n: 8 }, 262144],
    [{ maxPerCore: 32768, min: 0, n: 2 }, 65536],
    [{ maxPerCore: 65536, min: 0, n: 4 }, 262144],
    [{ maxPerCore: 32768, min: 0, n: 64 }, 1048576], // capped
    [{ maxPerCore: 32768, min: 2000000, n: 64 }, 1048576], // the cap wins over Min
    [{ maxPerCore: null, min: 131072 }, 0],
  ])('%o → %d', (c, want) => {
    expect(conntrack.conntrackMax(c, (c as { n?: number }).n ?? 4)).toBe(want);
  });
});

describe('applyConntrackSysctls', () => {
  let root = '';
  afterEach(() => rmSync(root, { recursive: true, force: true }));

  function tree(values: Record<string, string>, hashsize: string | null = '16384'): string {
    root = `${mkdtempSync(join(tmpdir(), 'kn-ct-sysctl-'))}/`;
    mkdirSync(join(root, 'proc/sys/net/netfilter'), { recursive: true });
    mkdirSync(join(root, 'sys/module/nf_conntrack/parameters'), { recursive: true });
    for (const [k, v] of Object.entries(values)) writeFileSync(join(root, 'proc/sys/net/netfilter', k), v);
    if (hashsize !== null) writeFileSync(join(root, 'sys/module/nf_conntrack/parameters/hashsize'), hashsize);
    return root;
  }
  const read = (name: string) => readFileSync(join(root, 'proc/sys/net/netfilter', name), 'utf8').trim();

  it('writes in upstream order, only what differs, and raises hashsize to max/4', async () => {
    tree({
      nf_conntrack_max: '65536',
      nf_conntrack_tcp_timeout_established: '86400',
      nf_conntrack_tcp_timeout_close_wait: '60',
      nf_conntrack_udp_timeout: '30',
    });
    const actions = await conntrack.applyConntrackSysctls(
      { ...conntrack.DEFAULT_CONNTRACK_CONFIG, tcpBeLiberal: true, udpTimeout: '1m', udpStreamTimeout: 0 },
      { root, numCPU: 8 },
    );
    expect(actions.map((a) => [a.path.slice(root.length), a.value, a.written])).toEqual([
      ['proc/sys/net/netfilter/nf_conntrack_max', 262144, true],
      ['sys/module/nf_conntrack/parameters/hashsize', 65536, true],
      ['proc/sys/net/netfilter/nf_conntrack_tcp_timeout_established', 86400, false],
      ['proc/sys/net/netfilter/nf_conntrack_tcp_timeout_close_wait', 3600, true],
      ['proc/sys/net/netfilter/nf_conntrack_tcp_be_liberal', 1, true],
      ['proc/sys/net/netfilter/nf_conntrack_udp_timeout', 60, true],
    ]);
    expect(read('nf_conntrack_max')).toBe('262144');
    expect(read('nf_conntrack_tcp_be_liberal')).toBe('1');
    expect(readFileSync(join(root, 'sys/module/nf_conntrack/parameters/hashsize'), 'utf8')).toBe('65536');
  });

  it('leaves hashsize alone when already >= max/4; never writes be_liberal 0', async () => {
    tree({ nf_conntrack_max: '1' }, '100000');
    const a = await conntrack.applyConntrackSysctls(
      { maxPerCore: 32768, min: 131072, tcpBeLiberal: false },
      { root, numCPU: 1 },
    );
    expect(a.map((x) => x.path.split('/').pop())).toEqual(['nf_conntrack_max']);
  });

  it('500ms timeouts pass the > 0 test and write 0, as upstream', async () => {
    tree({});
    const a = await conntrack.applyConntrackSysctls({ tcpEstablishedTimeout: '500ms' }, { root, numCPU: 1 });
    expect(a).toMatchObject([{ value: 0, written: true }]);
  });

  it('a missing hashsize file stops the sequence with an error', async () => {
    tree({}, null);
    await expect(
      conntrack.applyConntrackSysctls(
        { maxPerCore: 1, min: 5, tcpEstablishedTimeout: 10 },
        { root, numCPU: 1 },
      ),
    ).rejects.toBeInstanceOf(conntrack.ConntrackSysctlError);
    expect(() => read('nf_conntrack_tcp_timeout_established')).toThrow();
  });

  it('an unwritable sysctl is an error and stops the sequence', async () => {
    tree({ nf_conntrack_tcp_timeout_established: '1' });
    mkdirSync(join(root, 'proc/sys/net/netfilter/nf_conntrack_tcp_timeout_close_wait'));
    chmodSync(join(root, 'proc/sys/net/netfilter/nf_conntrack_tcp_timeout_close_wait'), 0o500);
    await expect(
      conntrack.applyConntrackSysctls(
        { tcpEstablishedTimeout: 5, tcpCloseWaitTimeout: 6, udpTimeout: 7 },
        { root, numCPU: 1 },
      ),
    ).rejects.toThrow(/could not set conntrack parameters/);
    expect(read('nf_conntrack_tcp_timeout_established')).toBe('5');
    expect(() => read('nf_conntrack_udp_timeout')).toThrow();
  });

  it('dry run on this machine reads the real files and writes nothing', async () => {
    root = mkdtempSync(join(tmpdir(), 'kn-ct-unused-'));
    const before = readFileSync('/proc/sys/net/netfilter/nf_conntrack_max', 'utf8');
    const a = await conntrack.applyConntrackSysctls(conntrack.DEFAULT_CONNTRACK_CONFIG, { dryRun: true });
    expect(a[0]?.path).toBe('/proc/sys/net/netfilter/nf_conntrack_max');
    expect(a.every((x) => !x.written)).toBe(true);
    expect(readFileSync('/proc/sys/net/netfilter/nf_conntrack_max', 'utf8')).toBe(before);
  });

  // v1.37's TestSetSysctls rows for nf_conntrack_max and hashsize (12 per core, 8 CPUs: 96
  // wanted, hashsize 24), on real files; v1.36 differs on one row, lowering a higher max.
  it.each([
    ['unset', '0', '0', ['SetMax(96)', 'SetHashsize(24)'], ['SetMax(96)', 'SetHashsize(24)']],
    ['already correct', '96', '24', [], []],
    ['higher than wanted', '192', '48', [], ['SetMax(96)']],
    ['too low', '48', '12', ['SetMax(96)', 'SetHashsize(24)'], ['SetMax(96)', 'SetHashsize(24)']],
    ['max correct, hashsize not', '96', '0', ['SetHashsize(24)'], ['SetHashsize(24)']],
    ['max wrong, hashsize correct', '48', '24', ['SetMax(96)'], ['SetMax(96)']],
  ])('nf_conntrack_max %s (%s, hashsize %s)', async (_, max, hashsize, v137, v136) => {
    for (const [kubernetesVersion, want] of [
      [undefined, v137],
      ['v1.37', v137],
      ['v1.36', v136],
    ] as const) {
      tree({ nf_conntrack_max: max }, hashsize);
      const a = await conntrack.applyConntrackSysctls(
        { maxPerCore: 12 },
        { root, numCPU: 8, ...(kubernetesVersion ? { kubernetesVersion } : {}) },
      );
      const calls = a
        .filter((x) => x.written)
        .map((x) => `${x.path.endsWith('hashsize') ? 'SetHashsize' : 'SetMax'}(${x.value})`);
      expect(calls, kubernetesVersion).toEqual(want);
      const wrote = want.includes('SetMax(96)');
      expect(read('nf_conntrack_max')).toBe(wrote ? '96' : max);
      rmSync(root, { recursive: true, force: true });
    }
  });

  it('an unknown release is a typed error before any file is touched', async () => {
    tree({ nf_conntrack_max: '1' });
    for (const [v, code] of [
      ['v1.38', 'ERR_KUBENODE_UNSUPPORTED'],
      ['v2', 'ERR_KUBENODE_PARSE'],
    ]) {
      await expect(
        conntrack.applyConntrackSysctls({ maxPerCore: 12 }, { root, numCPU: 8, kubernetesVersion: v }),
      ).rejects.toMatchObject({ code, kind: 'kubernetes-version' });
    }
    expect(read('nf_conntrack_max')).toBe('1');
  });

  it("sizes from the node's online CPUs, not the process's", async () => {
    tree({});
    mkdirSync(join(root, 'sys/devices/system/cpu'), { recursive: true });
    writeFileSync(join(root, 'sys/devices/system/cpu/online'), '0-3,6\n');
    expect(await conntrack.detectNumCPU(root)).toBe(5);
  });

  it('rejects malformed config', () => {
    expect(() => conntrack.conntrackMax({ maxPerCore: 1.5 }, 1)).toThrow(/32-bit integer/);
    expect(() => conntrack.durationSeconds('x', '5 minutes')).toThrow(/invalid duration/);
    expect(conntrack.durationSeconds('x', '1h30m')).toBe(5400);
  });
});
