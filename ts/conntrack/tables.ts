// Validation of the compact service/endpoint tables handed to the Rust cleanup pass: every IP,
// port and family is checked here so a bad entry fails with a clear, typed error before any
// netlink work starts.
import ipaddr from 'ipaddr.js';
import { describe, KubenodeRangeError, KubenodeTypeError } from '../errors.js';
import { ConntrackFamilyError } from './errors.js';

export type IPFamily = 'IPv4' | 'IPv6';

export interface ServiceEntry {
  /** Key into the endpoints table (upstream's ServicePortName, e.g. `ns/name:port`). */
  name: string;
  protocol: 'TCP' | 'UDP' | 'SCTP';
  /** `''` or `'None'` for headless services (ignored, as the proxier never sees them). */
  clusterIP: string;
  port: number;
  nodePort?: number;
  externalIPs?: string[];
  loadBalancerIPs?: string[];
}

export interface EndpointEntry {
  ip: string;
  port: number;
  /** EndpointSlice `conditions.serving` (nil means true; pass true then). */
  serving: boolean;
}

export type EndpointsTable = Record<string, EndpointEntry[]>;

export function assertFamily(family: unknown): IPFamily {
  if (family !== 'IPv4' && family !== 'IPv6') {
    throw new KubenodeTypeError(`family must be "IPv4" or "IPv6", got ${describe(family)}`);
  }
  return family;
}

/** Parses an IP; returns its family. Zone suffixes and CIDRs are rejected. */
// Dotted decimal with no leading zeros and octets <= 255: exactly what `isValidFourPartDecimal`
// accepts, checked without ipaddr's general parser so 100,000-service tables load quickly.
const IPV4_DOTTED = /^(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(?:\.(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}$/;

export function ipFamilyOf(what: string, ip: unknown): IPFamily {
  if (typeof ip === 'string' && IPV4_DOTTED.test(ip)) return 'IPv4';
  if (typeof ip !== 'string' || !ipaddr.isValid(ip) || ip.includes('%') || ip.includes('/')) {
    throw new KubenodeTypeError(`${what}: invalid IP address ${describe(ip)}`);
  }
  if (ipaddr.IPv4.isValidFourPartDecimal(ip)) return 'IPv4';
  if (ipaddr.IPv6.isValid(ip)) return 'IPv6';
  throw new KubenodeTypeError(`${what}: invalid IP address ${describe(ip)} (IPv4 needs four decimal parts)`);
}

export function assertPort(what: string, v: unknown, min = 0): number {
  if (typeof v !== 'number' || !Number.isInteger(v)) {
    throw new KubenodeTypeError(`${what}: port must be an integer, got ${describe(v)}`);
  }
  if (v < min || v > 65535) {
    throw new KubenodeRangeError(`${what}: port must be in [${min}, 65535], got ${v}`);
  }
  return v;
}

function sameFamily(what: string, ip: unknown, family: IPFamily): void {
  const f = ipFamilyOf(what, ip);
  if (f !== family) {
    throw new ConntrackFamilyError(`${what}: ${String(ip)} is not an ${family} address (family mismatch)`);
  }
}

/**
 * Checks the tables for one family. Cluster IPs and endpoints of UDP service ports must be of `family` (tables are
 * per family, like the proxier's); external and load-balancer IPs of the other family are
 * allowed and ignored, as upstream filters them per family.
 */
export function validateTables(family: IPFamily, services: unknown, endpoints: unknown): void {
  if (!Array.isArray(services)) {
    throw new KubenodeTypeError(`services must be an array, got ${describe(services)}`);
  }
  if (typeof endpoints !== 'object' || endpoints === null || Array.isArray(endpoints)) {
    throw new KubenodeTypeError(
      `endpoints must be an object keyed by service name, got ${describe(endpoints)}`,
    );
  }
  const udpNames = new Set<string>();
  services.forEach((s: unknown, i) => {
    if (typeof s !== 'object' || s === null) throw new KubenodeTypeError(`services[${i}] must be an object`);
    const svc = s as Partial<ServiceEntry>;
    const what = `services[${i}] (${String(svc.name)})`;
    if (typeof svc.name !== 'string' || svc.name === '') {
      throw new KubenodeTypeError(`services[${i}].name must be a non-empty string`);
    }
    if (svc.protocol !== 'TCP' && svc.protocol !== 'UDP' && svc.protocol !== 'SCTP') {
      throw new KubenodeTypeError(`${what}.protocol must be TCP, UDP or SCTP, got ${describe(svc.protocol)}`);
    }
    if (typeof svc.clusterIP !== 'string') {
      throw new KubenodeTypeError(`${what}.clusterIP must be a string, got ${describe(svc.clusterIP)}`);
    }
    // Only UDP service ports take part in the cleanup (upstream ignores the rest entirely).
    if (svc.clusterIP !== '' && svc.clusterIP !== 'None') {
      if (svc.protocol === 'UDP') sameFamily(`${what}.clusterIP`, svc.clusterIP, family);
      else ipFamilyOf(`${what}.clusterIP`, svc.clusterIP);
    }
    if (svc.protocol === 'UDP') udpNames.add(svc.name);
    assertPort(`${what}.port`, svc.port, 1);
    if (svc.nodePort !== undefined && svc.nodePort !== 0) assertPort(`${what}.nodePort`, svc.nodePort, 1);
    for (const key of ['externalIPs', 'loadBalancerIPs'] as const) {
      const list = svc[key];
      if (list === undefined) continue;
      if (!Array.isArray(list)) throw new KubenodeTypeError(`${what}.${key} must be an array of IPs`);
      list.forEach((ip, j) => {
        ipFamilyOf(`${what}.${key}[${j}]`, ip);
      });
    }
  });
  for (const [name, list] of Object.entries(endpoints as Record<string, unknown>)) {
    if (!Array.isArray(list))
      throw new KubenodeTypeError(`endpoints[${JSON.stringify(name)}] must be an array`);
    list.forEach((e: unknown, j) => {
      const what = `endpoints[${JSON.stringify(name)}][${j}]`;
      if (typeof e !== 'object' || e === null) throw new KubenodeTypeError(`${what} must be an object`);
      const ep = e as Partial<EndpointEntry>;
      if (udpNames.has(name)) sameFamily(`${what}.ip`, ep.ip, family);
      else ipFamilyOf(`${what}.ip`, ep.ip);
      assertPort(`${what}.port`, ep.port, 1);
      if (typeof ep.serving !== 'boolean') {
        throw new KubenodeTypeError(`${what}.serving must be a boolean, got ${describe(ep.serving)}`);
      }
    });
  }
}

/** The native table shape, with other-family external/LB IPs dropped (upstream filters them). */
export function forFamily(family: IPFamily, services: ServiceEntry[]) {
  const keep = (ips: string[] | undefined) => (ips ?? []).filter((ip) => ipFamilyOf('ip', ip) === family);
  return services.map((s) => ({
    name: s.name,
    protocol: s.protocol,
    clusterIp: s.clusterIP,
    port: s.port,
    nodePort: s.nodePort ?? 0,
    externalIps: keep(s.externalIPs),
    loadBalancerIps: keep(s.loadBalancerIPs),
  }));
}
