// client-go workqueue metrics (component-base `workqueue_*` names and buckets) on prom-client.
import type { Counter, Gauge, Histogram, Registry } from 'prom-client';
import { restartCounter } from '../kube/restart-metric.js';
import { promClient } from '../peers.js';

/** What a queue reports; one instance per registry, labelled by queue name. */
export interface QueueMetricsProvider {
  /**
   * The metrics of queue `name`; `inflight` reports the seconds of work in progress and of the
   * longest-running item, read at scrape time.
   */
  forQueue(name: string, inflight: () => { unfinishedSeconds: number; longestSeconds: number }): QueueMetrics;
}

/** One queue's metrics (client-go's `queueMetrics`). */
export interface QueueMetrics {
  /** An item was added (`workqueue_adds_total`, depth +1). */
  add(): void;
  /** An item was handed out after `queuedSeconds` in the queue (depth -1). */
  get(queuedSeconds: number): void;
  /** Processing an item finished after `workSeconds`. */
  done(workSeconds: number): void;
  /** An item was re-added with rate limiting (`workqueue_retries_total`). */
  retry(): void;
  /** `n` queued items were dropped without being handed out. */
  discard(n: number): void;
}

// component-base: prometheus.ExponentialBuckets(10e-9, 10, 10).
const BUCKETS = Array.from({ length: 10 }, (_, i) => 10e-9 * 10 ** i);

/** Registers the workqueue metric families on `registry`. */
export class WorkqueueMetrics implements QueueMetricsProvider {
  readonly #depth: Gauge<'name'>;
  readonly #adds: Counter<'name'>;
  readonly #latency: Histogram<'name'>;
  readonly #work: Histogram<'name'>;
  readonly #retries: Counter<'name'>;
  readonly #inflight = new Map<string, () => { unfinishedSeconds: number; longestSeconds: number }>();

  constructor(registry: Registry) {
    const { Counter, Gauge, Histogram } = promClient();
    const registers = [registry];
    this.#depth = new Gauge({
      name: 'workqueue_depth',
      help: 'Current depth of workqueue',
      labelNames: ['name'],
      registers,
    });
    this.#adds = new Counter({
      name: 'workqueue_adds_total',
      help: 'Total number of adds handled by workqueue',
      labelNames: ['name'],
      registers,
    });
    this.#latency = new Histogram({
      name: 'workqueue_queue_duration_seconds',
      help: 'How long in seconds an item stays in workqueue before being requested.',
      labelNames: ['name'],
      buckets: BUCKETS,
      registers,
    });
    this.#work = new Histogram({
      name: 'workqueue_work_duration_seconds',
      help: 'How long in seconds processing an item from workqueue takes.',
      labelNames: ['name'],
      buckets: BUCKETS,
      registers,
    });
    this.#retries = new Counter({
      name: 'workqueue_retries_total',
      help: 'Total number of retries handled by workqueue',
      labelNames: ['name'],
      registers,
    });
    const inflight = this.#inflight;
    new Gauge({
      name: 'workqueue_unfinished_work_seconds',
      help:
        "How many seconds of work has done that is in progress and hasn't been observed by work_duration. " +
        'Large values indicate stuck threads. One can deduce the number of stuck threads by observing the rate ' +
        'at which this increases.',
      labelNames: ['name'],
      registers,
      collect() {
        for (const [name, f] of inflight) this.set({ name }, f().unfinishedSeconds);
      },
    });
    new Gauge({
      name: 'workqueue_longest_running_processor_seconds',
      help: 'How many seconds has the longest running processor for workqueue been running.',
      labelNames: ['name'],
      registers,
      collect() {
        for (const [name, f] of inflight) this.set({ name }, f().longestSeconds);
      },
    });
  }

  /** The metrics of queue `name` (label `name`); `inflight` is read at scrape time. */
  forQueue(
    name: string,
    inflight: () => { unfinishedSeconds: number; longestSeconds: number },
  ): QueueMetrics {
    this.#inflight.set(name, inflight);
    const l = { name };
    return {
      add: () => {
        this.#adds.inc(l);
        this.#depth.inc(l);
      },
      get: (queued) => {
        this.#depth.dec(l);
        this.#latency.observe(l, queued);
      },
      done: (work) => this.#work.observe(l, work),
      retry: () => this.#retries.inc(l),
      discard: (n) => this.#depth.dec(l, n),
    };
  }
}

export const noopQueueMetrics: QueueMetrics = { add() {}, get() {}, done() {}, retry() {}, discard() {} };

/** Name of the counter of the controller's watch restarts. */
export const WATCH_RESTARTS_TOTAL = 'kubenode_servicecidr_controller_watch_restarts_total';

/** Registers the controller's watch restart counter, read from `restarts()` at scrape time. */
export function watchRestartsMetric(registry: Registry, restarts: () => number): void {
  restartCounter(
    registry,
    WATCH_RESTARTS_TOTAL,
    'Restarts of failed ServiceCIDR and IPAddress watches of the ServiceCIDRs controller',
    restarts,
  );
}
