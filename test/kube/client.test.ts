// withUserAgent: API clients and watches made from the view send the component's User-Agent
// (checked on a real HTTP server on loopback that records each request's headers).
import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { CoreV1Api, KubeConfig, Watch } from '@kubernetes/client-node';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { componentUserAgent, withUserAgent } from '../../ts/kube/client.js';

const seen: { url: string; ua: string | undefined; auth: string | undefined }[] = [];
const server = createServer((req, res) => {
  seen.push({ url: req.url ?? '', ua: req.headers['user-agent'], auth: req.headers.authorization });
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end(
    JSON.stringify({ kind: 'ServiceList', apiVersion: 'v1', metadata: { resourceVersion: '1' }, items: [] }),
  );
});
let kc: KubeConfig;

beforeAll(async () => {
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: 'c', server: `http://127.0.0.1:${port}`, skipTLSVerify: true }],
    users: [{ name: 'u', token: 'secret-token' }],
    contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
    currentContext: 'x',
  });
});
afterAll(() => server.close());

it('API clients and watches of the view send the component User-Agent and keep the credentials', async () => {
  const ua = componentUserAgent('kubenode-test-component');
  expect(ua).toMatch(/^kubenode-test-component\/v\d+\.\d+\.\d+\S* \(linux\/[a-z0-9]+\) kubenode$/);
  const view = withUserAgent(kc, 'kubenode-test-component');
  await view.makeApiClient(CoreV1Api).listServiceForAllNamespaces();
  const done = new Promise<void>((resolve) => {
    void new Watch(view).watch(
      '/api/v1/services',
      { resourceVersion: '1' },
      () => {},
      () => resolve(),
    );
  });
  await done;
  const list = seen.find((s) => s.url === '/api/v1/services');
  const watch = seen.find((s) => s.url.includes('watch=true'));
  expect(list).toMatchObject({ ua, auth: 'Bearer secret-token' });
  expect(watch).toMatchObject({ ua, auth: 'Bearer secret-token' });
  // The KubeConfig the view was made from is unchanged.
  seen.length = 0;
  await kc.makeApiClient(CoreV1Api).listServiceForAllNamespaces();
  expect(seen[0]?.ua).not.toBe(ua);
});
