// `kubenode conntrack clean` fed with `kubectl get services|endpointslices -A -o json|yaml`
// output (v1 List, ServiceList, EndpointSliceList), run as a process inside a throwaway
// namespace with nftables DNAT and real UDP flows; `conntrack -L` is the reference.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import YAML from 'yaml';
import { type CtEntry, dnsFlows, TestNetns, teardown } from './netns.js';

const main = join(import.meta.dirname, '..', '..', 'ts', 'cli', 'main.ts');
const tsx = join(import.meta.dirname, '..', '..', 'node_modules', '.bin', 'tsx');
vi.setConfig({ testTimeout: 180_000 });
const VIP = '10.96.0.10';
const EP = ['10.244.0.1', '10.244.0.2', '10.244.0.3'];

let ns: TestNetns;
let dir: string;

function cli(args: string[]) {
  const r = spawnSync('ip', ['netns', 'exec', ns.name, tsx, main, 'conntrack', 'clean', ...args], {
    encoding: 'utf8',
    timeout: 60_000,
  });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

function file(name: string, content: unknown): string {
  const p = join(dir, name);
  writeFileSync(p, name.endsWith('.yaml') ? YAML.stringify(content) : JSON.stringify(content, null, 2));
  return p;
}

const key = (e: CtEntry) => `${e.origDst}:${e.dport} ${e.sport} -> ${e.replySrc}:${e.replySport}`;

// Shaped like `kubectl get services -A -o json`: a generic List whose items carry kind/apiVersion.
const dnsService = {
  apiVersion: 'v1',
  kind: 'Service',
  metadata: { name: 'dns', namespace: 'kube-system', uid: '1f0c', resourceVersion: '42' },
  spec: {
    type: 'ClusterIP',
    clusterIP: VIP,
    clusterIPs: [VIP],
    ipFamilies: ['IPv4'],
    ports: [
      { name: 'dns', protocol: 'UDP', port: 53, targetPort: 5353 },
      { name: 'dns-tcp', protocol: 'TCP', port: 53, targetPort: 5353 },
    ],
  },
  status: { loadBalancer: {} },
};
const headless = {
  apiVersion: 'v1',
  kind: 'Service',
  metadata: { name: 'db', namespace: 'default' },
  spec: { clusterIP: 'None', clusterIPs: ['None'], ports: [{ protocol: 'UDP', port: 9 }] },
};
const servicesList = {
  apiVersion: 'v1',
  kind: 'List',
  metadata: { resourceVersion: '' },
  items: [dnsService, headless],
};

// EP[1] is gone and EP[2] terminating: their flows (and the un-DNATed one) are stale.
const dnsSlice = {
  apiVersion: 'discovery.k8s.io/v1',
  kind: 'EndpointSlice',
  metadata: {
    name: 'dns-x7k2p',
    namespace: 'kube-system',
    labels: { 'kubernetes.io/service-name': 'dns', 'endpointslice.kubernetes.io/managed-by': 'x' },
  },
  addressType: 'IPv4',
  endpoints: [
    { addresses: [EP[0]], conditions: { ready: true, serving: true, terminating: false } },
    { addresses: [EP[2]], conditions: { ready: false, serving: false, terminating: true } },
  ],
  ports: [
    { name: 'dns', protocol: 'UDP', port: 5353 },
    { name: 'dns-tcp', protocol: 'TCP', port: 5353 },
  ],
};
const slicesList = { apiVersion: 'v1', kind: 'List', metadata: { resourceVersion: '' }, items: [dnsSlice] };

beforeAll(() => {
  ns = new TestNetns('kn-fleet');
  dir = mkdtempSync(join(tmpdir(), 'kubenode-ct-lists-'));
  dnsFlows(ns, VIP, EP);
});

afterAll(() => teardown(ns, dir));

describe('kubenode conntrack clean with kubectl Lists', () => {
  it('a List of the wrong kind exits 2 with a clear message and deletes nothing', () => {
    const before = ns.conntrackL('ipv4').map(key).sort();
    const svc = file('svc.json', servicesList);
    const eps = file('eps.json', slicesList);
    const cases: [string[], string][] = [
      [
        ['--services', eps, '--endpoints', eps],
        'kubenode: services: List.items[0] is a "EndpointSlice", not a Service (wrong file for --services?)\n',
      ],
      [
        [
          '--services',
          svc,
          '--endpoints',
          file('podlist.yaml', { apiVersion: 'v1', kind: 'PodList', items: [] }),
        ],
        'kubenode: endpoints: a PodList is not a list of EndpointSlices (want List or EndpointSliceList, as from kubectl get endpointslices -A -o json)\n',
      ],
      [
        [
          '--services',
          file('svclist.json', { ...servicesList, kind: 'ServiceList', items: {} }),
          '--endpoints',
          eps,
        ],
        'kubenode: services: ServiceList.items must be an array, got object\n',
      ],
    ];
    for (const [args, message] of cases) {
      const r = cli(args);
      expect(r.status, `${args.join(' ')}: ${r.stderr}`).toBe(2);
      expect(r.stderr).toBe(message);
      expect(r.stdout).toBe('');
    }
    expect(ns.conntrackL('ipv4').map(key).sort()).toEqual(before);
  });

  it('YAML Lists (typed ServiceList/EndpointSliceList) select the stale flows in a dry run', () => {
    const before = ns.conntrackL('ipv4').map(key).sort();
    // Typed lists, as the API returns them, carry no kind on their items.
    const strip = ({ kind: _k, apiVersion: _a, ...rest }: Record<string, unknown>) => rest;
    const r = cli([
      '--services',
      file('svc.yaml', { apiVersion: 'v1', kind: 'ServiceList', items: servicesList.items.map(strip) }),
      '--endpoints',
      file('eps.yaml', {
        apiVersion: 'discovery.k8s.io/v1',
        kind: 'EndpointSliceList',
        items: slicesList.items.map(strip),
      }),
      '--dry-run',
      '-o',
      'json',
    ]);
    expect(r.status, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ listed: 5, stale: 3, deleted: 0, failed: 0 });
    expect(ns.conntrackL('ipv4').map(key).sort()).toEqual(before);
  });

  it('JSON Lists delete exactly the stale flows', () => {
    const r = cli(['--services', file('s.json', servicesList), '--endpoints', file('e.json', slicesList)]);
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^listed 5, stale 3, deleted 3 in /);
    expect(ns.conntrackL('ipv4').map(key).sort()).toEqual([
      `${VIP}:53 40001 -> ${EP[0]}:5353`,
      '203.0.113.5:9999 43000 -> 203.0.113.5:9999',
    ]);
  });
});
