// The event-fed flow index of a handle's cleanup: turned on here; kept (on a Rust thread fed
// by ctnetlink events) and used (by every pass `cleanStaleEntries` runs on the handle) in Rust.
import { assertNumber, outcomeValue } from '../errors.js';
import { type Conntrack, handleOf } from './client.js';
import { conntrackError } from './errors.js';

/** Options of `enableEventIndex`. */
export interface EventIndexOptions {
  /**
   * Most flows the index holds (default: the table's limit, `nf_conntrack_max`). Past it the
   * index frees its memory and every pass is full until a full pass finds fewer flows.
   */
  maxFlows?: number;
  /**
   * Receive buffer of its event socket, in bytes (default 32 MiB; the kernel doubles it and charges only what is queued). An
   * overflow loses events: the next pass is then full and rebuilds the index.
   */
  bufferSize?: number;
}

/** Whether a family's index can answer a pass, or why the next pass is full. */
export type EventIndexState = 'valid' | 'notBuilt' | 'eventsLost' | 'cap';

/** What a handle's event index holds. */
export interface EventIndexStats {
  /** Flows held, both families. */
  flows: number;
  /** Bytes its maps hold (their capacity). */
  bytes: number;
  /** Interned (frontend, endpoint) pairs, both families. */
  pairs: number;
  /** The IPv4 index's state. */
  ipv4: EventIndexState;
  /** The IPv6 index's state. */
  ipv6: EventIndexState;
  /** Events applied since it was enabled. */
  events: number;
  /** Receive buffer overflows reported since it was enabled (each made the next pass full). */
  losses: number;
}

/**
 * Turns on the event-fed flow index for the cleanup passes on `ct`: from then on the handle
 * keeps the live UDP flows per (frontend, endpoint) from conntrack events in its namespace, and
 * a pass after a successful one takes its stale flows from the index (path `indexed`: no dump,
 * exact deletes). The next pass is full and builds the index; a full pass runs again whenever
 * events were lost (and whenever asked for, e.g. the reconciler's resync period).
 */
export async function enableEventIndex(ct: Conntrack, options: EventIndexOptions = {}): Promise<void> {
  // Whole and in range is the core's rule.
  for (const k of ['maxFlows', 'bufferSize'] as const) {
    const v = options[k];
    if (v !== undefined) assertNumber(`options.${k}`, v);
  }
  let task: ReturnType<ReturnType<typeof handleOf>['enableEventIndex']>;
  try {
    task = handleOf(ct).enableEventIndex(options.maxFlows, options.bufferSize);
  } catch (e) {
    throw conntrackError(e);
  }
  outcomeValue(await task, 'conntrack');
}

/** The state of `ct`'s event index, or undefined when it was not enabled. */
export function eventIndexStats(ct: Conntrack): EventIndexStats | undefined {
  let s: ReturnType<ReturnType<typeof handleOf>['indexStats']>;
  try {
    s = handleOf(ct).indexStats();
  } catch (e) {
    throw conntrackError(e);
  }
  if (!s) return undefined;
  // The binding names exactly these states.
  return { ...s, ipv4: s.ipv4 as EventIndexState, ipv6: s.ipv6 as EventIndexState };
}
