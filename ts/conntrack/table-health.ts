// Conntrack table health: reads `Conntrack.stats()` periodically and at scrape time, exports
// the count, limit and the kernel's per-CPU counters (summed) as metrics, and reports a nearly
// full table once per crossing. The core owns the threshold rule and the warning's text.
import type { Registry } from 'prom-client';
import { callNative, describe, KubenodeTypeError } from '../errors.js';
import { native } from '../native.js';
import { promClient } from '../peers.js';
import type { Conntrack, StatsTotal, TableStats } from './client.js';

/** Name of the gauge of entries in the table (node_exporter's `nf_conntrack_entries`). */
export const ENTRIES = 'kubenode_conntrack_entries';
/** Name of the gauge of `nf_conntrack_max` (node_exporter's `nf_conntrack_entries_limit`). */
export const ENTRIES_LIMIT = 'kubenode_conntrack_entries_limit';

/** The counter of each summed per-CPU statistic (`conntrack -S`), with its help text. */
export const STAT_COUNTERS: Readonly<Record<keyof StatsTotal, readonly [name: string, help: string]>> = {
  found: ['kubenode_conntrack_found_total', 'Conntrack lookups that found an entry'],
  invalid: ['kubenode_conntrack_invalid_total', 'Packets conntrack could not track'],
  insert: ['kubenode_conntrack_insert_total', 'Conntrack entries inserted'],
  insertFailed: [
    'kubenode_conntrack_insert_failed_total',
    'Conntrack inserts that lost a race to an equal entry and were not resolved',
  ],
  drop: [
    'kubenode_conntrack_drop_total',
    'Packets dropped because no conntrack entry could be made (table full)',
  ],
  earlyDrop: [
    'kubenode_conntrack_early_drop_total',
    'Unassured conntrack entries evicted to make room in a full table',
  ],
  error: ['kubenode_conntrack_error_total', 'ICMP errors that named no known connection'],
  searchRestart: [
    'kubenode_conntrack_search_restart_total',
    'Conntrack lookups restarted because a hash resize moved the chain',
  ],
  clashResolve: [
    'kubenode_conntrack_clash_resolve_total',
    'Conntrack insert races resolved by reusing the other entry',
  ],
  chainToolong: [
    'kubenode_conntrack_chain_toolong_total',
    'Conntrack inserts refused because the hash chain was too long',
  ],
};

/** Reason of the Warning Event about a Node whose table crossed the threshold. */
export const REASON_TABLE_NEARLY_FULL = 'ConntrackTableNearlyFull';
/** Default fraction of `nf_conntrack_max` at which a table is nearly full. */
export const DEFAULT_FULL_THRESHOLD = 0.9;
/** Default period of the background reading (the warning's latency without scrapes). */
export const DEFAULT_CHECK_PERIOD_MS = 10_000;
/** Longest a scrape waits for a reading before it reports the previous one. */
export const SCRAPE_WAIT_MS = 1000;

/**
 * Checks a nearly-full threshold (the core's rule: a fraction from 0, off, to 1); throws a
 * `KubenodeTypeError` for a non-number and the core's typed `ERR_KUBENODE_OUT_OF_RANGE` error
 * for one out of range.
 */
export function checkFullThreshold(threshold: number): number {
  if (typeof threshold !== 'number') {
    throw new KubenodeTypeError(`threshold must be a number, got ${describe(threshold)}`);
  }
  callNative(() => native.conntrackFullAlarm(false, 0, 0, threshold));
  return threshold;
}

/** Options of `TableHealth`. */
export interface TableHealthOptions {
  /** Fraction of the limit from 0 (off) to 1 (default 0.9); checked by the core. */
  threshold?: number;
  /** Called once per crossing of the threshold with the core's message. */
  onNearlyFull?: (message: string, stats: TableStats) => void;
  /**
   * Called with the first failed reading after a good one (the last good one stands). A
   * handle that never read, such as a closed one, reports through its other operations.
   */
  onError?: (err: unknown) => void;
}

/**
 * The health of one handle's table. Readings never overlap: a reading asked for while one
 * runs shares it.
 */
export class TableHealth {
  readonly #ct: Conntrack;
  readonly #threshold: number;
  readonly #opts: TableHealthOptions;
  #last: TableStats | undefined;
  #reading: Promise<TableStats | undefined> | undefined;
  #raised = false;
  /** The last reading succeeded: the next failure is reported. */
  #healthy = false;
  #timer: NodeJS.Timeout | undefined;

  constructor(ct: Conntrack, options: TableHealthOptions = {}) {
    this.#ct = ct;
    this.#opts = options;
    this.#threshold = checkFullThreshold(options.threshold ?? DEFAULT_FULL_THRESHOLD);
  }

  /** The last good reading, if any. */
  get last(): TableStats | undefined {
    return this.#last;
  }

  /** Whether the nearly-full warning stands (the table has not fallen back below the re-arm point). */
  get nearlyFull(): boolean {
    return this.#raised;
  }

  /** Reads the table now (or joins the reading under way); resolves to the last good reading. */
  read(): Promise<TableStats | undefined> {
    this.#reading ??= this.#ct
      .stats()
      .then(
        (s) => {
          this.#last = s;
          this.#healthy = true;
          this.#observe(s);
          return s;
        },
        (e: unknown) => {
          if (this.#healthy) this.#call(() => this.#opts.onError?.(e));
          this.#healthy = false;
          return this.#last;
        },
      )
      .finally(() => {
        this.#reading = undefined;
      });
    return this.#reading;
  }

  /** A reading for a scrape: a fresh one, or the previous one if the handle is busy past `waitMs`. */
  async current(waitMs = SCRAPE_WAIT_MS): Promise<TableStats | undefined> {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<TableStats | undefined>((resolve) => {
      timer = setTimeout(() => resolve(this.#last), waitMs);
    });
    try {
      return await Promise.race([this.read(), late]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** Reads every `periodMs` (unref'd: never keeps the process alive), starting now. */
  start(periodMs = DEFAULT_CHECK_PERIOD_MS): void {
    this.stop();
    void this.read();
    this.#timer = setInterval(() => void this.read(), periodMs).unref();
  }

  /** Stops the periodic readings (a reading under way still completes). */
  stop(): void {
    clearInterval(this.#timer);
    this.#timer = undefined;
  }

  /** Waits for a reading under way (tests). */
  async flush(): Promise<void> {
    await this.#reading;
  }

  #observe(s: TableStats): void {
    const a = callNative(() => native.conntrackFullAlarm(this.#raised, s.count, s.max, this.#threshold));
    this.#raised = a.raised;
    const message = a.message;
    if (message !== undefined) this.#call(() => this.#opts.onNearlyFull?.(message, s));
  }

  /** A callback's exception must not stop the readings. */
  #call(f: () => void): void {
    try {
      f();
    } catch {
      // The callback failed; the reading stands.
    }
  }
}

/**
 * Registers the table metrics on `registry`, read from `read()` at scrape time (the entries
 * gauges, and the per-CPU counters summed, which follow the kernel's own values: they restart
 * only with the namespace). Every series reads 0 until the first good reading.
 */
export function tableMetrics(registry: Registry, read: () => Promise<TableStats | undefined>): void {
  const { Counter, Gauge } = promClient();
  // One reading per scrape, shared by every metric of the table: a scrape starts every
  // metric's collect() before any reading can settle.
  let scrape: Promise<TableStats | undefined> | undefined;
  const stats = () => {
    scrape ??= read().finally(() => {
      scrape = undefined;
    });
    return scrape;
  };
  const gauge = (name: string, help: string, value: (s: TableStats) => number) =>
    new Gauge({
      name,
      help,
      registers: [registry],
      async collect() {
        const s = await stats();
        if (s) this.set(value(s));
      },
    });
  gauge(ENTRIES, 'Entries in the conntrack table of the namespace kubenode watches', (s) => s.count);
  gauge(
    ENTRIES_LIMIT,
    'nf_conntrack_max: the entries a conntrack table may hold (0: no limit)',
    (s) => s.max,
  );
  for (const [key, [name, help]] of Object.entries(STAT_COUNTERS) as [
    keyof StatsTotal,
    readonly [string, string],
  ][]) {
    new Counter({
      name,
      help: `${help} (summed over CPUs)`,
      registers: [registry],
      async collect() {
        const s = await stats();
        if (!s) return;
        this.reset();
        this.inc(s.total[key]);
      },
    });
  }
}
