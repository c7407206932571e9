// ServiceCIDR helpers with upstream `pkg/api/servicecidr` semantics (Go `net/netip` parsing),
// computed in Rust (crate kubenode-cidr). List helpers take objects and return those matching,
// in input order, in one native call per list.
import type { ServiceCidrIndex as NativeIndex, ServiceCidrDeleteOutcome } from '../binding.js';
import { assertString, callNative, KubenodeTypeError } from '../errors.js';
import type { IPFamily } from '../kube/types.js';
import { native } from '../native.js';

export type { IPFamily };

/** A parsed CIDR (`netip.Prefix`). */
export interface PrefixInfo {
  /** `IPv4` or `IPv6`. */
  family: IPFamily;
  /** Prefix length. */
  bits: number;
  /** The address as written (host bits kept, like netip.Prefix.Addr). */
  address: string;
  /** The prefix with host bits cleared. */
  masked: string;
  /** `::ffff:a.b.c.d/n` — IPv6 to netip, never inside an IPv4 prefix. */
  ipv4Mapped: boolean;
}

/** Anything with a name and `spec.cidrs`, such as a `V1ServiceCIDR`. */
export interface ServiceCIDRLike {
  /** Object metadata. */
  metadata?: {
    /** The ServiceCIDR's name. */
    name?: string;
  };
  /** The ServiceCIDR's spec. */
  spec?: {
    /** One CIDR per family. */
    cidrs?: string[];
  };
}

/** `netip.ParsePrefix`; throws a `KubenodeError` (`ERR_KUBENODE_PARSE`) on malformed input. */
export function parsePrefix(cidr: string): PrefixInfo {
  assertString('cidr', cidr);
  const p = callNative(() => native.servicecidrParsePrefix(cidr));
  return { ...p, family: p.family };
}

/**
 * The API server's strict check of a `spec.cidrs` entry: returns its messages (empty when
 * valid) — malformed, IPv4-mapped IPv6, host bits set, or not in canonical form.
 */
export function validateCIDR(cidr: string): string[] {
  assertString('cidr', cidr);
  return callNative(() => native.servicecidrValidate(cidr));
}

/** Upstream `PrefixContainsIP`: not the network address, nor the IPv4 broadcast address. */
export function prefixContainsIP(cidr: string, ip: string): boolean {
  assertString('cidr', cidr);
  assertString('ip', ip);
  return callNative(() => native.servicecidrPrefixContainsIp(cidr, ip));
}

/** Upstream `broadcastAddress`: the last address of the prefix. */
export function broadcastAddress(cidr: string): string {
  assertString('cidr', cidr);
  return callNative(() => native.servicecidrBroadcastAddress(cidr));
}

/** Upstream `IPToAddr(net.ParseIP(ip))`: IPv4-mapped IPv6 becomes IPv4; null when invalid. */
export function ipToAddr(ip: string): string | null {
  assertString('ip', ip);
  return callNative(() => native.servicecidrIpToAddr(ip));
}

function cidrsOf(o: ServiceCIDRLike): string[] {
  const c = o?.spec?.cidrs;
  return Array.isArray(c) ? c.filter((x): x is string => typeof x === 'string') : [];
}

function matching<T extends ServiceCIDRLike>(
  kind: 'overlaps' | 'containsPrefix' | 'containsAddress',
  list: readonly T[],
  query: string,
): T[] {
  if (!Array.isArray(list)) throw new KubenodeTypeError('serviceCIDRs must be an array');
  assertString(kind === 'containsAddress' ? 'address' : 'prefix', query);
  const idx = callNative(() => native.servicecidrMatch(kind, list.map(cidrsOf), query));
  return idx.map((i) => list[i] as T);
}

/** Upstream `OverlapsPrefix`: the ServiceCIDRs with a CIDR sharing an address with `prefix`. */
export function overlapsPrefix<T extends ServiceCIDRLike>(serviceCIDRs: readonly T[], prefix: string): T[] {
  return matching('overlaps', serviceCIDRs, prefix);
}

/** Upstream `ContainsPrefix`: the ServiceCIDRs with a CIDR equal to or enclosing `prefix`. */
export function containsPrefix<T extends ServiceCIDRLike>(serviceCIDRs: readonly T[], prefix: string): T[] {
  return matching('containsPrefix', serviceCIDRs, prefix);
}

/** Upstream `ContainsAddress`: the ServiceCIDRs with a CIDR that `PrefixContainsIP(address)`. */
export function containsAddress<T extends ServiceCIDRLike>(serviceCIDRs: readonly T[], address: string): T[] {
  return matching('containsAddress', serviceCIDRs, address);
}

/**
 * `containedInOther`: every parsable CIDR is equal to or inside a CIDR of another ServiceCIDR;
 * `blocked`: an IPAddress would be left without a ServiceCIDR; `noOrphans`: no IPAddress
 * depends on this ServiceCIDR alone.
 */
export type DeleteCheckOutcome = `${ServiceCidrDeleteOutcome}`;

/** Result of `CIDRIndex.canDelete` (upstream `canDeleteCIDR`): deletable unless `blocked`. */
export interface DeleteCheck {
  /** Why the ServiceCIDR may or may not go. */
  outcome: DeleteCheckOutcome;
  /** The IPAddress that would be orphaned (`blocked` only). */
  ip?: string;
  /** IPAddress names that are not addresses (skipped, as upstream does). */
  unparsable: string[];
}

/** An IPAddress inside a ServiceCIDR, as `CIDRIndex.holders` sees it. */
export interface Holder {
  /** Position in the `ips` argument. */
  index: number;
  /** The address, as upstream prints it. */
  ip: string;
  /** Sorted names of the other ServiceCIDRs containing it; empty: it blocks the deletion. */
  takenOverBy: string[];
}

/**
 * ServiceCIDR names indexed by CIDR: a binary trie per family in Rust, so `containing(ip)`
 * costs O(prefix bits) rather than a scan of every ServiceCIDR. Results are sorted names.
 */
export class CIDRIndex {
  readonly #n: NativeIndex;

  constructor() {
    this.#n = callNative(() => new native.ServiceCidrIndex());
  }

  /** Sets the CIDRs of `name`; returns the CIDRs skipped as unparsable. */
  upsert(name: string, cidrs: readonly string[]): string[] {
    assertString('name', name);
    if (!Array.isArray(cidrs) || !cidrs.every((c) => typeof c === 'string')) {
      throw new KubenodeTypeError('cidrs must be an array of strings');
    }
    return callNative(() => this.#n.upsert(name, [...cidrs]));
  }

  /** Loads many entries in one native call; returns how many CIDRs were skipped. */
  upsertMany(entries: readonly { name: string; cidrs: readonly string[] }[]): number {
    if (!Array.isArray(entries)) throw new KubenodeTypeError('entries must be an array');
    const copy = entries.map((e, i) => {
      if (typeof e?.name !== 'string') throw new KubenodeTypeError(`entries[${i}].name must be a string`);
      if (!Array.isArray(e.cidrs) || !e.cidrs.every((c: unknown) => typeof c === 'string')) {
        throw new KubenodeTypeError(`entries[${i}].cidrs must be an array of strings`);
      }
      return { name: e.name, cidrs: [...e.cidrs] };
    });
    return callNative(() => this.#n.upsertMany(copy));
  }

  /** Removes `name`; false when it was not indexed. */
  remove(name: string): boolean {
    assertString('name', name);
    return callNative(() => this.#n.remove(name));
  }

  /** True when `name` is indexed. */
  has(name: string): boolean {
    assertString('name', name);
    return callNative(() => this.#n.has(name));
  }

  /** Number of names indexed. */
  get size(): number {
    return this.#n.size;
  }

  /** Names whose CIDRs contain `ip` (upstream `ContainsAddress`). Throws on a malformed IP. */
  containing(ip: string): string[] {
    assertString('ip', ip);
    return callNative(() => this.#n.containing(ip));
  }

  /** Names with a CIDR equal to or enclosing `prefix` (upstream `ContainsPrefix`). */
  containingPrefix(prefix: string): string[] {
    assertString('prefix', prefix);
    return callNative(() => this.#n.containingPrefix(prefix));
  }

  /** Names with a CIDR overlapping `prefix` (upstream `OverlapsPrefix`). */
  overlapping(prefix: string): string[] {
    assertString('prefix', prefix);
    return callNative(() => this.#n.overlapping(prefix));
  }

  /**
   * Upstream `canDeleteCIDR` for ServiceCIDR `name` with `cidrs`, over the IPAddresses managed
   * by the allocator: `ips[i]` carries family label `families[i]` (undefined when absent).
   */
  canDelete(
    name: string,
    cidrs: readonly string[],
    ips: readonly { name: string; family: string | undefined }[],
  ): DeleteCheck {
    const r = callNative(() => this.#n.canDelete(name, [...cidrs], ...scanArgs(ips)));
    return {
      outcome: r.outcome,
      ...(r.ip ? { ip: r.ip } : {}),
      unparsable: r.unparsable,
    };
  }

  /**
   * Every IPAddress `canDelete` weighs that lies inside ServiceCIDR `name`, with the other
   * ServiceCIDRs containing each: the ones no other ServiceCIDR takes over block the deletion.
   */
  holders(
    name: string,
    cidrs: readonly string[],
    ips: readonly { name: string; family: string | undefined }[],
  ): {
    /** The addresses inside `name`, in `ips` order. */
    holders: Holder[];
    /** Addresses of `ips` that do not parse, left out as upstream leaves them out. */
    unparsable: string[];
  } {
    assertString('name', name);
    return callNative(() => this.#n.holders(name, [...cidrs], ...scanArgs(ips)));
  }
}

/** The binding's parallel arrays for an IPAddress scan. */
function scanArgs(
  ips: readonly { name: string; family: string | undefined }[],
): [string[], (string | null)[]] {
  if (!Array.isArray(ips)) throw new KubenodeTypeError('ips must be an array');
  // null: the label is absent, which never matches a selector value, not even the empty
  // "unknown" family of an unparsable CIDR.
  return [ips.map((i) => i.name), ips.map((i) => i.family ?? null)];
}
