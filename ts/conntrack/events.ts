// The ctnetlink event stream (`conntrack -E`) as an async iterator. The socket is opened at once,
// so events from then on are kept; each `next()` that finds no queued event asks the binding for
// one batch, read off the JS thread. Nothing is read while the consumer does not ask: the
// socket's receive buffer is the only buffer, and when it overflows the kernel drops events and
// the stream says so with a `lost` item instead of growing.
import type {
  ConntrackEventBatch,
  ConntrackListFilter,
  ConntrackEvents as NativeEvents,
} from '../binding.js';
import { assertNumber, describe, KubenodeTypeError, outcomeValue } from '../errors.js';
import { native } from '../native.js';
import { type Flow, fromNativeFlow } from './client.js';
import { conntrackError } from './errors.js';
import { type FlowFilter, toNativeFilter } from './filter.js';

/** The ctnetlink multicast groups: what happened to a flow. */
export type EventGroup = 'new' | 'update' | 'destroy';

/** Options of `events`. */
export interface EventsOptions {
  /** Network namespace file, e.g. `/var/run/netns/NAME`; default: this process's. */
  netns?: string;
  /** Groups to join (default all three); the kernel sends nothing else. */
  groups?: EventGroup[];
  /** Which flows: the fields the kernel can check are filtered before they are queued. */
  filter?: FlowFilter;
  /** Receive buffer in bytes (the kernel doubles it); default: the system's (`rmem_default`). */
  bufferSize?: number;
  /** Most events one read returns (default 256). */
  batchSize?: number;
  /** Aborting closes the stream; a waiting `next()` rejects with `signal.reason`. */
  signal?: AbortSignal;
}

/** A flow and what happened to it. */
export interface FlowEvent {
  /** The multicast group it came from: `new`, `update` or `destroy`. */
  type: EventGroup;
  /** The flow as the kernel reported it, in the shape `Conntrack.list` returns. */
  flow: Flow;
}

/**
 * The kernel dropped events here (its receive buffer overflowed, or an event could not be read):
 * `count` losses since the last such item. State kept from events is stale: resync with a dump.
 */
export interface LostEvent {
  /** Marks a loss. */
  type: 'lost';
  /** Losses since the previous `lost` item. */
  count: number;
}

/** An item of {@link events}: a flow event or a loss. */
export type ConntrackEvent = FlowEvent | LostEvent;

/** An event stream: an async iterator that can be closed, and awaited until it is subscribed. */
export interface EventStream extends AsyncIterableIterator<ConntrackEvent> {
  /** Resolves once the socket is subscribed (events from then on are seen); rejects if it cannot be. */
  ready(): Promise<void>;
  /** Closes the socket; a waiting `next()` ends the iteration. */
  close(): void;
  /**
   * Whether the kernel filters the flows before queueing them (a socket filter is attached, so
   * a busy table's other flows cost neither the buffer nor reads); known once `ready()`
   * resolved, false after `close()`. Without it (no field the kernel can check, such as labels
   * alone) every flow of the groups is read and the filter applied here.
   */
  readonly kernelFilter: boolean;
}

/** How long one read waits before the stream asks again (close wakes it earlier). */
const READ_WAIT_MS = 1000;
const GROUPS: readonly EventGroup[] = ['new', 'update', 'destroy'];

class Stream implements EventStream {
  readonly #opened: Promise<NativeEvents | undefined>;
  readonly #batch: number;
  readonly #signal: AbortSignal | undefined;
  readonly #onAbort = () => this.close();
  #native: NativeEvents | undefined;
  #openError: unknown;
  #openErrorThrown = false;
  #queue: ConntrackEvent[] = [];
  #lostSeen = 0;
  #done = false;
  // next() calls run one after another, as an async generator's do.
  #tail: Promise<unknown> = Promise.resolve();

  constructor(
    netns: string | undefined,
    groups: string[],
    filter: ConntrackListFilter | undefined,
    bufferSize: number | undefined,
    batch: number,
    signal: AbortSignal | undefined,
  ) {
    this.#batch = batch;
    this.#signal = signal;
    signal?.addEventListener('abort', this.#onAbort, { once: true });
    // Failures are kept for next() and ready(), never left as an unhandled rejection.
    this.#opened = native.ConntrackEvents.open(netns, groups, filter, bufferSize).then(
      (o) => {
        try {
          const n = outcomeValue(o, 'conntrack');
          if (this.#done) n.close();
          else this.#native = n;
          return n;
        } catch (e) {
          this.#fail(e);
          return undefined;
        }
      },
      (e: unknown) => {
        this.#fail(e);
        return undefined;
      },
    );
  }

  #fail(e: unknown): void {
    this.#openError = conntrackError(e);
    this.#finish();
  }

  #finish(): void {
    this.#done = true;
    this.#signal?.removeEventListener('abort', this.#onAbort);
    this.#native?.close();
  }

  async ready(): Promise<void> {
    await this.#opened;
    if (this.#openError !== undefined) throw this.#openError;
  }

  close(): void {
    this.#finish();
  }

  get kernelFilter(): boolean {
    return !this.#done && (this.#native?.kernelFilter ?? false);
  }

  next(): Promise<IteratorResult<ConntrackEvent>> {
    const p = this.#tail.then(() => this.#next());
    this.#tail = p.catch(() => undefined);
    return p;
  }

  async #next(): Promise<IteratorResult<ConntrackEvent>> {
    for (;;) {
      if (this.#signal?.aborted) {
        this.#queue = [];
        throw this.#signal.reason;
      }
      const queued = this.#queue.shift();
      if (queued !== undefined) return { value: queued, done: false };
      const n = await this.#opened;
      if (this.#openError !== undefined && !this.#openErrorThrown) {
        // Thrown once by next(); the stream is over.
        this.#openErrorThrown = true;
        throw this.#openError;
      }
      if (this.#done || n === undefined) {
        if (this.#signal?.aborted) throw this.#signal.reason;
        return { value: undefined, done: true };
      }
      let batch: ConntrackEventBatch;
      try {
        batch = outcomeValue(await n.read(this.#batch, READ_WAIT_MS), 'conntrack');
      } catch (e) {
        this.#finish();
        throw conntrackError(e);
      }
      this.#take(batch);
    }
  }

  #take(b: ConntrackEventBatch): void {
    // Closed meanwhile: what the last read returned is not wanted any more.
    if (this.#done) return;
    for (const e of b.events) this.#queue.push({ type: e.type, flow: fromNativeFlow(e.flow) });
    if (b.lost) {
      this.#queue.push({ type: 'lost', count: Math.max(1, b.lostTotal - this.#lostSeen) });
      this.#lostSeen = b.lostTotal;
    }
    if (b.closed) this.#finish();
  }

  async return(): Promise<IteratorResult<ConntrackEvent>> {
    this.#finish();
    this.#queue = [];
    return { value: undefined, done: true };
  }

  async throw(e?: unknown): Promise<IteratorResult<ConntrackEvent>> {
    this.#finish();
    throw e;
  }

  [Symbol.asyncIterator](): this {
    return this;
  }
}

/**
 * Subscribes to ctnetlink's conntrack events (`conntrack -E`): NEW, UPDATE and DESTROY flows of
 * one network namespace, as an async iterator. The socket is opened at once (`ready()` resolves
 * once it is subscribed), so a caller that keeps state subscribes first, then dumps
 * (`Conntrack.list`), then applies events. A `{ type: 'lost' }` item means the kernel dropped
 * events (a consumer too slow for `bufferSize`): dump again. `break` in `for await`, `return()`,
 * `close()` or the `signal` close the socket. Bad shapes throw here; the rest (group names,
 * filter, sizes, permissions) rejects the first `next()`.
 */
export function events(options: EventsOptions = {}): EventStream {
  if (typeof options !== 'object' || options === null) {
    throw new KubenodeTypeError(`options must be an object, got ${describe(options)}`);
  }
  const { netns, groups = GROUPS, filter, bufferSize, batchSize = 256, signal } = options;
  if (netns !== undefined && typeof netns !== 'string') {
    throw new KubenodeTypeError(`netns must be a path, got ${describe(netns)}`);
  }
  if (!Array.isArray(groups) || !groups.every((g) => typeof g === 'string')) {
    throw new KubenodeTypeError(`groups must be an array of strings, got ${describe(groups)}`);
  }
  if (bufferSize !== undefined) assertNumber('bufferSize', bufferSize);
  assertNumber('batchSize', batchSize);
  if (signal !== undefined && !(signal instanceof AbortSignal)) {
    throw new KubenodeTypeError(`signal must be an AbortSignal, got ${describe(signal)}`);
  }
  const nativeFilter = filter === undefined ? undefined : toNativeFilter(filter, 'filter');
  if (signal?.aborted) throw signal.reason;
  return new Stream(netns, [...groups], nativeFilter, bufferSize, batchSize, signal);
}
