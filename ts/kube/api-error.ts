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

function describeRaw(e: unknown): string {
  const code = apiCode(e);
  const body = (e as { body?: unknown })?.body;
  if (code !== undefined) {
    let msg = '';
    if (typeof body === 'string') {
      try {
        msg = (JSON.parse(body) as { message?: string }).message ?? body;
      } catch {
        msg = body;
      }
    } else if (body && typeof body === 'object') {
      msg = String((body as { message?: unknown }).message ?? '');
    }
    return `HTTP ${code}${msg ? `: ${msg}` : ''}`;
  }
  return e instanceof Error ? e.message : String(e);
}
