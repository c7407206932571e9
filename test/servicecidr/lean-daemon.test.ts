// `kubenode servicecidr-controller` reaches the API server without @kubernetes/client-node (it
// costs ~70 MiB and over a second of start-up): run with loading it made to fail, the daemon
// still reconciles and stops cleanly.
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ApiServer, startApiServer } from '../support/apiserver.js';
import { startDaemon } from '../support/daemon.js';
import { apis, createCIDR, waitReady } from './helpers.js';

const forbid = join(import.meta.dirname, '..', 'support', 'forbid-client-node.cjs');
let api: ApiServer;

beforeAll(async () => {
  api = await startApiServer();
});
afterAll(async () => {
  await api?.stop();
});

describe('kubenode servicecidr-controller without client-node', () => {
  it('reconciles with leader election while loading client-node fails', async () => {
    const d = startDaemon(
      [
        'servicecidr-controller',
        '--kubeconfig',
        api.kubeconfigFile,
        '--leader-elect',
        '--leader-elect-lease-duration=3s',
        '--leader-elect-renew-deadline=2s',
        '--leader-elect-retry-period=500ms',
        '--secure-port=0',
      ],
      { ...process.env, NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} --require ${forbid}` },
    );
    const why = () => `(alive: ${d.alive}; stderr: ${d.stderr})`;
    try {
      const { net } = apis(api.kubeConfig);
      await createCIDR(net, 'lean-a', ['10.251.0.0/24']);
      await waitReady(net, 'lean-a', 60_000).catch((e: Error) => {
        throw new Error(`${e.message} ${why()}`);
      });
      await net.deleteServiceCIDR({ name: 'lean-a' });
    } finally {
      expect(await d.stop(), why()).toBe(0);
    }
    expect(d.stderr).not.toMatch(/FORBIDDEN/);
    expect(d.stderr).toMatch(/successfully acquired lease/);
  });
});
