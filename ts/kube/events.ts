// core/v1 Events recorded with client-go's semantics (tools/record: event.go, events_cache.go):
// - aggregation: 10 events within 10 minutes that differ only in message (same source, object,
//   type, reason, reporting controller and instance) become one Event whose message is
//   "(combined from similar events): " + the latest message;
// - observation: an event seen before (same key) is a PATCH of the existing Event with the
//   count one higher and the new lastTimestamp, not a new object;
// - spam filter: per source+object a token bucket (burst 25, refilled 1 per 5 minutes);
// - reportingComponent/reportingInstance from the source, as the recorder sets them.
// Writes are serialised (the correlator's state follows each write's result) and best effort:
// failures are logged, never thrown; network failures are retried like client-go (12 tries,
// 10 s apart, the first delay randomised), on timers that never keep the process alive.
import type {
  ConfigurationOptions,
  CoreV1Api,
  CoreV1Event,
  V1ObjectReference,
} from '@kubernetes/client-node';
import { clientNode } from '../peers.js';
import { withSignal } from './abort.js';
import { apiCode } from './api-error.js';
import { type KubeRest, PATCH_STRATEGIC } from './rest.js';

/** Milliseconds since the epoch; tests pass a fake. */
export type Clock = () => number;

export interface EventLogger {
  info(level: number, msg: string, kv?: Record<string, unknown>): void;
  error(msg: string, err: unknown, kv?: Record<string, unknown>): void;
}

export interface EventSource {
  /** The controller's name: `source.component` and `reportingComponent`. */
  component: string;
  /** `source.host` and `reportingInstance` (often empty for controllers). */
  host?: string;
}

export const MAX_LRU_CACHE_ENTRIES = 4096;
export const AGGREGATE_MAX_EVENTS = 10;
export const AGGREGATE_INTERVAL_MS = 600_000;
export const SPAM_BURST = 25;
export const SPAM_QPS = 1 / 300;
export const MAX_TRIES_PER_EVENT = 12;
export const MAX_QUEUED_EVENTS = 1000;
export const COMBINED_PREFIX = '(combined from similar events): ';

/** A map that forgets its least recently used entry past `size` (k8s.io/utils/lru). */
class Lru<V> {
  readonly #m = new Map<string, V>();
  constructor(readonly size: number) {}
  get(k: string): V | undefined {
    const v = this.#m.get(k);
    if (v !== undefined) {
      this.#m.delete(k);
      this.#m.set(k, v);
    }
    return v;
  }
  set(k: string, v: V): void {
    this.#m.delete(k);
    this.#m.set(k, v);
    if (this.#m.size > this.size) this.#m.delete(this.#m.keys().next().value as string);
  }
}

/**
 * flowcontrol's passive token bucket: starts full with `burst` tokens, refills `qps` per
 * second up to `burst`; `tryAccept` takes one if there is one.
 */
export class TokenBucket {
  #tokens: number;
  #last: number;
  constructor(
    readonly qps: number,
    readonly burst: number,
    private readonly clock: Clock = Date.now,
  ) {
    this.#tokens = burst;
    this.#last = clock();
  }
  tryAccept(): boolean {
    const now = this.clock();
    if (now > this.#last) {
      this.#tokens = Math.min(this.burst, this.#tokens + ((now - this.#last) / 1000) * this.qps);
      this.#last = now;
    }
    if (this.#tokens >= 1) {
      this.#tokens -= 1;
      return true;
    }
    return false;
  }
}

function ref(e: CoreV1Event): V1ObjectReference {
  return e.involvedObject ?? {};
}

/** getEventKey: source, object, field path, type, reason and message. */
export function eventKey(e: CoreV1Event): string {
  const o = ref(e);
  return [
    e.source?.component,
    e.source?.host,
    o.kind,
    o.namespace,
    o.name,
    o.fieldPath,
    o.uid,
    o.apiVersion,
    e.type,
    e.reason,
    e.message,
  ]
    .map((s) => s ?? '')
    .join('');
}

/** getSpamKey: source and object only. */
export function spamKey(e: CoreV1Event): string {
  const o = ref(e);
  return [e.source?.component, e.source?.host, o.kind, o.namespace, o.name, o.uid, o.apiVersion]
    .map((s) => s ?? '')
    .join('');
}

/** EventAggregatorByReasonFunc: the aggregate key, and the message as the local key. */
function aggregateKeys(e: CoreV1Event): [string, string] {
  const o = ref(e);
  const key = [
    e.source?.component,
    e.source?.host,
    o.kind,
    o.namespace,
    o.name,
    o.uid,
    o.apiVersion,
    e.type,
    e.reason,
    e.reportingComponent,
    e.reportingInstance,
  ]
    .map((s) => s ?? '')
    .join('');
  return [key, e.message ?? ''];
}

/** `<name>.<unix nanoseconds in hex>`, like the recorder's event names. */
function eventName(objectName: string, ms: number): string {
  const nanos = BigInt(Math.floor(ms)) * 1_000_000n + (process.hrtime.bigint() % 1_000_000n);
  return `${objectName}.${nanos.toString(16)}`;
}

interface Observation {
  count: number;
  firstTimestamp: Date | undefined;
  name: string;
  resourceVersion: string | undefined;
}

export interface CorrelateResult {
  event: CoreV1Event;
  /** The strategic-merge patch for an Event seen before (count > 1). */
  patch?: Record<string, unknown>;
  skip: boolean;
}

/** client-go's EventCorrelator: aggregation, then observation, then the spam filter. */
export class EventCorrelator {
  readonly #aggregates: Lru<{ localKeys: Set<string>; last: number }>;
  readonly #observations: Lru<Observation>;
  readonly #spam: Lru<TokenBucket>;

  constructor(
    private readonly clock: Clock = Date.now,
    options: { burst?: number; qps?: number; maxEvents?: number; intervalMs?: number } = {},
  ) {
    this.#aggregates = new Lru(MAX_LRU_CACHE_ENTRIES);
    this.#observations = new Lru(MAX_LRU_CACHE_ENTRIES);
    this.#spam = new Lru(MAX_LRU_CACHE_ENTRIES);
    this.burst = options.burst ?? SPAM_BURST;
    this.qps = options.qps ?? SPAM_QPS;
    this.maxEvents = options.maxEvents ?? AGGREGATE_MAX_EVENTS;
    this.intervalMs = options.intervalMs ?? AGGREGATE_INTERVAL_MS;
  }
  readonly burst: number;
  readonly qps: number;
  readonly maxEvents: number;
  readonly intervalMs: number;

  correlate(input: CoreV1Event): CorrelateResult {
    const [aggregated, key] = this.#aggregate(input);
    const { event, patch } = this.#observe(aggregated, key);
    if (this.#filter(event)) return { event, skip: true };
    return { event, ...(patch ? { patch } : {}), skip: false };
  }

  /** The server's answer to a write: later observations patch that object. */
  updateState(e: CoreV1Event): void {
    this.#observations.set(eventKey(e), {
      count: e.count ?? 0,
      firstTimestamp: e.firstTimestamp,
      name: e.metadata?.name ?? '',
      resourceVersion: e.metadata?.resourceVersion,
    });
  }

  #aggregate(e: CoreV1Event): [CoreV1Event, string] {
    const now = this.clock();
    const [aggKey, localKey] = aggregateKeys(e);
    let rec = this.#aggregates.get(aggKey);
    if (!rec || now - rec.last > this.intervalMs) rec = { localKeys: new Set(), last: now };
    rec.localKeys.add(localKey);
    rec.last = now;
    this.#aggregates.set(aggKey, rec);
    if (rec.localKeys.size < this.maxEvents) return [e, eventKey(e)];
    // Upstream drops one arbitrary local key so the set stays at the threshold.
    rec.localKeys.delete(rec.localKeys.values().next().value as string);
    const at = new Date(now);
    const combined: CoreV1Event = {
      metadata: { name: eventName(ref(e).name ?? '', now), namespace: e.metadata?.namespace },
      count: 1,
      firstTimestamp: at,
      involvedObject: e.involvedObject,
      lastTimestamp: at,
      message: COMBINED_PREFIX + (e.message ?? ''),
      type: e.type,
      reason: e.reason,
      source: e.source,
    };
    return [combined, aggKey];
  }

  #observe(e: CoreV1Event, key: string): { event: CoreV1Event; patch?: Record<string, unknown> } {
    const event: CoreV1Event = { ...e, metadata: { ...e.metadata } };
    const last = this.#observations.get(key);
    let patch: Record<string, unknown> | undefined;
    if (last && last.count > 0) {
      event.metadata = { ...event.metadata, name: last.name, resourceVersion: last.resourceVersion };
      event.firstTimestamp = last.firstTimestamp;
      event.count = last.count + 1;
      // The two-way merge patch of count, lastTimestamp and message against their zero values.
      patch = { count: event.count, lastTimestamp: event.lastTimestamp };
      if (event.message) patch.message = event.message;
    }
    this.#observations.set(key, {
      count: event.count ?? 0,
      firstTimestamp: event.firstTimestamp,
      name: event.metadata?.name ?? '',
      resourceVersion: event.metadata?.resourceVersion,
    });
    return { event, ...(patch ? { patch } : {}) };
  }

  #filter(e: CoreV1Event): boolean {
    const key = spamKey(e);
    let bucket = this.#spam.get(key);
    if (!bucket) bucket = new TokenBucket(this.qps, this.burst, this.clock);
    const skip = !bucket.tryAccept();
    this.#spam.set(key, bucket);
    return skip;
  }
}

export interface EventRecorderOptions {
  /** A CoreV1Api client (ideally one from `withUserAgent`); or give `rest`. */
  core?: CoreV1Api;
  /** A lean client (ts/kube/rest.ts): the Events are written without client-node. */
  rest?: KubeRest;
  source: EventSource;
  /** Field manager of every Event write. */
  fieldManager: string;
  log: EventLogger;
  clock?: Clock;
  /** Delay between retries after network failures (default 10 s). */
  retryDelayMs?: number;
}

/** The two writes of the recorder's sink. */
interface EventSink {
  create(
    namespace: string,
    body: CoreV1Event,
    fieldManager: string,
    signal?: AbortSignal,
  ): Promise<CoreV1Event>;
  patch(
    namespace: string,
    name: string,
    body: Record<string, unknown>,
    fieldManager: string,
    signal?: AbortSignal,
  ): Promise<CoreV1Event>;
}

function restSink(rest: KubeRest): EventSink {
  const path = (ns: string) => `/api/v1/namespaces/${encodeURIComponent(ns)}/events`;
  return {
    create: (namespace, body, fieldManager, signal) =>
      rest.request({
        method: 'POST',
        path: path(namespace),
        query: { fieldManager },
        body,
        ...(signal ? { signal } : {}),
      }),
    patch: (namespace, name, body, fieldManager, signal) =>
      rest.request({
        method: 'PATCH',
        path: `${path(namespace)}/${encodeURIComponent(name)}`,
        query: { fieldManager },
        body,
        contentType: PATCH_STRATEGIC,
        ...(signal ? { signal } : {}),
      }),
  };
}

function coreSink(core: CoreV1Api): EventSink {
  const cancel = (signal?: AbortSignal, o?: ConfigurationOptions) => (signal ? withSignal(signal, o) : o);
  return {
    create: (namespace, body, fieldManager, signal) =>
      core.createNamespacedEvent({ namespace, body, fieldManager }, cancel(signal)),
    patch: (namespace, name, body, fieldManager, signal) => {
      const { PatchStrategy, setHeaderOptions } = clientNode();
      return core.patchNamespacedEvent(
        { name, namespace, body, fieldManager },
        cancel(signal, setHeaderOptions('Content-Type', PatchStrategy.StrategicMergePatch)),
      );
    },
  };
}

/** Records Events about objects; one instance per controller (one correlator, one queue). */
export class EventRecorder {
  readonly correlator: EventCorrelator;
  readonly #o: EventRecorderOptions;
  readonly #clock: Clock;
  readonly #sink: EventSink;
  #tail: Promise<void> = Promise.resolve();
  #queued = 0;
  #closed = false;
  readonly #timers = new Set<{ timer: NodeJS.Timeout; done: () => void }>();

  constructor(options: EventRecorderOptions) {
    this.#o = options;
    this.#clock = options.clock ?? Date.now;
    if (options.rest) this.#sink = restSink(options.rest);
    else if (options.core) this.#sink = coreSink(options.core);
    else throw new TypeError('EventRecorder: give `rest` (a lean client) or `core` (a CoreV1Api)');
    this.correlator = new EventCorrelator(this.#clock);
  }

  warning(object: V1ObjectReference, reason: string, message: string, signal?: AbortSignal): Promise<void> {
    return this.event(object, 'Warning', reason, message, signal);
  }

  /**
   * Records one event (the recorder's `Event`); resolves once it is written, dropped or given
   * up on. Never rejects. Once `signal` aborts (a leader's term ended) the event is dropped: a
   * request in flight is aborted and no retry follows, like a write under a cancelled context.
   */
  event(
    object: V1ObjectReference,
    type: 'Normal' | 'Warning',
    reason: string,
    message: string,
    signal?: AbortSignal,
  ): Promise<void> {
    this.#o.log.info(3, 'Event occurred', {
      object: object.namespace ? `${object.namespace}/${object.name}` : object.name,
      fieldPath: object.fieldPath ?? '',
      kind: object.kind,
      apiVersion: object.apiVersion,
      type,
      reason,
      message,
    });
    if (this.#closed || signal?.aborted) return Promise.resolve();
    // The broadcaster's queue drops events when full rather than blocking the caller.
    if (this.#queued >= MAX_QUEUED_EVENTS) return Promise.resolve();
    const now = this.#clock();
    const at = new Date(now);
    const namespace = object.namespace || 'default';
    const host = this.#o.source.host ?? '';
    const ev: CoreV1Event = {
      metadata: { name: eventName(object.name ?? '', now), namespace },
      involvedObject: object,
      reason,
      message,
      firstTimestamp: at,
      lastTimestamp: at,
      count: 1,
      type,
      source: { component: this.#o.source.component, ...(host ? { host } : {}) },
      reportingComponent: this.#o.source.component,
      reportingInstance: host,
    };
    this.#queued++;
    const run = this.#tail.then(() => this.#recordToSink(ev, signal));
    this.#tail = run.finally(() => {
      this.#queued--;
    });
    return this.#tail;
  }

  /** Waits for queued events. */
  flush(): Promise<void> {
    return this.#tail;
  }

  /** Stops retries and drops further events (the broadcaster's Shutdown). */
  shutdown(): void {
    this.#closed = true;
    for (const t of this.#timers) {
      clearTimeout(t.timer);
      t.done();
    }
    this.#timers.clear();
  }

  async #recordToSink(input: CoreV1Event, signal: AbortSignal | undefined): Promise<void> {
    if (this.#closed || signal?.aborted) return;
    const r = this.correlator.correlate(input);
    if (r.skip) return;
    const retryDelay = this.#o.retryDelayMs ?? 10_000;
    for (let tries = 1; ; tries++) {
      if (signal?.aborted) return;
      if (await this.#write(r.event, r.patch, signal)) return;
      if (tries >= MAX_TRIES_PER_EVENT) {
        this.#o.log.error('Unable to write event (retry limit exceeded!)', undefined, {
          reason: input.reason,
        });
        return;
      }
      const delay = tries === 1 ? retryDelay * Math.random() : retryDelay;
      if (!(await this.#sleep(delay))) {
        this.#o.log.error('Unable to write event (broadcaster is shut down)', undefined, {
          reason: input.reason,
        });
        return;
      }
    }
  }

  /** recordEvent: true when done (written, or refused by the server for good). */
  async #write(
    event: CoreV1Event,
    patch: Record<string, unknown> | undefined,
    signal: AbortSignal | undefined,
  ): Promise<boolean> {
    const namespace = event.metadata?.namespace ?? 'default';
    const fieldManager = this.#o.fieldManager;
    try {
      let written: CoreV1Event | undefined;
      if ((event.count ?? 0) > 1 && patch) {
        try {
          written = await this.#sink.patch(
            namespace,
            event.metadata?.name ?? '',
            patch,
            fieldManager,
            signal,
          );
        } catch (e) {
          if (apiCode(e) !== 404) throw e;
        }
      }
      if (!written) {
        const body: CoreV1Event = { ...event, metadata: { ...event.metadata, resourceVersion: undefined } };
        written = await this.#sink.create(namespace, body, fieldManager, signal);
      }
      this.correlator.updateState(written);
      return true;
    } catch (e) {
      const code = apiCode(e);
      if (code !== undefined) {
        // A status from the server: retrying the same request would get the same answer.
        if (code === 409)
          this.#o.log.info(5, 'Server rejected event (will not retry!)', { reason: event.reason });
        else this.#o.log.error('Server rejected event (will not retry!)', e, { reason: event.reason });
        return true;
      }
      this.#o.log.error('Unable to write event (may retry after sleeping)', e, { reason: event.reason });
      return false;
    }
  }

  #sleep(ms: number): Promise<boolean> {
    if (this.#closed) return Promise.resolve(false);
    return new Promise((resolve) => {
      const entry = {
        timer: setTimeout(() => {
          this.#timers.delete(entry);
          resolve(!this.#closed);
        }, ms),
        done: () => resolve(false),
      };
      entry.timer.unref();
      this.#timers.add(entry);
    });
  }
}
