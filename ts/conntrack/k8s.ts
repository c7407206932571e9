// Builds the per-family service/endpoint tables from Service and EndpointSlice objects the way
// kube-proxy's change trackers do (pkg/proxy/serviceport.go, endpointslicecache.go).
import type { V1EndpointSlice, V1Service } from '@kubernetes/client-node';
import { native } from '../native.js';
import type { EndpointEntry, EndpointsTable, IPFamily, ServiceEntry } from './tables.js';

/** Upstream's ServicePortName.String(): `ns/name` plus `:port` when the port has a name. */
export function servicePortName(namespace: string, name: string, port: string | undefined): string {
  return port ? `${namespace}/${name}:${port}` : `${namespace}/${name}`;
}

/** Whether `ip` is an address of `family` by the core's parsing rule (text that is not one is not). */
function isFamily(ip: string | undefined, family: IPFamily): ip is string {
  return ip !== undefined && ip !== '' && native.conntrackIpFamily(ip) === family;
}

/** The service ports the proxier of `family` sees (headless and ExternalName excluded). */
export function serviceEntries(svc: V1Service, family: IPFamily): ServiceEntry[] {
  const spec = svc.spec;
  const ns = svc.metadata?.namespace ?? 'default';
  const name = svc.metadata?.name;
  if (!spec || !name || spec.type === 'ExternalName') return [];
  const clusterIPs = spec.clusterIPs?.length ? spec.clusterIPs : spec.clusterIP ? [spec.clusterIP] : [];
  if (clusterIPs[0] !== undefined && native.conntrackIsHeadless(clusterIPs[0])) return [];
  const clusterIP = clusterIPs.find((ip) => isFamily(ip, family));
  if (!clusterIP) return [];
  const externalIPs = (spec.externalIPs ?? []).filter((ip) => isFamily(ip, family));
  const loadBalancerIPs =
    spec.type === 'LoadBalancer'
      ? (svc.status?.loadBalancer?.ingress ?? [])
          .filter((i) => i.ipMode !== 'Proxy')
          .map((i) => i.ip)
          .filter((ip): ip is string => isFamily(ip, family))
      : [];
  return (spec.ports ?? []).map((p) => ({
    name: servicePortName(ns, name, p.name),
    protocol: (p.protocol ?? 'TCP') as ServiceEntry['protocol'],
    clusterIP,
    port: p.port,
    nodePort: p.nodePort ?? 0,
    externalIPs,
    loadBalancerIPs,
  }));
}

/** The endpoints one EndpointSlice gives one service port. */
export interface SlicePort {
  /** Service port name (`ns/name:port`), the endpoints table key. */
  key: string;
  /** The port's protocol (`TCP` when unset). */
  protocol: string;
  /** Endpoints of the slice for this port. */
  endpoints: EndpointEntry[];
}

/** Endpoints of one EndpointSlice, per service port; only slices of `family`. */
export function sliceEntries(slice: V1EndpointSlice, family: IPFamily): SlicePort[] {
  const svc = slice.metadata?.labels?.['kubernetes.io/service-name'];
  const ns = slice.metadata?.namespace ?? 'default';
  if (!svc || slice.addressType !== family) return [];
  return (slice.ports ?? [])
    .filter((p) => p.port !== undefined && p.port !== null)
    .map((p) => ({
      key: servicePortName(ns, svc, p.name ?? undefined),
      protocol: p.protocol ?? 'TCP',
      endpoints: (slice.endpoints ?? [])
        .filter((e) => e.addresses?.[0] !== undefined && isFamily(e.addresses[0], family))
        .map((e) => ({
          ip: e.addresses[0] as string,
          port: p.port as number,
          // Upstream: a nil serving condition counts as serving.
          serving: e.conditions?.serving ?? true,
        })),
    }));
}

/** Merges the slices of all services into one endpoints table (deduplicated by ip:port). */
export function endpointsTable(slices: Iterable<V1EndpointSlice>, family: IPFamily): EndpointsTable {
  const out = new Map<string, Map<string, EndpointEntry>>();
  for (const s of slices) {
    for (const p of sliceEntries(s, family)) {
      const m = out.get(p.key) ?? new Map<string, EndpointEntry>();
      for (const e of p.endpoints) m.set(`${e.ip}|${e.port}`, e);
      out.set(p.key, m);
    }
  }
  return Object.fromEntries([...out].map(([k, m]) => [k, [...m.values()]]));
}

/** The protocols the core's stale-flow pass cleans (upstream: UDP only), read once. */
let staleFlowProtocols: ReadonlySet<string> | undefined;

/**
 * Service-port keys of a set of slices whose protocol can have stale flows (for
 * ConntrackCleanupRequired). Which protocols those are is the Rust core's rule, the one the
 * cleanup pass itself applies (kube-proxy's: UDP).
 */
export function udpPortKeys(slices: Iterable<V1EndpointSlice>, family: IPFamily): Set<string> {
  staleFlowProtocols ??= new Set(native.conntrackStaleFlowProtocols());
  const keys = new Set<string>();
  for (const s of slices)
    for (const p of sliceEntries(s, family)) if (staleFlowProtocols.has(p.protocol)) keys.add(p.key);
  return keys;
}
