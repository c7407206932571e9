// `kubenode conntrack list|stats|clean` as processes inside a throwaway namespace (`ip netns exec`),
// with nftables DNAT and real UDP flows; `conntrack -L` is the reference.
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { conntrack } from '../../ts/index.js';
import { type CtEntry, dnsFlows, TestNetns, teardown } from './netns.js';

// Each run starts tsx: 1–4 s on a busy 2-core machine, so the tests get generous timeouts.
const main = join(import.meta.dirname, '..', '..', 'ts', 'cli', 'main.ts');
const tsx = join(import.meta.dirname, '..', '..', 'node_modules', '.bin', 'tsx');
vi.setConfig({ testTimeout: 180_000 });
const VIP = '10.96.0.10';
const EP = ['10.244.0.1', '10.244.0.2', '10.244.0.3'];

let ns: TestNetns;
let dir: string;

interface Run {
  status: number | null;
  stdout: string;
  stderr: string;
}

/** Runs the CLI inside the namespace, optionally as an unprivileged user. */
function cli(args: string[], opts: { unprivileged?: boolean } = {}): Run {
  const drop = opts.unprivileged
    ? ['setpriv', '--reuid=65534', '--regid=65534', '--clear-groups', '--inh-caps=-all']
    : [];
  const r = spawnSync('ip', ['netns', 'exec', ns.name, ...drop, tsx, main, 'conntrack', ...args], {
    encoding: 'utf8',
    timeout: 60_000,
  });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

function file(name: string, content: unknown): string {
  const p = join(dir, name);
  writeFileSync(p, typeof content === 'string' ? content : JSON.stringify(content));
  return p;
}

const key = (e: CtEntry) => `${e.origDst}:${e.dport} ${e.sport} -> ${e.replySrc}:${e.replySport}`;
const flowKey = (f: conntrack.Flow) =>
  `${f.forward.dstIP}:${f.forward.dstPort} ${f.forward.srcPort} -> ${f.reverse.srcIP}:${f.reverse.srcPort}`;

const services: conntrack.ServiceEntry[] = [
  { name: 'kube-system/dns:dns', protocol: 'UDP', clusterIP: VIP, port: 53 },
];
// EP[1] is gone and EP[2] terminating: their flows (and the un-DNATed one) are stale.
const endpoints: conntrack.EndpointsTable = {
  'kube-system/dns:dns': [
    { ip: EP[0] as string, port: 5353, serving: true },
    { ip: EP[2] as string, port: 5353, serving: false },
  ],
};

beforeAll(() => {
  ns = new TestNetns();
  dir = mkdtempSync(join(tmpdir(), 'kubenode-ct-cli-'));
  // The unprivileged run must be able to read the tables, so only the socket is refused.
  chmodSync(dir, 0o755);
  // A ct expression makes the namespace track IPv6 too (an empty nat chain would not), so both
  // tables have flows.
  dnsFlows(
    ns,
    VIP,
    EP,
    'table ip6 kn6 {\n chain out {\n  type filter hook output priority 0; policy accept;\n  ct state new counter\n }\n}\n',
  );
  ns.sendUdp([[50000, 'fd00:96::a', 53]]);
});

afterAll(() => teardown(ns, dir));

describe('kubenode conntrack list', () => {
  it('-p udp -o json returns exactly the flows conntrack -L shows', () => {
    const r = cli(['list', '-p', 'udp', '-o', 'json']);
    expect(r.status, r.stderr).toBe(0);
    const out = JSON.parse(r.stdout) as conntrack.ListResult;
    expect(out.partial).toBe(false);
    expect(out.flows.map(flowKey).sort()).toEqual(ns.conntrackL('ipv4').map(key).sort());
    expect(out.flows).toHaveLength(5);
    expect(out.flows.every((f) => f.protocol === 17)).toBe(true);
    expect(out.flows.find((f) => f.forward.srcPort === 40002)).toMatchObject({
      forward: { dstIP: VIP, dstPort: 53 },
      reverse: { srcIP: EP[1], srcPort: 5353 },
    });
  });

  it('--family ipv6 lists the IPv6 table; text output has one line per flow', () => {
    const r = cli(['list', '-p', 'udp', '--family', 'ipv6', '-o', 'json']);
    expect(r.status, r.stderr).toBe(0);
    const flows = (JSON.parse(r.stdout) as conntrack.ListResult).flows;
    expect(flows.map((f) => f.forward.dstIP)).toEqual(['fd00:96::a']);
    const text = cli(['list', '-p', 'udp']);
    expect(text.status, text.stderr).toBe(0);
    expect(text.stdout.trim().split('\n')).toHaveLength(5);
    expect(text.stdout).toMatch(
      /^udp {4}\d+ src=10\.0\.0\.1 dst=10\.96\.0\.10 sport=40002 dport=53 src=10\.244\.0\.2/m,
    );
    expect(text.stderr).toContain('5 flow entries');
  });

  it('reconcile takes --min-sync-period as a Go duration and refuses anything else with exit 2', () => {
    const cases: [string, string][] = [
      ['abc', 'invalid argument "abc" for "--min-sync-period" flag: time: invalid duration "abc"'],
      ['-5s', '--min-sync-period must not be negative, got "-5s"'],
      ['', 'invalid argument "" for "--min-sync-period" flag: time: invalid duration ""'],
      // Milliseconds without a unit, the old spelling: refused as Go's flag parsing does.
      [
        '1000',
        'invalid argument "1000" for "--min-sync-period" flag: time: missing unit in duration "1000" (a duration needs a unit: 1000ms, 1000s)',
      ],
      // 2^31 ms and more would overflow setTimeout into a 1 ms period.
      ['2147483648ms', '--min-sync-period must be at most 596h31m23.647s, got "2147483648ms"'],
      ['600h', '--min-sync-period must be at most 596h31m23.647s, got "600h"'],
    ];
    for (const [bad, msg] of cases) {
      const r = cli(['reconcile', '--kubeconfig', '/nonexistent/kubeconfig', '--min-sync-period', bad]);
      expect(r.status, r.stderr).toBe(2);
      expect(r.stderr).toBe(`kubenode conntrack reconcile: ${msg}\n`);
    }
  });

  it('stats prints the count, the limit and one conntrack -S line per CPU; -o json the library value', () => {
    const count = ns.exec('conntrack', ['-C']).trim();
    const max = readFileSync('/proc/sys/net/netfilter/nf_conntrack_max', 'utf8').trim();
    const r = cli(['stats']);
    expect(r.status, r.stderr).toBe(0);
    const [head, ...cpus] = r.stdout.trimEnd().split('\n');
    expect(head).toBe(`entries ${count} of ${max}`);
    const tools = ns.exec('conntrack', ['-S']).trimEnd().split('\n');
    expect(cpus).toHaveLength(tools.length);
    cpus.forEach((line, i) => {
      expect(line).toMatch(
        /^cpu=\d+ found=\d+ invalid=\d+ insert=\d+ insert_failed=\d+ drop=\d+ early_drop=\d+ error=\d+ search_restart=\d+ clash_resolve=\d+ chain_toolong=\d+$/,
      );
      expect(line.split(' ')[0]).toBe(tools[i]?.trim().split(/\s+/)[0]);
    });
    const json = cli(['stats', '-o', 'json']);
    expect(json.status, json.stderr).toBe(0);
    const v = JSON.parse(json.stdout) as conntrack.TableStats;
    expect(v).toMatchObject({ count: Number(count), max: Number(max) });
    expect(v.perCpu).toHaveLength(tools.length);
    expect(Object.keys(v.total)).toContain('earlyDrop');
  });

  it('reconcile refuses a --conntrack-full-threshold that is not a fraction from 0 to 1 with exit 2', () => {
    const range = (v: string) =>
      `conntrack full threshold must be a fraction of nf_conntrack_max from 0 (off) to 1, got ${v}`;
    const cases: [string, string][] = [
      ['abc', 'not a number'],
      ['', 'not a number'],
      ['1.5', range('1.5')],
      ['-0.1', range('-0.1')],
      ['Infinity', range('inf')],
    ];
    for (const [bad, why] of cases) {
      const r = cli([
        'reconcile',
        '--kubeconfig',
        '/nonexistent/kubeconfig',
        '--conntrack-full-threshold',
        bad,
      ]);
      expect(r.status, r.stderr).toBe(2);
      expect(r.stderr).toBe(
        `kubenode conntrack reconcile: invalid argument ${JSON.stringify(bad)} for "--conntrack-full-threshold" flag: ${why}\n`,
      );
    }
  });

  it('reconcile refuses a --conntrack-resync-period that is not a Go duration with exit 2', () => {
    for (const [bad, why] of [
      ['300', 'time: missing unit in duration "300" (a duration needs a unit: 300ms, 300s)'],
      ['-5m', ''],
    ] as const) {
      const r = cli([
        'reconcile',
        '--kubeconfig',
        '/nonexistent/kubeconfig',
        '--conntrack-resync-period',
        bad,
      ]);
      expect(r.status, r.stderr).toBe(2);
      expect(r.stderr).toContain('--conntrack-resync-period');
      if (why) expect(r.stderr).toContain(why);
    }
  });

  it('rejects an unknown family or output format with exit 2', () => {
    const fam = cli(['list', '--family', 'ipv5']);
    expect(fam.status).toBe(2);
    expect(fam.stderr).toContain('unknown family "ipv5" (want ipv4 or ipv6)');
    const out = cli(['list', '-o', 'xml']);
    expect(out.status).toBe(2);
    expect(out.stderr).toContain('unknown output format "xml"');
  });
});

describe('kubenode conntrack clean', () => {
  it('bad files exit 2 with a clear message and delete nothing', () => {
    const before = ns.conntrackL('ipv4').map(key).sort();
    const svc = file('svc.json', services);
    const eps = file('eps.json', endpoints);
    const cases: [string[], RegExp][] = [
      [
        ['--services', file('broken.json', '[{"name": "x", '), '--endpoints', eps],
        /services file .*broken\.json is not valid JSON\/YAML/,
      ],
      [
        ['--services', join(dir, 'missing.json'), '--endpoints', eps],
        /cannot read services file .*missing\.json/,
      ],
      [
        [
          '--services',
          file('badip.json', [{ ...services[0], clusterIP: '10.96.0.300' }]),
          '--endpoints',
          eps,
        ],
        /invalid IP address "10\.96\.0\.300"/,
      ],
      [
        ['--services', file('badport.json', [{ ...services[0], port: 70000 }]), '--endpoints', eps],
        /port must be in \[\d, 65535\], got 70000/,
      ],
      [
        [
          '--services',
          svc,
          '--endpoints',
          file('badep.json', { 'kube-system/dns:dns': [{ ip: '10.244.0.1', port: -1, serving: true }] }),
        ],
        /port must be in \[\d, 65535\], got -1/,
      ],
      [
        [
          '--services',
          svc,
          '--endpoints',
          file('v6ep.json', { 'kube-system/dns:dns': [{ ip: 'fd00:244::1', port: 5353, serving: true }] }),
        ],
        /fd00:244::1 is not an IPv4 address \(family mismatch\)/,
      ],
      [
        ['--services', svc, '--endpoints', eps, '--family', 'ipv6'],
        /is not an IPv6 address \(family mismatch\)/,
      ],
    ];
    for (const [args, message] of cases) {
      const r = cli(['clean', ...args]);
      expect(r.status, `${args.join(' ')}: ${r.stderr}`).toBe(2);
      expect(r.stderr).toMatch(message);
      expect(r.stderr).toMatch(/^kubenode: /);
      expect(r.stdout).toBe('');
    }
    expect(ns.conntrackL('ipv4').map(key).sort()).toEqual(before);
  });

  it('--kubernetes-version picks the release rules; an unknown one exits 2 and deletes nothing', () => {
    const before = ns.conntrackL('ipv4').map(key).sort();
    // Every endpoint terminating: v1.37 cleans the VIP's flows, v1.36 skipped the service.
    const none = file('none.json', {
      'kube-system/dns:dns': EP.map((ip) => ({ ip, port: 5353, serving: false })),
    });
    const args = ['clean', '--services', file('s-none.json', services), '--endpoints', none, '--dry-run'];
    for (const [release, stale] of [
      [[], 4],
      [['--kubernetes-version', 'v1.37'], 4],
      [['--kubernetes-version', '1.36.3'], 0],
    ] as const) {
      const r = cli([...args, ...release, '-o', 'json']);
      expect(r.status, r.stderr).toBe(0);
      expect(JSON.parse(r.stdout), release.join(' ')).toMatchObject({ listed: 5, stale });
    }
    for (const cmd of [args, ['reconcile', '--kubeconfig', '/nonexistent/kubeconfig']]) {
      const r = cli([...cmd, '--kubernetes-version', 'v1.35']);
      expect(r.status, r.stderr).toBe(2);
      expect(r.stderr).toBe(
        'kubenode: --kubernetes-version: Kubernetes version "v1.35" is not supported: kubenode has the tables of v1.36 to v1.37\n',
      );
    }
    expect(ns.conntrackL('ipv4').map(key).sort()).toEqual(before);
  });

  it('--dry-run reports the stale flows and deletes nothing', () => {
    const before = ns.conntrackL('ipv4').map(key).sort();
    const args = ['--services', file('s.yaml', services), '--endpoints', file('e.yaml', endpoints)];
    const json = cli(['clean', ...args, '--dry-run', '-o', 'json']);
    expect(json.status, json.stderr).toBe(0);
    expect(JSON.parse(json.stdout)).toMatchObject({
      listed: 5,
      stale: 3,
      deleted: 0,
      failed: 0,
      partial: false,
    });
    const text = cli(['clean', ...args, '--dry-run']);
    expect(text.status, text.stderr).toBe(0);
    expect(text.stdout).toMatch(/^listed 5, stale 3, would delete 3 in \d+\.\d{3}s\n$/);
    expect(ns.conntrackL('ipv4').map(key).sort()).toEqual(before);
  });

  it('without --dry-run deletes exactly the stale flows', () => {
    const before = ns.conntrackL('ipv4').map(key);
    const r = cli([
      'clean',
      '--services',
      file('s.json', services),
      '--endpoints',
      file('e.json', endpoints),
    ]);
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^listed 5, stale 3, deleted 3 in /);
    const after = ns.conntrackL('ipv4').map(key);
    expect(before.filter((k) => !after.includes(k)).sort()).toEqual(
      [
        `${VIP}:53 40002 -> ${EP[1]}:5353`,
        `${VIP}:53 40003 -> ${EP[2]}:5353`,
        `${VIP}:53 42002 -> ${VIP}:53`,
      ].sort(),
    );
    expect(after.sort()).toEqual([
      `${VIP}:53 40001 -> ${EP[0]}:5353`,
      '203.0.113.5:9999 43000 -> 203.0.113.5:9999',
    ]);
    // The IPv6 table was not part of an IPv4 pass.
    expect(ns.conntrackL('ipv6')).toHaveLength(1);
    const again = cli([
      'clean',
      '--services',
      join(dir, 's.json'),
      '--endpoints',
      join(dir, 'e.json'),
      '-o',
      'json',
    ]);
    expect(JSON.parse(again.stdout)).toMatchObject({ listed: 2, stale: 0, deleted: 0 });
  });
});

describe('without CAP_NET_ADMIN', () => {
  it('list and clean fail with a permission error (exit 1: a run-time failure), deleting nothing', () => {
    const before = ns.conntrackL('ipv4').map(key).sort();
    const list = cli(['list', '-p', 'udp'], { unprivileged: true });
    expect(list.status, list.stderr).toBe(1);
    expect(list.stderr).toMatch(/^kubenode: .*permission denied \(CAP_NET_ADMIN is required/m);
    const clean = cli(['clean', '--services', join(dir, 's.json'), '--endpoints', join(dir, 'e.json')], {
      unprivileged: true,
    });
    expect(clean.status, clean.stderr).toBe(1);
    expect(clean.stderr).toMatch(/permission denied \(CAP_NET_ADMIN is required/);
    expect(ns.conntrackL('ipv4').map(key).sort()).toEqual(before);
  });
});
