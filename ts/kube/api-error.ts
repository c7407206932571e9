// What callers need from an API error (a @kubernetes/client-node one, or the lean transport's
// KubeApiError): its HTTP status and a short, readable form. Next to a leaf, so kube-level code and every subsystem can share it.
import { redactCredentials } from './redact.js';

/** The HTTP status of an API error, if `e` carries one. */
export function apiCode(e: unknown): number | undefined {
  const c = (e as { code?: unknown })?.code;
  if (typeof c === 'number') return c;
  // The lean transport's errors keep `code` for kubenode's own ERR_KUBENODE_* codes.
  const s = (e as { statusCode?: unknown })?.statusCode;
  return typeof s === 'number' ? s : undefined;
}

/** A short, readable form of a client error for logs and events, without any credential. */
export function describeError(e: unknown): string {
  return redactCredentials(describeRaw(e));
}

/**
 * The Status an API error carries, as an object: client-node 1.x hands it over as its JSON text,
 * the lean transport's KubeApiError already decoded. Undefined when there is none or the text is
 * not a JSON object (a proxy's page, say).
 */
export function apiErrorBody(e: unknown): Record<string, unknown> | undefined {
  let body = (e as { body?: unknown })?.body;
  if (typeof body === 'string') {
    try {
      body = JSON.parse(body);
    } catch {
      return undefined;
    }
  }
  return body && typeof body === 'object' && !Array.isArray(body)
    ? (body as Record<string, unknown>)
    : undefined;
}

function describeRaw(e: unknown): string {
  const code = apiCode(e);
  if (code !== undefined) {
    const body = (e as { body?: unknown })?.body;
    const status = apiErrorBody(e);
    const msg =
      status !== undefined
        ? String(status.message ?? (typeof body === 'string' ? body : ''))
        : typeof body === 'string'
          ? body
          : '';
    return `HTTP ${code}${msg ? `: ${msg}` : ''}`;
  }
  return e instanceof Error ? e.message : String(e);
}
