// Table building from Service/EndpointSlice objects and the ConntrackCleanupRequired gate.
// The informer wiring runs against the real API server in apiserver.test.ts.
import type { V1EndpointSlice, V1Service } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { conntrack, KubenodeTypeError } from '../../ts/index.js';
import { native } from '../../ts/native.js';
import { clientNode } from '../../ts/peers.js';

const svc: V1Service = {
  metadata: { namespace: 'kube-system', name: 'dns' },
  spec: {
    type: 'LoadBalancer',
    clusterIPs: ['10.96.0.10', 'fd00::10'],
    externalIPs: ['192.0.2.1', '2001:db8::1'],
    ports: [{ name: 'dns', protocol: 'UDP', port: 53, nodePort: 30053 }],
  },
  status: { loadBalancer: { ingress: [{ ip: '198.51.100.1' }, { ip: '198.51.100.2', ipMode: 'Proxy' }] } },
};

const slice = (
  family: 'IPv4' | 'IPv6',
  eps: [string, boolean | undefined][],
  protocol = 'UDP',
): V1EndpointSlice => ({
  metadata: {
    namespace: 'kube-system',
    name: `dns-${family}`,
    labels: { 'kubernetes.io/service-name': 'dns' },
  },
  addressType: family,
  ports: [{ name: 'dns', protocol, port: 5353 }],
  endpoints: eps.map(([ip, serving]) => ({
    addresses: [ip],
    conditions: serving === undefined ? {} : { serving },
  })),
});

describe('k8s tables', () => {
  it('builds per-family service ports like the proxier', () => {
    expect(conntrack.serviceEntries(svc, 'IPv4')).toEqual([
      {
        name: 'kube-system/dns:dns',
        protocol: 'UDP',
        clusterIP: '10.96.0.10',
        port: 53,
        nodePort: 30053,
        externalIPs: ['192.0.2.1'],
        loadBalancerIPs: ['198.51.100.1'],
      },
    ]);
    expect(conntrack.serviceEntries(svc, 'IPv6')[0]?.clusterIP).toBe('fd00::10');
    expect(conntrack.serviceEntries({ ...svc, spec: { ...svc.spec, clusterIPs: ['None'] } }, 'IPv4')).toEqual(
      [],
    );
  });

  it('keeps only the addresses the cleanup pass parses, and its headless rule', () => {
    // An embedded IPv4 part with a leading zero is not an address to the core: kept, it would
    // fail the whole pass; dropped, the service is cleaned by its other addresses.
    const odd = { ...svc, spec: { ...svc.spec, externalIPs: ['::1.02.3.4', '2001:db8::1'] } };
    expect(conntrack.serviceEntries(odd, 'IPv6')[0]?.externalIPs).toEqual(['2001:db8::1']);
    expect(conntrack.serviceEntries({ ...svc, spec: { ...svc.spec, clusterIPs: [''] } }, 'IPv4')).toEqual([]);
  });

  it('serving nil counts as true; other families are ignored', () => {
    const t = conntrack.endpointsTable(
      [
        slice('IPv4', [
          ['10.244.0.1', undefined],
          ['10.244.0.2', false],
        ]),
        slice('IPv6', [['fd00::5', true]]),
      ],
      'IPv4',
    );
    expect(t).toEqual({
      'kube-system/dns:dns': [
        { ip: '10.244.0.1', port: 5353, serving: true },
        { ip: '10.244.0.2', port: 5353, serving: false },
      ],
    });
  });
});

describe('CleanupGate (ConntrackCleanupRequired)', () => {
  it("counts the slice ports whose protocol the core's pass cleans (UDP only), by the core's rule", () => {
    const cleaned = native.conntrackStaleFlowProtocols();
    expect(cleaned).toEqual(['UDP']);
    for (const protocol of ['UDP', 'TCP', 'SCTP']) {
      const keys = conntrack.udpPortKeys([slice('IPv4', [['10.244.0.1', true]], protocol)], 'IPv4');
      expect([...keys], protocol).toEqual(cleaned.includes(protocol) ? ['kube-system/dns:dns'] : []);
    }
  });

  it('first sync runs when any UDP endpoints exist', () => {
    expect(new conntrack.CleanupGate().take(() => false, true)).toBe(true);
    expect(new conntrack.CleanupGate().take(() => false, false)).toBe(false);
  });

  it('later syncs run only for changed services with UDP ports before or after', () => {
    const g = new conntrack.CleanupGate();
    g.take(() => false, false);
    expect(g.take(() => true, true)).toBe(false); // nothing changed
    g.markChanged('default/web', false);
    expect(g.take(() => false, true)).toBe(false); // a TCP-only service changed
    g.markChanged('kube-system/dns', false);
    expect(g.take((s) => s === 'kube-system/dns', true)).toBe(true); // UDP now
    g.markChanged('kube-system/dns', true);
    expect(g.take(() => false, false)).toBe(true); // UDP before (all endpoints removed)
    expect(g.pending).toBe(0);
  });
});

describe('StaleFlowReconciler options', () => {
  it('checks kubernetesVersion at construction, before any watch or pass', () => {
    const kc = new (clientNode().KubeConfig)();
    expect(
      () => new conntrack.StaleFlowReconciler(kc, { kubernetesVersion: 'v1.38', families: ['IPv4'] }),
    ).toThrow(expect.objectContaining({ code: 'ERR_KUBENODE_UNSUPPORTED', kind: 'kubernetes-version' }));
    expect(() => new conntrack.StaleFlowReconciler(kc, { kubernetesVersion: 37 as never })).toThrow(
      KubenodeTypeError,
    );
    expect(() => new conntrack.StaleFlowReconciler(kc, { kubernetesVersion: 'v1.36' })).not.toThrow();
  });
});
