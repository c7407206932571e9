// The API server goes away and comes back mid-run: watches restart and the controller finishes
// its work without losing correctness.
import type { NetworkingV1Api } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ApiServer, startApiServer } from '../support/apiserver.js';
import {
  apis,
  createCIDR,
  createIP,
  deleteIP,
  hasFinalizer,
  readCIDR,
  ready,
  runController,
  waitFor,
  waitGone,
  waitReady,
} from './helpers.js';

let api: ApiServer;
let net: NetworkingV1Api;

beforeAll(async () => {
  api = await startApiServer();
  net = apis(api.kubeConfig).net;
});
afterAll(async () => {
  await api?.stop();
});

describe('API server restart', () => {
  it('keeps reconciling across a kube-apiserver restart', async () => {
    const ctl = runController({ kubeConfig: api.kubeConfig, deletionGracePeriodMs: 1000 });
    try {
      await createCIDR(net, 'before', ['10.230.0.0/24']);
      await waitReady(net, 'before');
      await createIP(net, '10.230.0.9', 'IPv4');
      await net.deleteServiceCIDR({ name: 'before' });
      await waitFor(
        'Terminating',
        async () => ready(await readCIDR(net, 'before'))?.reason === 'Terminating',
      );

      await api.kill();
      // While it is down, the controller must neither crash nor give up.
      await new Promise((r) => setTimeout(r, 2000));
      await api.restart();

      // Changes made after the restart are seen through the re-established watches.
      await createCIDR(net, 'after', ['10.231.0.0/24']);
      await waitReady(net, 'after', 60_000);
      expect(hasFinalizer(await readCIDR(net, 'before'))).toBe(true);
      await deleteIP(net, '10.230.0.9');
      await waitGone(net, 'before', 60_000);
    } finally {
      await ctl.stop();
    }
  });

  it('starts against an unreachable API server and catches up once it is back', async () => {
    await api.kill();
    const ctl = runController({ kubeConfig: api.kubeConfig });
    try {
      await new Promise((r) => setTimeout(r, 1500));
      expect(ctl.controller.active).toBe(false);
      await api.restart();
      await createCIDR(net, 'late', ['10.232.0.0/24']);
      await waitReady(net, 'late', 60_000);
    } finally {
      await ctl.stop();
    }
  });
});
