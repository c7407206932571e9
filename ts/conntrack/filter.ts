// The JS shape of a flow filter (`list`, `deleteMatching`, `flush`). Only types and known keys
// are checked here; addresses, CIDRs, ranges and the family are the Rust core's rules.
import type { ConntrackListFilter } from '../binding.js';
import { assertString, describe, KubenodeTypeError } from '../errors.js';
import { assertNumber } from './tables.js';

/** Protocol name (any case) or IP protocol number. */
export type FilterProtocol = 'udp' | 'tcp' | 'sctp' | 'UDP' | 'TCP' | 'SCTP' | number;

/** Fields of one direction of a flow; addresses are an IP (`10.0.0.1`) or a CIDR (`10.0.0.0/8`). */
export interface DirectionFilter {
  /** Source address or CIDR. */
  src?: string;
  /** Destination address or CIDR. */
  dst?: string;
  /** Source port (needs `protocol`). */
  srcPort?: number;
  /** Destination port (needs `protocol`). */
  dstPort?: number;
}

/**
 * Which flows an operation is about: every given field must match; an empty filter matches
 * every flow of the family. The kernel filters protocol, ports, single addresses, zone and
 * mark; CIDRs and labels are filtered by the core after the dump.
 */
export interface FlowFilter {
  /** Protocol of the flow. */
  protocol?: FilterProtocol;
  /** Original direction (as the client sent it). */
  orig?: DirectionFilter;
  /** Reply direction (its source is the DNAT target). */
  reply?: DirectionFilter;
  /** Conntrack zone. */
  zone?: number;
  /** `mark & mask == value`; `mask` defaults to every bit. */
  mark?: {
    /** The mark's bits under `mask`. */
    value: number;
    /** The bits compared (default: all 32). */
    mask?: number;
  };
  /** Connection labels (bit n is label n): `labels & mask == value`; `mask` defaults to every bit. */
  labels?: {
    /** The label bits under `mask`. */
    value: bigint;
    /** The bits compared (default: all 128). */
    mask?: bigint;
  };
}

const TOP_KEYS = new Set(['protocol', 'orig', 'reply', 'zone', 'mark', 'labels', 'dstIP', 'dstPort']);
const DIRECTION_KEYS = new Set(['src', 'dst', 'srcPort', 'dstPort']);

function object(what: string, v: unknown, keys: Set<string>): Record<string, unknown> {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) {
    throw new KubenodeTypeError(`${what} must be an object, got ${describe(v)}`);
  }
  for (const k of Object.keys(v)) {
    if (!keys.has(k)) throw new KubenodeTypeError(`${what} has an unknown field ${JSON.stringify(k)}`);
  }
  return v as Record<string, unknown>;
}

function direction(what: string, v: unknown): ConntrackListFilter['orig'] {
  if (v === undefined) return undefined;
  const d = object(what, v, DIRECTION_KEYS);
  return {
    ...(d.src !== undefined ? { src: assertString(`${what}.src`, d.src) } : {}),
    ...(d.dst !== undefined ? { dst: assertString(`${what}.dst`, d.dst) } : {}),
    ...(d.srcPort !== undefined ? { srcPort: assertNumber(`${what}.srcPort`, d.srcPort) } : {}),
    ...(d.dstPort !== undefined ? { dstPort: assertNumber(`${what}.dstPort`, d.dstPort) } : {}),
  };
}

function masked<T extends 'number' | 'bigint'>(what: string, v: unknown, type: T) {
  const m = object(what, v, new Set(['value', 'mask']));
  for (const k of ['value', 'mask'] as const) {
    if ((k === 'value' || m[k] !== undefined) && typeof m[k] !== type) {
      throw new KubenodeTypeError(`${what}.${k} must be a ${type}, got ${describe(m[k])}`);
    }
  }
  return m;
}

/**
 * Checks the JS shape of `filter` (`what` names it in messages) and returns the binding's
 * shape. `dstIP`/`dstPort` are the older spelling of `orig.dst`/`orig.dstPort`.
 */
export function toNativeFilter(filter: unknown, what = 'filter'): ConntrackListFilter {
  const f = object(what, filter ?? {}, TOP_KEYS);
  const { protocol } = f;
  if (protocol !== undefined && typeof protocol !== 'string' && typeof protocol !== 'number') {
    throw new KubenodeTypeError(`protocol must be a string or a number, got ${describe(protocol)}`);
  }
  const out: ConntrackListFilter = {};
  if (protocol !== undefined) out.protocol = protocol;
  if (f.dstIP !== undefined) out.dstIp = assertString('dstIP', f.dstIP);
  if (f.dstPort !== undefined) out.dstPort = assertNumber('dstPort', f.dstPort);
  const orig = direction(`${what}.orig`, f.orig);
  if (orig) out.orig = orig;
  const reply = direction(`${what}.reply`, f.reply);
  if (reply) out.reply = reply;
  if (f.zone !== undefined) out.zone = assertNumber(`${what}.zone`, f.zone);
  if (f.mark !== undefined) {
    const m = masked(`${what}.mark`, f.mark, 'number');
    out.mark = { value: m.value as number, ...(m.mask !== undefined ? { mask: m.mask as number } : {}) };
  }
  if (f.labels !== undefined) {
    const l = masked(`${what}.labels`, f.labels, 'bigint');
    out.labels = { value: l.value as bigint, ...(l.mask !== undefined ? { mask: l.mask as bigint } : {}) };
  }
  return out;
}
