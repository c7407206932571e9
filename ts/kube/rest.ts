// A small typed transport to the API server, without @kubernetes/client-node: JSON requests and
// watch streams over one HTTP/2 session per API server, shared by every request and watch as
// client-go's transport shares one connection (ALPN h2; a server that answers with HTTP/1.1
// gets keep-alive HTTP/1.1 instead). Every request carries the component's User-Agent, waits
// for the client-side rate limit, and takes its credentials from the connection (a token, a
// token file re-read as it rotates, or, for exec and auth-provider plugins only, client-node).
import type { KubenodeErrorCode } from '../error-classes.js';
import { KubenodeError } from '../error-classes.js';
import { componentUserAgent } from './client.js';
import { TokenBucket } from './client-ratelimit.js';
import { Transport } from './rest-transport.js';
import type { KubeConnection } from './rest-types.js';

export type { KubeConnection, RequestCredentials, TlsMaterial } from './rest-types.js';

/** Content types of a PATCH (client-go's `types.PatchType`). */
export const PATCH_MERGE = 'application/merge-patch+json';
/** A strategic merge patch (built-in kinds only). */
export const PATCH_STRATEGIC = 'application/strategic-merge-patch+json';
/** An RFC 6902 JSON patch. */
export const PATCH_JSON = 'application/json-patch+json';
/** A server-side apply patch (needs a field manager). */
export const PATCH_APPLY = 'application/apply-patch+yaml';

/** A query parameter's value; undefined leaves the parameter out. */
export type QueryValue = string | number | boolean | undefined;

/** One API request of {@link KubeRest.request}. */
export interface RestRequest {
  /** Default GET. */
  method?: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  /** Absolute API path, e.g. `/api/v1/namespaces/default/events`. */
  path: string;
  /** Query parameters; undefined values are left out. */
  query?: Record<string, QueryValue>;
  /** Sent as JSON (apply-patch too: JSON is YAML). */
  body?: unknown;
  /** Default `application/json`; a PATCH defaults to a merge patch. */
  contentType?: string;
  /** Aborts the request. */
  signal?: AbortSignal;
  /** Aborts the request after this long (default: no limit, as client-go). */
  timeoutMs?: number;
}

/** One line of a watch stream. */
export interface WatchEvent<T = unknown> {
  /** What happened; `ERROR` carries a `Status` (410 Gone: relist). */
  type: 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK' | 'ERROR';
  /** The object after the change (before, for DELETED); a `Status` for ERROR. */
  object: T;
}

/** The client of one component on one connection. */
export interface KubeRest {
  /** Where the client connects and how it authenticates. */
  readonly connection: KubeConnection;
  /** The User-Agent of every request. */
  readonly userAgent: string;
  /** `h2` or `http/1.1` once a connection was made; undefined before. */
  readonly protocol: 'h2' | 'http/1.1' | undefined;
  /** Sessions (TCP connections) opened so far: 1 while one HTTP/2 session carries everything. */
  readonly sessionsOpened: number;
  /**
   * One request; resolves with the decoded JSON body (undefined for an empty one). A status
   * of 300 or more rejects with a {@link KubeApiError}; no answer, with the network error.
   */
  request<T>(req: RestRequest): Promise<T>;
  /**
   * A watch (`watch=true` is added): `onEvent` gets each line in order. Resolves when the
   * server ends the stream or `signal` aborts; rejects with a {@link KubeApiError} for an error
   * status, or the network error. An `ERROR` event is passed to `onEvent` like any other.
   */
  watch<T>(
    path: string,
    query: Record<string, QueryValue>,
    onEvent: (event: WatchEvent<T>) => void,
    signal?: AbortSignal,
  ): Promise<void>;
  /** Closes the session; requests in flight fail. */
  close(): void;
}

/** A Kubernetes `Status` object as error bodies carry it. */
export interface ApiStatus {
  /** `Status`. */
  kind?: string;
  /** `v1`. */
  apiVersion?: string;
  /** `Failure` or `Success`. */
  status?: string;
  /** A human-readable description. */
  message?: string;
  /** A machine-readable reason, e.g. `NotFound`, `Conflict`, `Expired`. */
  reason?: string;
  /** The HTTP status. */
  code?: number;
  /** The object the status is about. */
  details?: Record<string, unknown>;
}

function errorCode(status: number): KubenodeErrorCode {
  if (status === 401 || status === 403) return 'ERR_KUBENODE_PERMISSION';
  if (status === 409) return 'ERR_KUBENODE_CONFLICT';
  if (status === 400 || status === 422) return 'ERR_KUBENODE_INVALID_ARG';
  return 'ERR_KUBENODE_IO';
}

/**
 * The API server answered with an error status. `statusCode` is the HTTP status (what
 * `apiCode()` in api-error.ts returns) and `body` the `Status` object it sent.
 */
export class KubeApiError extends KubenodeError {
  /** The HTTP status. */
  readonly statusCode: number;
  /** The `Status` the server sent (or one made from the status line). */
  readonly body: ApiStatus;

  constructor(statusCode: number, body: ApiStatus, what: string) {
    super(errorCode(statusCode), `${what}: HTTP ${statusCode}${body.message ? `: ${body.message}` : ''}`);
    this.name = 'KubeApiError';
    this.statusCode = statusCode;
    this.body = body;
  }
}

/** Client-side rate limit of a client (client-go's QPS and burst). */
export interface RestLimits {
  /** Sustained requests per second. */
  qps: number;
  /** Requests allowed at once above the sustained rate. */
  burst: number;
}

function queryString(query: Record<string, QueryValue> | undefined): string {
  if (!query) return '';
  const p = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) if (v !== undefined) p.append(k, String(v));
  const s = p.toString();
  return s === '' ? '' : `?${s}`;
}

/**
 * The client of `component` (its User-Agent) on `conn`. `limits` sets a token bucket every
 * request and watch passes first (default: none).
 */
export function restClient(conn: KubeConnection, component: string, limits?: RestLimits): KubeRest {
  const userAgent = componentUserAgent(component);
  const bucket = limits ? new TokenBucket(limits.qps, limits.burst) : undefined;
  const transport = new Transport(conn, userAgent);
  return {
    connection: conn,
    userAgent,
    get protocol() {
      return transport.protocol;
    },
    get sessionsOpened() {
      return transport.sessionsOpened;
    },
    async request<T>(req: RestRequest): Promise<T> {
      await bucket?.take();
      const method = req.method ?? 'GET';
      const body = req.body === undefined ? undefined : Buffer.from(JSON.stringify(req.body));
      const contentType =
        body === undefined
          ? undefined
          : (req.contentType ?? (method === 'PATCH' ? PATCH_MERGE : 'application/json'));
      const res = await transport.exchange({
        method,
        path: req.path + queryString(req.query),
        ...(body ? { body } : {}),
        ...(contentType ? { contentType } : {}),
        ...(req.signal ? { signal: req.signal } : {}),
        ...(req.timeoutMs !== undefined ? { timeoutMs: req.timeoutMs } : {}),
      });
      const text = res.body.toString('utf8');
      if (res.status >= 300)
        throw new KubeApiError(res.status, statusBody(text, res.status), `${method} ${req.path}`);
      return (text === '' ? undefined : JSON.parse(text)) as T;
    },
    async watch<T>(
      path: string,
      query: Record<string, QueryValue>,
      onEvent: (event: WatchEvent<T>) => void,
      signal?: AbortSignal,
    ): Promise<void> {
      await bucket?.take();
      await transport.stream(
        path + queryString({ ...query, watch: true }),
        (line) => onEvent(JSON.parse(line) as WatchEvent<T>),
        (status, text) => new KubeApiError(status, statusBody(text, status), `watch ${path}`),
        signal,
      );
    },
    close() {
      transport.close();
    },
  };
}

/** The Status of an error answer; a body that is not one becomes its message. */
export function statusBody(text: string, status: number): ApiStatus {
  try {
    const o = JSON.parse(text) as unknown;
    if (o && typeof o === 'object' && !Array.isArray(o)) return o as ApiStatus;
  } catch {
    // Not JSON: a proxy's page, say.
  }
  const message = text.trim().slice(0, 200);
  return {
    kind: 'Status',
    apiVersion: 'v1',
    status: 'Failure',
    code: status,
    ...(message ? { message } : {}),
  };
}
