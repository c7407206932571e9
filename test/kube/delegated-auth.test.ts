// The controller's /metrics authorizer against a stand-in API server whose reviews can be held
// back: the bounds that keep a flood of made-up tokens from piling up. (The decisions themselves
// are tested against the real kube-apiserver in test/deploy/cluster.test.ts.)
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { KubeConfig } from '@kubernetes/client-node';
import { afterEach, describe, expect, it } from 'vitest';
import { delegatedAuthorizer } from '../../ts/kube/delegated-auth.js';

interface Stand {
  server: Server;
  kc: KubeConfig;
  tokenReviews: string[];
  verbs: string[];
  /** Answers every TokenReview held so far; later ones are answered at once. */
  release(): void;
}

let stand: Stand | undefined;
afterEach(async () => {
  stand?.release();
  stand?.server.closeAllConnections();
  await new Promise((r) => stand?.server.close(r));
  stand = undefined;
});

async function standIn(hold: boolean): Promise<Stand> {
  const held: (() => void)[] = [];
  let holding = hold;
  const s: Stand = {
    server: createServer((req, res) => {
      let body = '';
      req.on('data', (c) => {
        body += c;
      });
      req.on('end', () => {
        const o = JSON.parse(body) as { spec: { token?: string; nonResourceAttributes?: { verb: string } } };
        const reply = (v: unknown) => {
          res.writeHead(201, { 'Content-Type': 'application/json' });
          res.end(JSON.stringify(v));
        };
        if (req.url?.includes('tokenreviews')) {
          s.tokenReviews.push(o.spec.token ?? '');
          const answer = () =>
            reply({ ...o, status: { authenticated: o.spec.token !== 'never', user: { username: 'u' } } });
          if (o.spec.token === 'never') return; // never answered
          if (holding) held.push(answer);
          else answer();
        } else {
          s.verbs.push(o.spec.nonResourceAttributes?.verb ?? '');
          reply({ ...o, status: { allowed: true } });
        }
      });
    }),
    kc: new KubeConfig(),
    tokenReviews: [],
    verbs: [],
    release: () => {
      holding = false;
      for (const a of held.splice(0)) a();
    },
  };
  await new Promise<void>((r) => s.server.listen(0, '127.0.0.1', r));
  const { port } = s.server.address() as AddressInfo;
  s.kc.loadFromOptions({
    // Plain HTTP on loopback: client-node wants skipTLSVerify to allow it.
    clusters: [{ name: 'c', server: `http://127.0.0.1:${port}`, skipTLSVerify: true }],
    users: [{ name: 'u', token: 'controller-token' }],
    contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
    currentContext: 'x',
  });
  return s;
}

const request = (token: string, method = 'GET') =>
  ({ headers: { authorization: `Bearer ${token}` }, url: '/metrics', method }) as IncomingMessage;

describe('delegatedAuthorizer bounds', () => {
  it('shares one review per token and refuses past the pending bound with 429', async () => {
    stand = await standIn(true);
    const authorize = delegatedAuthorizer(stand.kc, { maxPending: 2 });
    const a = [authorize(request('token-a')), authorize(request('token-a')), authorize(request('token-a'))];
    const b = authorize(request('token-b'));
    // Two reviews under way (a's and b's): a third token is refused at once, unreviewed.
    expect(await authorize(request('token-c'))).toEqual({ status: 429, reason: 'Too many requests' });
    await new Promise((r) => setTimeout(r, 200));
    stand.release();
    for (const d of [...(await Promise.all(a)), await b]) expect(d.status).toBe(200);
    expect(stand.tokenReviews.sort()).toEqual(['token-a', 'token-b']);
    // Once answered, a new token is reviewed again.
    expect((await authorize(request('token-c'))).status).toBe(200);
  });

  it('gives up on a review the API server never answers, freeing its place', async () => {
    stand = await standIn(false);
    const authorize = delegatedAuthorizer(stand.kc, { maxPending: 1, timeoutMs: 500 });
    const t = performance.now();
    await expect(authorize(request('never'))).rejects.toThrow(/longer than 500 ms/);
    expect(performance.now() - t).toBeLessThan(3000);
    expect((await authorize(request('token-d'))).status).toBe(200);
  });

  it('asks about HEAD as verb head, as the API server derives it', async () => {
    stand = await standIn(false);
    const authorize = delegatedAuthorizer(stand.kc);
    await authorize(request('token-e', 'HEAD'));
    await authorize(request('token-e', 'GET'));
    expect(stand.verbs).toEqual(['head', 'get']);
  });
});
