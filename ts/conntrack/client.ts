// The Conntrack handle: one persistent ctnetlink socket owned by the Rust core. Every netlink
// operation runs off the JS thread and returns a Promise.
import type {
  ConntrackBatchReport,
  ConntrackCpuStats,
  ConntrackFilterDeleteReport,
  ConntrackStats,
  ConntrackStatsTotal,
  Conntrack as NativeConntrack,
} from '../binding.js';
import { assertString, describe, KubenodeTypeError, outcomeValue } from '../errors.js';
import { native } from '../native.js';
import { ConntrackClosedError, conntrackError } from './errors.js';
import { type FilterProtocol, type FlowFilter, toNativeFilter } from './filter.js';
import { assertNumber, type IPFamily } from './tables.js';

/** One direction of a flow. */
export interface FlowTuple {
  /** Source address (IPv4 or IPv6 text). */
  srcIP: string;
  /** Destination address (IPv4 or IPv6 text). */
  dstIP: string;
  /** Source port (0 for protocols without ports). */
  srcPort: number;
  /** Destination port (0 for protocols without ports). */
  dstPort: number;
}

/** One conntrack entry, upstream's `netlink.ConntrackFlow` in the fields kube-proxy uses. */
export interface Flow {
  /** L4 protocol number (17 = UDP, 6 = TCP, 132 = SCTP). */
  protocol: number;
  /** Original direction. */
  forward: FlowTuple;
  /** Reply direction (its source is the DNAT target). */
  reverse: FlowTuple;
  /** Conntrack zone (0 by default). */
  zone: number;
  /** Conntrack ID; deletes are guarded by it when present. */
  id?: number;
  /** Connection mark (`ct mark`). */
  mark: number;
  /** Status bits (the kernel's `IPS_*` flags). */
  status: number;
  /** Seconds left. */
  timeout: number;
  /** Connection labels (bit n is label n); absent when the flow has none. */
  labels?: bigint;
}

/** Filter of `Conntrack.list`; empty lists every entry of the family. */
export interface ListOptions extends FlowFilter {
  /** Protocol name or number; filtered in the kernel and again in user space. */
  protocol?: FilterProtocol;
  /** Original destination IP: the older spelling of `orig.dst`. */
  dstIP?: string;
  /** Original destination port (needs `protocol`): the older spelling of `orig.dstPort`. */
  dstPort?: number;
}

/** Result of `Conntrack.list`. */
export interface ListResult {
  /** The entries that match. */
  flows: Flow[];
  /** The dump stayed interrupted after 5 attempts; the list may be incomplete. */
  partial: boolean;
  /** Dump attempts made (more than 1 when the kernel interrupted a dump). */
  attempts: number;
}

/** Result of `Conntrack.delete`. */
export interface DeleteResult {
  /** Deleted now or already gone (ENOENT), as kube-proxy counts. */
  deleted: number;
  /** Of `deleted`, the flows that were already gone. */
  notFound: number;
  /** Flows the kernel refused to delete. */
  failed: number;
  /** The first failure's message, when any failed. */
  firstError?: string;
}

/** Result of `Conntrack.deleteMatching`, `flush` and `purgeIps`. */
export interface FilterDeleteResult {
  /**
   * `kernel`: one flush request, the kernel walked the table; `dumpDelete`: a filtered dump,
   * then deletes of the matches by exact tuple.
   */
  path: 'kernel' | 'dumpDelete';
  /** Flows the dumps matched (0 on the kernel path). */
  matched: number;
  /**
   * Deleted now or already gone; absent on the kernel path, where the kernel reports no count
   * (and the table's entry count is no measure: a flow a queued packet still holds is counted
   * until it is freed).
   */
  deleted?: number;
  /** Of `deleted`, the flows already gone. */
  notFound: number;
  /** Flows the kernel refused to delete. */
  failed: number;
  /** The first failure's message, when any failed. */
  firstError?: string;
  /** A dump stayed interrupted: flows may have been missed. */
  partial: boolean;
}

/** Options of `Conntrack.open`. */
export interface OpenOptions {
  /** Network namespace file, e.g. `/var/run/netns/NAME`; default: this process's. */
  netns?: string;
}

/** Per-CPU counters of one namespace's conntrack (`conntrack -S`); each wraps at 2^32. */
export type CpuStats = ConntrackCpuStats;
/** The per-CPU counters summed. */
export type StatsTotal = ConntrackStatsTotal;
/**
 * Result of `Conntrack.stats`: `count` entries of at most `max` (`nf_conntrack_max`, 0 for no
 * limit), the per-CPU counters, and their sums.
 */
export type TableStats = ConntrackStats;

/** Live progress of a cleanup pass (`cleanStaleEntries`) running on a handle. */
export interface Progress {
  /** What the pass is doing now; `idle` when none runs. */
  phase: 'idle' | 'listing' | 'deleting';
  /** Entries listed so far. */
  listed: number;
  /** Listed entries found stale so far. */
  stale: number;
  /** Stale entries deleted so far. */
  deleted: number;
}

type NativeFlow = Parameters<NativeConntrack['delete']>[1][number];

/** JS shape only; the binding checks integers and ranges, the core addresses and families. */
export function toNativeFlow(f: Flow, i: number): NativeFlow {
  if (typeof f !== 'object' || f === null) throw new KubenodeTypeError(`flows[${i}] must be an object`);
  const tuple = (dir: 'forward' | 'reverse') => {
    const t = f[dir];
    if (typeof t !== 'object' || t === null)
      throw new KubenodeTypeError(`flows[${i}].${dir} must be an object`);
    for (const k of ['srcIP', 'dstIP'] as const) {
      if (typeof t[k] !== 'string') {
        throw new KubenodeTypeError(`flows[${i}].${dir}.${k} must be a string, got ${describe(t[k])}`);
      }
    }
    return {
      srcIp: t.srcIP,
      dstIp: t.dstIP,
      srcPort: assertNumber(`flows[${i}].${dir}.srcPort`, t.srcPort),
      dstPort: assertNumber(`flows[${i}].${dir}.dstPort`, t.dstPort),
    };
  };
  return {
    protocol: assertNumber(`flows[${i}].protocol`, f.protocol),
    forward: tuple('forward'),
    reverse: tuple('reverse'),
    zone: assertNumber(`flows[${i}].zone`, f.zone ?? 0),
    id: f.id === undefined ? undefined : assertNumber(`flows[${i}].id`, f.id),
    mark: assertNumber(`flows[${i}].mark`, f.mark ?? 0),
    status: assertNumber(`flows[${i}].status`, f.status ?? 0),
    timeout: assertNumber(`flows[${i}].timeout`, f.timeout ?? 0),
  };
}

/** A flow as the binding reports it, in the shape `Conntrack.list` returns. */
export function fromNativeFlow(f: NativeFlow): Flow {
  return {
    protocol: f.protocol,
    forward: {
      srcIP: f.forward.srcIp ?? '',
      dstIP: f.forward.dstIp ?? '',
      srcPort: f.forward.srcPort,
      dstPort: f.forward.dstPort,
    },
    reverse: {
      srcIP: f.reverse.srcIp ?? '',
      dstIP: f.reverse.dstIp ?? '',
      srcPort: f.reverse.srcPort,
      dstPort: f.reverse.dstPort,
    },
    zone: f.zone,
    ...(f.id === undefined || f.id === null ? {} : { id: f.id }),
    mark: f.mark,
    status: f.status,
    timeout: f.timeout,
    ...(f.labels === undefined || f.labels === null ? {} : { labels: f.labels }),
  };
}

/**
 * Runs one batched per-flow operation of the handle (`delete`, or the test hook `create`):
 * checks the JS shape of `flows`, crosses once, and throws the outcome's error.
 */
export async function flowBatch(
  ct: Conntrack,
  op: 'delete' | 'create',
  family: IPFamily,
  flows: Flow[],
): Promise<ConntrackBatchReport> {
  assertString('family', family);
  if (!Array.isArray(flows)) throw new KubenodeTypeError(`flows must be an array, got ${describe(flows)}`);
  const nf = flows.map((f, i) => toNativeFlow(f, i));
  let task: ReturnType<NativeConntrack['delete']>;
  try {
    task = handleOf(ct)[op](family, nf);
  } catch (e) {
    throw conntrackError(e);
  }
  return outcomeValue(await task, 'conntrack');
}

/**
 * The raw handle of an open `Conntrack` (throws ConntrackClosedError once closed). Internal:
 * `cleanStaleEntries` and the test hooks in `testing.ts` use it; the package does not export it.
 */
export let handleOf: (ct: Conntrack) => NativeConntrack;

/**
 * A ctnetlink handle (kube-proxy's `conntrack.Interface`): one persistent netlink socket, opened
 * with `Conntrack.open`; every operation runs off the JS thread. Failures are
 * `ConntrackPermissionError` (`ERR_KUBENODE_PERMISSION`, no CAP_NET_ADMIN),
 * `ConntrackUnavailableError` (`ERR_KUBENODE_UNSUPPORTED`, no ctnetlink),
 * `ConntrackFamilyError` (`ERR_KUBENODE_INVALID_ARG`, wrong IP family) and, once closed,
 * `ConntrackClosedError` (`ERR_KUBENODE_IO`).
 */
export class Conntrack {
  readonly #n: NativeConntrack;
  #closed = false;

  static {
    handleOf = (ct) => {
      if (ct.#closed) throw new ConntrackClosedError();
      return ct.#n;
    };
  }

  private constructor(n: NativeConntrack) {
    this.#n = n;
  }

  /** Opens a persistent ctnetlink socket (in `netns` if given). */
  static async open(options: OpenOptions = {}): Promise<Conntrack> {
    if (options.netns !== undefined && typeof options.netns !== 'string') {
      throw new KubenodeTypeError(`netns must be a path, got ${describe(options.netns)}`);
    }
    let o: Awaited<ReturnType<typeof native.Conntrack.open>>;
    try {
      o = await native.Conntrack.open(options.netns);
    } catch (e) {
      throw conntrackError(e);
    }
    return new Conntrack(outcomeValue(o, 'conntrack'));
  }

  /**
   * Dumps the entries of one family (`IPv4` or `IPv6`), filtered by `options`. An interrupted
   * dump is retried up to 5 times (upstream's `MaxAttemptsEINTR`), then returned as `partial`.
   */
  async list(family: IPFamily, options: ListOptions = {}): Promise<ListResult> {
    assertString('family', family);
    const filter = toNativeFilter(options, 'options');
    let task: Promise<Awaited<ReturnType<NativeConntrack['list']>>>;
    try {
      task = handleOf(this).list(family, filter);
    } catch (e) {
      throw conntrackError(e);
    }
    const o = outcomeValue(await task);
    return {
      flows: o.flows.map(fromNativeFlow),
      partial: o.partial,
      attempts: o.attempts,
    };
  }

  /** Lists the entries of one family: the flows only. */
  async listEntries(family: IPFamily, options: ListOptions = {}): Promise<Flow[]> {
    return (await this.list(family, options)).flows;
  }

  /** Deletes flows by exact original tuple + zone (guarded by `id`), batched. */
  async delete(family: IPFamily, flows: Flow[]): Promise<DeleteResult> {
    const o = await flowBatch(this, 'delete', family, flows);
    return {
      deleted: o.ok + o.notFound,
      notFound: o.notFound,
      failed: o.failed,
      ...(o.firstError ? { firstError: o.firstError } : {}),
    };
  }

  /**
   * Deletes every flow of `family` that `filter` matches: one dump with the filter (narrowed
   * in the kernel where it can), then deletes of the matches by exact tuple, batched. An
   * empty filter matches every flow; `flush` empties a table faster.
   */
  async deleteMatching(family: IPFamily, filter: FlowFilter): Promise<FilterDeleteResult> {
    assertString('family', family);
    if (filter === undefined) throw new KubenodeTypeError('filter must be an object, got undefined');
    const f = toNativeFilter(filter);
    return this.#filterDelete(() => handleOf(this).deleteMatching(family, f));
  }

  /**
   * Deletes the flows of `family` that `filter` matches, every one without a filter (that
   * family's table only). One kernel flush request when the kernel can apply the whole filter
   * exactly (no filter, a mark, or on kernels with filtered flush also protocol, ports, single
   * addresses and zone); else, or when the kernel refuses it, as `deleteMatching`.
   */
  async flush(family: IPFamily, filter?: FlowFilter): Promise<FilterDeleteResult> {
    assertString('family', family);
    const f = filter === undefined ? undefined : toNativeFilter(filter);
    return this.#filterDelete(() => handleOf(this).flush(family, f));
  }

  /**
   * Deletes every flow of `ips` in `family`: any protocol, with the address as original or
   * reply source or destination (the opt-in pod-IP purge).
   */
  async purgeIps(family: IPFamily, ips: string[]): Promise<FilterDeleteResult> {
    assertString('family', family);
    if (!Array.isArray(ips)) throw new KubenodeTypeError(`ips must be an array, got ${describe(ips)}`);
    for (const [i, ip] of ips.entries()) assertString(`ips[${i}]`, ip);
    return this.#filterDelete(() => handleOf(this).purgeIps(family, ips));
  }

  async #filterDelete(start: () => Promise<unknown>): Promise<FilterDeleteResult> {
    let task: ReturnType<NativeConntrack['flush']>;
    try {
      task = start() as ReturnType<NativeConntrack['flush']>;
    } catch (e) {
      throw conntrackError(e);
    }
    const o: ConntrackFilterDeleteReport = outcomeValue(await task, 'conntrack');
    return {
      path: o.path,
      matched: o.matched,
      ...(o.deleted === undefined || o.deleted === null ? {} : { deleted: o.deleted }),
      notFound: o.notFound,
      failed: o.failed,
      ...(o.firstError ? { firstError: o.firstError } : {}),
      partial: o.partial,
    };
  }

  /** kube-proxy's `DeleteEntries`: the count of deleted (or already gone) flows. */
  async deleteEntries(family: IPFamily, flows: Flow[]): Promise<number> {
    return (await this.delete(family, flows)).deleted;
  }

  /**
   * Entry count, limit and per-CPU counters of the handle's namespace (`conntrack -C` and
   * `conntrack -S` in one call): two small requests, no walk of the table.
   */
  async stats(): Promise<TableStats> {
    let task: ReturnType<NativeConntrack['stats']>;
    try {
      task = handleOf(this).stats();
    } catch (e) {
      throw conntrackError(e);
    }
    return outcomeValue(await task, 'conntrack');
  }

  /** Progress of a running cleanup pass on this handle. */
  progress(): Progress {
    return this.#n.progress() as Progress;
  }

  /** True once `close` was called. */
  get closed(): boolean {
    return this.#closed;
  }

  /** Closes the socket at once; an operation already running finishes first, then releases it. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#n.close();
  }
}
