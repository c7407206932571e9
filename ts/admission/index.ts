// The kubelet's pod admission chain (pkg/kubelet/lifecycle): handlers run in order and the
// first rejection wins. A handler that throws rejects the pod instead of crashing the agent.
import { describe, KubenodeTypeError } from '../errors.js';
import type { MetricsRegistry } from '../metrics-registry.js';
import type { PodLike } from '../sysctl/types.js';
import { type AdmitMetrics, admitMetrics } from './metrics.js';

export type { MetricsRegistry } from '../metrics-registry.js';
export {
  ADMISSION_REJECTION_REASONS,
  ADMISSION_REJECTIONS_TOTAL,
  ADMIT_BUCKETS,
  ADMIT_DURATION,
  rejectionReasonLabel,
} from './metric-names.js';

/** What a handler sees for one pod (upstream `lifecycle.PodAdmitAttributes`). */
export interface PodAdmitAttributes {
  /** The pod being admitted. */
  pod: PodLike;
  /** Pods already admitted to the node. */
  otherPods?: PodLike[];
}

/** A handler's verdict (upstream `lifecycle.PodAdmitResult`). */
export interface PodAdmitResult {
  /** True to let the pod run; the first `false` in the chain rejects it. */
  admit: boolean;
  /** Machine-readable reason for a rejection (CamelCase, e.g. `SysctlForbidden`). */
  reason?: string;
  /** Human-readable explanation of a rejection. */
  message?: string;
}

/** One admission check (upstream `lifecycle.PodAdmitHandler`). */
export interface PodAdmitHandler {
  /** Name reported as `ChainResult.handler` when this handler rejects or fails. */
  readonly name: string;
  /**
   * Decides on one pod; may be async. A throw or a non-result rejects the pod with `UnexpectedAdmissionError`.
   */
  admit(attrs: PodAdmitAttributes): PodAdmitResult | Promise<PodAdmitResult>;
}

/** The chain's verdict: the first rejection, or `{ admit: true }` when every handler admits. */
export interface ChainResult extends PodAdmitResult {
  /** The handler that rejected the pod. */
  handler?: string;
}

/** Reason used when a handler throws or returns something that is not a result. */
export const UNEXPECTED_ADMISSION_ERROR = 'UnexpectedAdmissionError';

/** Options of `PodAdmitChain`. */
export interface PodAdmitChainOptions {
  /**
   * prom-client registry for `kubelet_admission_rejections_total{reason}` (the kubelet's counter,
   * one per rejected pod) and `kubenode_pod_admit_duration_seconds{result}`; default: none recorded.
   */
  registry?: MetricsRegistry;
}

/**
 * Runs admit handlers in order; the first rejection wins (the kubelet's `admitHandlers` loop).
 * @throws KubenodeTypeError (`ERR_KUBENODE_INVALID_ARG`) when `handlers` is not an array of
 * `{ name: string, admit(attrs) }`.
 */
export class PodAdmitChain {
  readonly #handlers: PodAdmitHandler[];
  readonly #metrics: AdmitMetrics | null;

  constructor(handlers: readonly PodAdmitHandler[] = [], options: PodAdmitChainOptions = {}) {
    if (!Array.isArray(handlers))
      throw new KubenodeTypeError(`handlers must be an array, got ${describe(handlers)}`);
    handlers.forEach((h, i) => {
      PodAdmitChain.#check(h, i);
    });
    if (typeof options !== 'object' || options === null) {
      throw new KubenodeTypeError(`options must be an object, got ${describe(options)}`);
    }
    this.#metrics = options.registry === undefined ? null : admitMetrics(options.registry);
    this.#handlers = [...handlers];
  }

  static #check(h: unknown, i: number): void {
    const o = h as PodAdmitHandler | null;
    if (typeof o !== 'object' || o === null || typeof o.admit !== 'function' || typeof o.name !== 'string') {
      throw new KubenodeTypeError(`handlers[${i}] must be { name: string, admit(attrs) }`);
    }
  }

  /** Appends a handler (later issues add more admit handlers after the sysctl one). */
  add(handler: PodAdmitHandler): this {
    PodAdmitChain.#check(handler, this.#handlers.length);
    this.#handlers.push(handler);
    return this;
  }

  /** Names of the handlers, in the order they run. */
  get handlers(): readonly string[] {
    return this.#handlers.map((h) => h.name);
  }

  /**
   * Runs the handlers on `attrs.pod` (with `otherPods` defaulting to `[]`) until one rejects.
   * A handler that throws or returns a non-result rejects the pod with reason
   * `UnexpectedAdmissionError` instead of rejecting this promise. With a registry, a rejection
   * counts in `kubelet_admission_rejections_total` and every verdict's time in the histogram.
   * @throws KubenodeTypeError (`ERR_KUBENODE_INVALID_ARG`) when `attrs` is not `{ pod, otherPods? }`.
   */
  async admit(attrs: PodAdmitAttributes): Promise<ChainResult> {
    if (typeof attrs !== 'object' || attrs === null || typeof attrs.pod !== 'object' || attrs.pod === null) {
      throw new KubenodeTypeError(`admit attributes must be { pod, otherPods? }, got ${describe(attrs)}`);
    }
    // Timed inside this one async function: another async layer around it cost more than the
    // metrics themselves.
    const start = this.#metrics === null ? 0 : performance.now();
    const view: PodAdmitAttributes = { pod: attrs.pod, otherPods: attrs.otherPods ?? [] };
    for (const h of this.#handlers) {
      let r: PodAdmitResult;
      try {
        r = await h.admit(view);
      } catch (e) {
        return this.#verdict(start, {
          admit: false,
          reason: UNEXPECTED_ADMISSION_ERROR,
          message: `admit handler ${JSON.stringify(h.name)} failed: ${e instanceof Error ? e.message : String(e)}`,
          handler: h.name,
        });
      }
      if (typeof r !== 'object' || r === null || typeof r.admit !== 'boolean') {
        return this.#verdict(start, {
          admit: false,
          reason: UNEXPECTED_ADMISSION_ERROR,
          message: `admit handler ${JSON.stringify(h.name)} returned ${describe(r)} instead of { admit: boolean }`,
          handler: h.name,
        });
      }
      if (!r.admit) return this.#verdict(start, { ...r, handler: h.name });
    }
    return this.#verdict(start, { admit: true });
  }

  #verdict(start: number, r: ChainResult): ChainResult {
    this.#metrics?.record((performance.now() - start) / 1000, r.admit ? undefined : r);
    return r;
  }
}

/** What the kubelet writes into a rejected pod's status (`Kubelet.rejectPod`). */
export function rejectedPodStatus(result: PodAdmitResult): {
  /** Always `Failed`: a rejected pod never runs. */
  phase: 'Failed';
  /** The rejection's reason (empty when it had none). */
  reason: string;
  /** `Pod was rejected: ` followed by the rejection's message. */
  message: string;
} {
  return {
    phase: 'Failed',
    reason: result.reason ?? '',
    message: `Pod was rejected: ${result.message ?? ''}`,
  };
}
