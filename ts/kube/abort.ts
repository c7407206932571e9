// Per-request cancellation for client-node calls: its generated APIs take ConfigurationOptions
// whose middleware can set the fetch signal, like a context passed to a client-go call.
import type { ConfigurationOptions, RequestContext } from '@kubernetes/client-node';
import { clientNode } from '../peers.js';

/** Options that abort the request (connection included) when `signal` aborts. */
export function withSignal(signal: AbortSignal, options?: ConfigurationOptions): ConfigurationOptions {
  const { Observable } = clientNode();
  return {
    ...options,
    middleware: [
      ...(options?.middleware ?? []),
      {
        pre: (ctx: RequestContext) => {
          ctx.setSignal(signal);
          return new Observable(Promise.resolve(ctx));
        },
        post: (res) => new Observable(Promise.resolve(res)),
      },
    ],
    middlewareMergeStrategy: 'append',
  };
}
