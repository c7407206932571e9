// `kubenode conntrack list|delete|flush` filter flags as processes inside a throwaway namespace
// with nftables DNAT, marks and zones and real UDP flows; `conntrack -L` with the same flags is
// the reference.
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { conntrack } from '../../ts/index.js';
import { dnsFlows, TestNetns, teardown } from './netns.js';

const main = join(import.meta.dirname, '..', '..', 'ts', 'cli', 'main.ts');
const tsx = join(import.meta.dirname, '..', '..', 'node_modules', '.bin', 'tsx');
vi.setConfig({ testTimeout: 180_000 });
const VIP = '10.96.0.10';
const EP = ['10.244.0.1', '10.244.0.2', '10.244.1.3'];

let ns: TestNetns;

function cli(args: string[]) {
  const r = spawnSync('ip', ['netns', 'exec', ns.name, tsx, main, 'conntrack', ...args], {
    encoding: 'utf8',
    timeout: 60_000,
  });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** Original source ports `conntrack -L` shows with `args` (IPv4 unless `-f` says otherwise). */
function reference(args: string[] = []): number[] {
  const fam = args.includes('-f') ? [] : ['-f', 'ipv4'];
  const r = spawnSync('ip', ['netns', 'exec', ns.name, 'conntrack', '-L', ...fam, ...args], {
    encoding: 'utf8',
  });
  return [...r.stdout.matchAll(/^\S+\s+\d+\s+\d+\s.*?sport=(\d+)/gm)]
    .map((m) => Number(m[1]))
    .sort((a, b) => a - b);
}

function listed(args: string[]): number[] {
  const r = cli(['list', ...args, '-o', 'json']);
  expect(r.status, r.stderr).toBe(0);
  return (JSON.parse(r.stdout) as conntrack.ListResult).flows
    .map((f) => f.forward.srcPort)
    .sort((a, b) => a - b);
}

/** The CLI suites' table (40001…40003 DNATed to EP, 42002 to the VIP, 43000 unrelated), 40002 marked. */
function fill(): void {
  ns.exec('conntrack', ['-F']);
  ns.sendUdp([
    ...EP.map((_, i): [number, string, number] => [40001 + i, VIP, 53]),
    [42002, VIP, 53],
    [43000, '203.0.113.5', 9999],
    [50000, 'fd00:96::a', 53],
  ]);
}

beforeAll(() => {
  ns = new TestNetns('kn-ct-clif');
  dnsFlows(
    ns,
    VIP,
    EP,
    'table ip kt {\n chain tag {\n  type filter hook output priority 0; policy accept;\n  udp sport 40002 ct mark set 0x1234\n }\n}\n' +
      'table ip6 kn6 {\n chain out {\n  type filter hook output priority 0; policy accept;\n  ct state new counter\n }\n}\n',
  );
  ns.sendUdp([[50000, 'fd00:96::a', 53]]);
});

afterAll(() => teardown(ns, undefined));

describe('kubenode conntrack filter flags', () => {
  it('list flags select what conntrack -L selects with the same flags', () => {
    const same: string[][] = [
      ['-r', EP[1] as string],
      ['-p', 'udp', '--sport', '40001'],
      ['-d', '203.0.113.5'],
      ['-m', '0x1234'],
      ['-s', '10.0.0.1', '-p', 'udp', '--dport', '53'],
    ];
    for (const args of same) expect(listed(args), args.join(' ')).toEqual(reference(args));
    // CIDRs, the reply destination and a masked mark.
    expect(listed(['-r', '10.244.0.0/24'])).toEqual([40001, 40002]);
    expect(listed(['--orig-dst', '10.96.0.0/16'])).toEqual([40001, 40002, 40003, 42002]);
    expect(listed(['-q', '10.0.0.1', '-p', 'udp', '--reply-port-src', '5353'])).toEqual([
      40001, 40002, 40003,
    ]);
    expect(listed(['--mark', '0x1200/0xff00'])).toEqual([40002]);
    expect(listed(['--zone', '3'])).toEqual([]);
  });

  it('delete removes what the filter selects; flush by mark, then the family', () => {
    fill();
    let r = cli(['delete', '-r', '10.244.1.0/24', '-o', 'json']);
    expect(r.status, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ path: 'dumpDelete', matched: 1, deleted: 1, failed: 0 });
    expect(reference()).toEqual([40001, 40002, 42002, 43000]);
    r = cli(['flush', '--mark', '0x1234']);
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toBe('flushed by the kernel\n');
    expect(reference()).toEqual([40001, 42002, 43000]);
    expect(reference(['-f', 'ipv6'])).toEqual([50000]);
    r = cli(['flush']);
    expect(r.status, r.stderr).toBe(0);
    expect(reference()).toEqual([]);
    expect(reference(['-f', 'ipv6'])).toEqual([50000]);
  });

  it('bad filters exit 2 and delete nothing', () => {
    fill();
    const cases: [string[], RegExp][] = [
      [['delete'], /delete needs a filter \(flush empties the table\)/],
      [['delete', '-s', '10.0.0.0/33'], /orig\.src: prefix length of 10\.0\.0\.0\/33 must be in \[0, 32\]/],
      [['flush', '-r', 'fd00::1'], /reply source filter: fd00::1 is not an IPv4 address/],
      [['delete', '--sport', '40001'], /a port filter needs a protocol filter as well/],
      [['flush', '--mark', 'abc'], /--mark: invalid number "abc"/],
      [['list', '--dport', '5x', '-p', 'udp'], /--dport: invalid number "5x"/],
      [['list', '--dst', VIP, '--orig-dst', VIP], /give --dst or --orig-dst, not both/],
    ];
    for (const [args, msg] of cases) {
      const r = cli(args);
      expect(r.status, `${args.join(' ')}: ${r.stderr}`).toBe(2);
      expect(r.stderr).toMatch(msg);
    }
    expect(reference()).toEqual([40001, 40002, 40003, 42002, 43000]);
  });

  it('reconcile offers the pod-IP purge, off by default', () => {
    const r = cli(['reconcile', '--help']);
    expect(r.status).toBe(0);
    expect(r.stdout).toMatch(/--conntrack-purge-pod-ips/);
    expect(r.stdout).toMatch(/off by default/);
  });
});
