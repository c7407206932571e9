// Who may read the controller's /metrics, decided by the API server as kube-controller-manager's
// delegated authentication and authorization do: the bearer token goes to a TokenReview, the
// user it names to a SubjectAccessReview for the non-resource URL and verb. Decisions are kept
// for ttlMs (10 s, the delegating authenticator's and authorizer's default), keyed by a hash
// of the token, in a bounded map, so a scrape every few seconds costs the API server nothing
// and a flood of made-up tokens cannot grow the heap.
import { createHash } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type {
  KubeConfig,
  V1SubjectAccessReview,
  V1SubjectAccessReviewSpec,
  V1TokenReview,
} from '@kubernetes/client-node';
import { clientNode } from '../peers.js';
import type { Logger } from '../servicecidr/logger.js';
import { describeError } from './api-error.js';
import type { MetricsAuthorizer } from './health.js';
import type { KubeRest } from './rest.js';

export interface DelegatedAuthOptions {
  /** How long a decision is reused (default 10 s). */
  ttlMs?: number;
  /** Most decisions kept (default 1024); the oldest goes first. */
  maxEntries?: number;
  /** Where a failed review is logged (the request is refused with 500). */
  log?: Logger;
  /** Most reviews under way at once (default 64); past it a request is refused with 429. */
  maxPending?: number;
  /** How long one review may take before the request is refused with 500 (default 10 s). */
  timeoutMs?: number;
}

type Decision = { status: 200 | 401 | 403 | 429; reason?: string };

interface Reviews {
  tokenReview(token: string): Promise<V1TokenReview>;
  subjectAccessReview(spec: V1SubjectAccessReviewSpec): Promise<V1SubjectAccessReview>;
}

function reviews(client: KubeConfig | KubeRest): Reviews {
  if (typeof (client as KubeRest).request === 'function') {
    const rest = client as KubeRest;
    return {
      tokenReview: (token) =>
        rest.request({
          method: 'POST',
          path: '/apis/authentication.k8s.io/v1/tokenreviews',
          body: { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenReview', spec: { token } },
        }),
      subjectAccessReview: (spec) =>
        rest.request({
          method: 'POST',
          path: '/apis/authorization.k8s.io/v1/subjectaccessreviews',
          body: { apiVersion: 'authorization.k8s.io/v1', kind: 'SubjectAccessReview', spec },
        }),
    };
  }
  const kc = client as KubeConfig;
  const { AuthenticationV1Api, AuthorizationV1Api } = clientNode();
  const authn = kc.makeApiClient(AuthenticationV1Api);
  const authz = kc.makeApiClient(AuthorizationV1Api);
  return {
    tokenReview: (token) => authn.createTokenReview({ body: { spec: { token } } }),
    subjectAccessReview: (spec) => authz.createSubjectAccessReview({ body: { spec } }),
  };
}

/**
 * A `MetricsAuthorizer` asking the API server of `client` (a lean client, or a client-node
 * `KubeConfig`) about `GET <path>` (`HEAD` as verb `head`).
 * `kc` should not share the daemon's own client-side rate limit: made-up tokens would queue its
 * real requests behind their reviews (upstream's delegating clients have a budget of their own).
 */
export function delegatedAuthorizer(
  client: KubeConfig | KubeRest,
  o: DelegatedAuthOptions = {},
): MetricsAuthorizer {
  const ttl = o.ttlMs ?? 10_000;
  const max = o.maxEntries ?? 1024;
  const maxPending = o.maxPending ?? 64;
  const timeoutMs = o.timeoutMs ?? 10_000;
  // One review per key at a time: concurrent scrapes with one token share it.
  const pending = new Map<string, Promise<Decision>>();
  const api = reviews(client);
  const cache = new Map<string, { until: number; decision: Decision }>();

  async function decide(token: string, path: string, verb: string): Promise<Decision> {
    let review: V1TokenReview;
    try {
      review = await api.tokenReview(token);
    } catch (e) {
      // The API server's wording; the error itself (an HTTP 403 for a missing grant) as `err`.
      o.log?.error('Unable to authenticate the request due to an error', e);
      throw new Error(`TokenReview failed: ${describeError(e)}`);
    }
    const user = review.status?.user;
    if (!review.status?.authenticated || !user) return { status: 401, reason: 'Unauthorized' };
    let sar: V1SubjectAccessReview;
    try {
      sar = await api.subjectAccessReview({
        ...(user.username !== undefined ? { user: user.username } : {}),
        ...(user.uid ? { uid: user.uid } : {}),
        ...(user.groups ? { groups: user.groups } : {}),
        ...(user.extra ? { extra: user.extra } : {}),
        nonResourceAttributes: { path, verb },
      });
    } catch (e) {
      o.log?.error('Unable to authorize the request due to an error', e);
      throw new Error(`SubjectAccessReview failed: ${describeError(e)}`);
    }
    if (sar.status?.allowed) return { status: 200 };
    // The API server's wording for a refused non-resource request.
    const why = sar.status?.reason ? `: ${sar.status.reason}` : '';
    return {
      status: 403,
      reason: `forbidden: User ${JSON.stringify(user.username ?? '')} cannot ${verb} path ${JSON.stringify(path)}${why}`,
    };
  }

  return async (req: IncomingMessage) => {
    const m = /^Bearer\s+(\S+)\s*$/i.exec(req.headers.authorization ?? '');
    if (!m) return { status: 401, reason: 'Unauthorized' };
    const token = m[1] as string;
    const path = (req.url ?? '/').split('?')[0] as string;
    // The request's verb, as the API server's request info derives it.
    const verb = req.method === 'HEAD' ? 'head' : 'get';
    const key = createHash('sha256').update(`${verb} ${path} `).update(token).digest('base64');
    const now = performance.now();
    const hit = cache.get(key);
    if (hit && hit.until > now) return hit.decision;
    const shared = pending.get(key);
    if (shared) return shared;
    // A flood of made-up tokens waits on the API server; past the bound it is refused at once,
    // so it holds neither memory nor the controller's connections.
    if (pending.size >= maxPending) return { status: 429, reason: 'Too many requests' };
    const review = withTimeout(decide(token, path, verb), timeoutMs)
      .then((decision) => {
        cache.delete(key);
        cache.set(key, { until: now + ttl, decision });
        while (cache.size > max) cache.delete(cache.keys().next().value as string);
        return decision;
      })
      .finally(() => pending.delete(key));
    pending.set(key, review);
    return review;
  };
}

function withTimeout<T>(p: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`the review took longer than ${ms} ms`)), ms);
    timer.unref();
  });
  return Promise.race([p, timeout]).finally(() => clearTimeout(timer));
}
