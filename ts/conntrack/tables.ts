// The compact service/endpoint tables handed to the Rust cleanup pass. Only their JS shape is
// checked here; every rule on their values (addresses, ports, protocols, families) is the
// Rust core's, checked before any netlink work starts.
import { describe, KubenodeTypeError } from '../errors.js';
import type { IPFamily } from '../kube/types.js';

export type { IPFamily };

/** One service port as the proxier sees it (upstream's `ServicePort`), for the cleanup pass. */
export interface ServiceEntry {
  /** Key into the endpoints table (upstream's ServicePortName, e.g. `ns/name:port`). */
  name: string;
  /** L4 protocol; the pass cleans UDP flows only, as kube-proxy's `CleanStaleEntries`. */
  protocol: 'TCP' | 'UDP' | 'SCTP';
  /** `''` or `'None'` for headless services (ignored, as the proxier never sees them). */
  clusterIP: string;
  /** Service port. */
  port: number;
  /** Node port, if the service has one. */
  nodePort?: number;
  /** `spec.externalIPs`. */
  externalIPs?: string[];
  /** Load-balancer VIPs (ingress IPs not in `ipMode: Proxy`). */
  loadBalancerIPs?: string[];
}

/** One endpoint of a service port. */
export interface EndpointEntry {
  /** Endpoint address. */
  ip: string;
  /** Endpoint (target) port. */
  port: number;
  /** EndpointSlice `conditions.serving` (nil means true; pass true then). */
  serving: boolean;
}

/** Endpoints per service, keyed by `ServiceEntry.name`. */
export type EndpointsTable = Record<string, EndpointEntry[]>;

/** JS shape only: the binding checks that it is an integer in range. */
export function assertNumber(what: string, v: unknown): number {
  if (typeof v !== 'number') {
    throw new KubenodeTypeError(`${what} must be a number, got ${describe(v)}`);
  }
  return v;
}

/** Checks the JS shape of the tables (types and required fields) before they cross to Rust. */
export function validateTables(services: unknown, endpoints: unknown): void {
  if (!Array.isArray(services)) {
    throw new KubenodeTypeError(`services must be an array, got ${describe(services)}`);
  }
  if (typeof endpoints !== 'object' || endpoints === null || Array.isArray(endpoints)) {
    throw new KubenodeTypeError(
      `endpoints must be an object keyed by service name, got ${describe(endpoints)}`,
    );
  }
  services.forEach((s: unknown, i) => {
    if (typeof s !== 'object' || s === null) throw new KubenodeTypeError(`services[${i}] must be an object`);
    const svc = s as Partial<ServiceEntry>;
    const what = `services[${i}] (${String(svc.name)})`;
    if (typeof svc.name !== 'string') {
      throw new KubenodeTypeError(`services[${i}].name must be a string, got ${describe(svc.name)}`);
    }
    for (const key of ['protocol', 'clusterIP'] as const) {
      if (typeof svc[key] !== 'string') {
        throw new KubenodeTypeError(`${what}.${key} must be a string, got ${describe(svc[key])}`);
      }
    }
    assertNumber(`${what}.port`, svc.port);
    if (svc.nodePort !== undefined) assertNumber(`${what}.nodePort`, svc.nodePort);
    for (const key of ['externalIPs', 'loadBalancerIPs'] as const) {
      const list = svc[key];
      if (list === undefined) continue;
      if (!Array.isArray(list) || !list.every((ip) => typeof ip === 'string')) {
        throw new KubenodeTypeError(`${what}.${key} must be an array of IPs`);
      }
    }
  });
  for (const [name, list] of Object.entries(endpoints as Record<string, unknown>)) {
    if (!Array.isArray(list))
      throw new KubenodeTypeError(`endpoints[${JSON.stringify(name)}] must be an array`);
    list.forEach((e: unknown, j) => {
      const what = `endpoints[${JSON.stringify(name)}][${j}]`;
      if (typeof e !== 'object' || e === null) throw new KubenodeTypeError(`${what} must be an object`);
      const ep = e as Partial<EndpointEntry>;
      if (typeof ep.ip !== 'string') {
        throw new KubenodeTypeError(`${what}.ip must be a string, got ${describe(ep.ip)}`);
      }
      assertNumber(`${what}.port`, ep.port);
      if (typeof ep.serving !== 'boolean') {
        throw new KubenodeTypeError(`${what}.serving must be a boolean, got ${describe(ep.serving)}`);
      }
    });
  }
}

/** The native table shape (the core ignores other-family external/LB IPs, as upstream does). */
export function nativeServices(services: ServiceEntry[]) {
  return services.map((s) => ({
    name: s.name,
    protocol: s.protocol,
    clusterIp: s.clusterIP,
    port: s.port,
    nodePort: s.nodePort ?? 0,
    externalIps: s.externalIPs ?? [],
    loadBalancerIps: s.loadBalancerIPs ?? [],
  }));
}
