// Talks to the test kube-apiserver with plain HTTPS (keep-alive, many requests in flight) and
// applies rendered admission policies, waiting until the admission plugin enforces them.
import { readFileSync } from 'node:fs';
import { Agent, request } from 'node:https';
import type { ApiServer } from '../../support/apiserver.js';

export interface Reply {
  status: number;
  body: Record<string, unknown>;
  /** The response's `Warning` headers (admission warnings), in order. */
  warnings: string[];
}

export class Api {
  readonly #agent: Agent;
  readonly #ca: Buffer;
  readonly #url: URL;
  readonly #token: string;

  constructor(server: ApiServer, maxSockets = 32) {
    this.#ca = readFileSync(server.caFile);
    this.#url = new URL(server.url);
    this.#token = server.token;
    this.#agent = new Agent({ keepAlive: true, maxSockets, ca: this.#ca });
  }

  send(method: string, path: string, body?: unknown): Promise<Reply> {
    const data = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
    return new Promise((resolve, reject) => {
      const req = request(
        {
          host: this.#url.hostname,
          port: this.#url.port,
          method,
          path,
          agent: this.#agent,
          headers: {
            Authorization: `Bearer ${this.#token}`,
            Accept: 'application/json',
            ...(data ? { 'Content-Type': 'application/json', 'Content-Length': data.length } : {}),
          },
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => {
            const text = Buffer.concat(chunks).toString('utf8');
            let parsed: Record<string, unknown>;
            try {
              parsed = JSON.parse(text) as Record<string, unknown>;
            } catch {
              parsed = { text };
            }
            // From the raw headers: Node joins repeated ones with commas, which warnings contain.
            const warnings: string[] = [];
            for (let i = 0; i + 1 < res.rawHeaders.length; i += 2) {
              if (res.rawHeaders[i]?.toLowerCase() === 'warning') warnings.push(res.rawHeaders[i + 1] ?? '');
            }
            resolve({ status: res.statusCode ?? 0, body: parsed, warnings });
          });
        },
      );
      req.on('error', reject);
      req.end(data);
    });
  }

  /** Creates (or replaces) an object at a collection path. */
  async apply(collection: string, obj: { metadata: { name: string } }): Promise<void> {
    const r = await this.send('POST', collection, obj);
    if (r.status === 409) {
      const cur = await this.send('GET', `${collection}/${obj.metadata.name}`);
      const rv = (cur.body['metadata'] as { resourceVersion: string }).resourceVersion;
      const u = await this.send('PUT', `${collection}/${obj.metadata.name}`, {
        ...obj,
        metadata: { ...obj.metadata, resourceVersion: rv },
      });
      if (u.status >= 300) throw new Error(`PUT ${obj.metadata.name}: ${u.status} ${JSON.stringify(u.body)}`);
      return;
    }
    if (r.status >= 300) throw new Error(`POST ${collection}: ${r.status} ${JSON.stringify(r.body)}`);
  }

  async applyPolicy([vap, binding]: [Record<string, unknown>, Record<string, unknown>]): Promise<void> {
    const base = '/apis/admissionregistration.k8s.io/v1';
    await this.apply(`${base}/validatingadmissionpolicies`, vap as { metadata: { name: string } });
    await this.apply(`${base}/validatingadmissionpolicybindings`, binding as { metadata: { name: string } });
  }

  async deletePolicy(name: string): Promise<void> {
    const base = '/apis/admissionregistration.k8s.io/v1';
    await this.send('DELETE', `${base}/validatingadmissionpolicybindings/${name}-binding`);
    await this.send('DELETE', `${base}/validatingadmissionpolicies/${name}`);
  }

  async namespace(name: string, labels: Record<string, string> = {}): Promise<void> {
    await this.apply('/api/v1/namespaces', { metadata: { name, labels } } as { metadata: { name: string } });
  }

  /** Server-side dry-run create of a pod (or a workload at `collection`). */
  dryRun(namespace: string, obj: unknown, collection = 'pods', group = '/api/v1'): Promise<Reply> {
    return this.send('POST', `${group}/namespaces/${namespace}/${collection}?dryRun=All`, obj);
  }

  /** Polls until `probe` holds (the admission plugin picks policies up asynchronously). */
  async until(what: string, probe: () => Promise<boolean>, timeoutMs = 30_000): Promise<void> {
    const end = Date.now() + timeoutMs;
    while (Date.now() < end) {
      if (await probe()) return;
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error(`timed out waiting for ${what}`);
  }

  close(): void {
    this.#agent.destroy();
  }
}

export function pod(
  name: string,
  sysctls: { name: string; value: string }[],
  flags: { hostNetwork?: boolean; hostIPC?: boolean; hostUsers?: boolean } = {},
): Record<string, unknown> {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name },
    spec: {
      containers: [{ name: 'c', image: 'busybox' }],
      ...flags,
      ...(sysctls.length > 0 ? { securityContext: { sysctls } } : {}),
    },
  };
}

/** The API server's status message of a refused request. */
export function messageOf(r: Reply): string {
  return typeof r.body['message'] === 'string' ? (r.body['message'] as string) : JSON.stringify(r.body);
}
