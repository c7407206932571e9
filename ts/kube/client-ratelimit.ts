// client-go's client-side rate limit (`--kube-api-qps`, `--kube-api-burst`): a token bucket
// holding `burst` tokens, refilled at `qps` a second, that every request and watch takes one
// token from before it is sent, waiting its turn when the bucket is empty.
import type { KubeConfig, RequestContext } from '@kubernetes/client-node';

/** A token bucket (golang.org/x/time/rate's reservation semantics: waits queue up in order). */
export class TokenBucket {
  #tokens: number;
  #last = performance.now();

  constructor(
    readonly qps: number,
    readonly burst: number,
  ) {
    this.#tokens = burst;
  }

  /** Milliseconds the caller must wait for its token (0: take it now); the token is taken. */
  reserve(now = performance.now()): number {
    this.#tokens = Math.min(this.burst, this.#tokens + ((now - this.#last) / 1000) * this.qps);
    this.#last = now;
    this.#tokens -= 1;
    // Elapsed times are floats: (t + 500) - t can come out a hair under 500, leaving a deficit
    // of 1e-14 tokens that would cost a 1 ms timer. Such a deficit is no deficit.
    if (this.#tokens > -1e-9) return 0;
    return (-this.#tokens / this.qps) * 1000;
  }

  /** Resolves when a token is the caller's. */
  async take(): Promise<void> {
    const wait = this.reserve();
    // Capped at setTimeout's longest delay: past it Node fires after 1 ms instead.
    if (wait > 0) await new Promise((r) => setTimeout(r, Math.min(Math.ceil(wait), 2 ** 31 - 1)));
  }
}

/** A view of `kc` whose requests and watches pass the token bucket first. */
export function withClientRateLimit(kc: KubeConfig, qps: number, burst: number): KubeConfig {
  const bucket = new TokenBucket(qps, burst);
  const view = Object.create(kc) as KubeConfig;
  // `this` is passed on: a view made on top of this one (withUserAgent) keeps its own agents.
  view.applySecurityAuthentication = async function (this: KubeConfig, context: RequestContext) {
    await bucket.take();
    await kc.applySecurityAuthentication.call(this, context);
  };
  view.applyToFetchOptions = async function (this: KubeConfig, opts) {
    await bucket.take();
    return kc.applyToFetchOptions.call(this, opts);
  };
  return view;
}
