// The event recorder: client-go's correlator rules on a fake clock, and its writes against a
// real kube-apiserver (one Event whose count grows, the combined message past the threshold,
// explicit field manager and user agent).
import { CoreV1Api, type CoreV1Event } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { withUserAgent } from '../../ts/kube/client.js';
import { EventCorrelator, EventRecorder, TokenBucket } from '../../ts/kube/events.js';
import { type ApiServer, startApiServer } from '../support/apiserver.js';

const silent = { info() {}, error() {} };

function fakeClock(start = 1_700_000_000_000) {
  let now = start;
  return { clock: () => now, advance: (ms: number) => (now += ms) };
}

function warning(name: string, reason: string, message: string, uid = `uid-${name}`): CoreV1Event {
  return {
    metadata: { name: `${name}.1`, namespace: 'default' },
    involvedObject: { kind: 'ServiceCIDR', apiVersion: 'networking.k8s.io/v1', name, uid },
    type: 'Warning',
    reason,
    message,
    count: 1,
    source: { component: 'c' },
    reportingComponent: 'c',
  };
}

describe('spam filter token bucket (fake clock)', () => {
  it('burst 25, then one token per 5 minutes, capped at the burst', () => {
    const t = fakeClock();
    const b = new TokenBucket(1 / 300, 25, t.clock);
    for (let i = 0; i < 25; i++) expect(b.tryAccept()).toBe(true);
    expect(b.tryAccept()).toBe(false);
    t.advance(299_000);
    expect(b.tryAccept()).toBe(false);
    t.advance(1_000);
    expect(b.tryAccept()).toBe(true);
    expect(b.tryAccept()).toBe(false);
    t.advance(365 * 24 * 3600_000);
    for (let i = 0; i < 25; i++) expect(b.tryAccept()).toBe(true);
    expect(b.tryAccept()).toBe(false);
  });

  it('the correlator skips the 26th event about one object, per source and object', () => {
    const t = fakeClock();
    const c = new EventCorrelator(t.clock);
    const results = Array.from({ length: 26 }, (_, i) => c.correlate(warning('a', 'R', `same ${i % 2}`)));
    expect(results.slice(0, 25).every((r) => !r.skip)).toBe(true);
    expect(results[25]?.skip).toBe(true);
    // Another object has its own bucket.
    expect(c.correlate(warning('b', 'R', 'x')).skip).toBe(false);
    t.advance(300_000);
    expect(c.correlate(warning('a', 'R', 'later')).skip).toBe(false);
  });

  it('counts a repeated event up and combines the 10th distinct message within 10 minutes', () => {
    const t = fakeClock();
    const c = new EventCorrelator(t.clock);
    const first = c.correlate(warning('a', 'R', 'm'));
    expect(first.patch).toBeUndefined();
    c.updateState({
      ...first.event,
      metadata: { ...first.event.metadata, name: 'a.srv', resourceVersion: '7' },
    });
    const second = c.correlate(warning('a', 'R', 'm'));
    expect(second.event).toMatchObject({ count: 2, metadata: { name: 'a.srv', resourceVersion: '7' } });
    expect(second.patch).toMatchObject({ count: 2, message: 'm' });
    for (let i = 1; i <= 8; i++) {
      expect(c.correlate(warning('a', 'R', `m${i}`)).event.message).toBe(`m${i}`);
    }
    expect(c.correlate(warning('a', 'R', 'm9')).event.message).toBe('(combined from similar events): m9');
    // Past 10 minutes of quiet, a fresh aggregation window.
    t.advance(600_001);
    expect(c.correlate(warning('a', 'R', 'm10')).event.message).toBe('m10');
  });
});

describe('EventRecorder retries (a sink that fails like a broken connection)', () => {
  function flakySink(failures: number, code?: number) {
    const calls: string[] = [];
    const core = {
      async createNamespacedEvent(req: { body: CoreV1Event }) {
        calls.push('create');
        if (calls.length <= failures) throw Object.assign(new Error('socket hang up'), code ? { code } : {});
        return { ...req.body, metadata: { ...req.body.metadata, resourceVersion: '1' } };
      },
    };
    return { core: core as unknown as CoreV1Api, calls };
  }

  it('retries network failures (a server status is final) and stops at shutdown', async () => {
    const errors: string[] = [];
    const log = { info() {}, error: (m: string) => errors.push(m) };
    const net = flakySink(2);
    const r1 = new EventRecorder({
      core: net.core,
      source: { component: 'c' },
      fieldManager: 'm',
      log,
      retryDelayMs: 1,
    });
    await r1.warning({ kind: 'Node', name: 'n' }, 'R', 'msg');
    expect(net.calls).toEqual(['create', 'create', 'create']);
    const refused = flakySink(5, 422);
    const r2 = new EventRecorder({
      core: refused.core,
      source: { component: 'c' },
      fieldManager: 'm',
      log,
      retryDelayMs: 1,
    });
    await r2.warning({ kind: 'Node', name: 'n' }, 'R', 'msg');
    expect(refused.calls).toEqual(['create']);
    expect(errors).toContain('Server rejected event (will not retry!)');
    const down = flakySink(100);
    const r3 = new EventRecorder({
      core: down.core,
      source: { component: 'c' },
      fieldManager: 'm',
      log,
      retryDelayMs: 60_000,
    });
    const pending = r3.warning({ kind: 'Node', name: 'n' }, 'R', 'msg');
    await new Promise((r) => setTimeout(r, 50));
    r3.shutdown();
    await pending;
    expect(down.calls).toEqual(['create']);
    expect(errors).toContain('Unable to write event (broadcaster is shut down)');
  });

  it('an aborted signal drops the event: no retry, and nothing once aborted before the call', async () => {
    const log = { info() {}, error() {} };
    const down = flakySink(100);
    const r = new EventRecorder({
      core: down.core,
      source: { component: 'c' },
      fieldManager: 'm',
      log,
      retryDelayMs: 1,
    });
    const term = new AbortController();
    const pending = r.warning({ kind: 'Node', name: 'n' }, 'R', 'msg', term.signal);
    await new Promise((res) => setTimeout(res, 20));
    term.abort();
    const made = down.calls.length;
    await pending;
    await new Promise((res) => setTimeout(res, 20));
    // Nothing after the term ended; without the signal the retries would go on to 12 tries.
    expect(down.calls.length).toBe(made);
    const before = down.calls.length;
    await r.warning({ kind: 'Node', name: 'n' }, 'R', 'later', term.signal);
    expect(down.calls.length).toBe(before);
  });
});

describe('EventRecorder (real kube-apiserver)', () => {
  let api: ApiServer;
  let core: CoreV1Api;
  beforeAll(async () => {
    api = await startApiServer();
    core = api.kubeConfig.makeApiClient(CoreV1Api);
  });
  afterAll(async () => {
    await api?.stop();
  });

  const events = async (name: string) =>
    (await core.listNamespacedEvent({ namespace: 'default' })).items.filter(
      (e) => e.involvedObject?.name === name,
    );

  function recorder(): EventRecorder {
    const kc = withUserAgent(api.kubeConfig, 'kubenode-events-test');
    return new EventRecorder({
      core: kc.makeApiClient(CoreV1Api),
      source: { component: 'kubenode-events-test' },
      fieldManager: 'kubenode-events-test-manager',
      log: silent,
    });
  }
  const obj = (name: string) => ({
    apiVersion: 'networking.k8s.io/v1',
    kind: 'ServiceCIDR',
    name,
    uid: `00000000-0000-0000-0000-${name.padStart(12, '0').slice(-12)}`,
  });

  it('a repeated failure is one Event whose count grows, patched in place', async () => {
    const rec = recorder();
    const counts: number[] = [];
    for (let i = 0; i < 12; i++) {
      await rec.warning(obj('repeat'), 'KubernetesServiceCIDRError', 'The ServiceCIDR Status can not be set');
      const list = await events('repeat');
      expect(list).toHaveLength(1);
      counts.push(list[0]?.count ?? 0);
    }
    expect(counts).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]);
    const [ev] = await events('repeat');
    expect(ev).toMatchObject({
      type: 'Warning',
      reportingComponent: 'kubenode-events-test',
      source: { component: 'kubenode-events-test' },
    });
    expect(ev?.lastTimestamp?.getTime()).toBeGreaterThanOrEqual(ev?.firstTimestamp?.getTime() ?? 0);
    const managers = new Set((ev?.metadata?.managedFields ?? []).map((m) => m.manager));
    expect(managers).toEqual(new Set(['kubenode-events-test-manager']));
  });

  it('the 10th distinct message with the same reason is combined', async () => {
    const rec = recorder();
    for (let i = 1; i <= 10; i++) await rec.warning(obj('similar'), 'FailedSync', `attempt ${i} failed`);
    const list = await events('similar');
    expect(list).toHaveLength(10);
    const combined = list.filter((e) => e.message?.startsWith('(combined from similar events): '));
    expect(combined.map((e) => e.message)).toEqual(['(combined from similar events): attempt 10 failed']);
    // Further similar events count up on the combined Event.
    await rec.warning(obj('similar'), 'FailedSync', 'attempt 11 failed');
    const after = await events('similar');
    expect(after).toHaveLength(10);
    expect(after.find((e) => e.message?.startsWith('(combined'))).toMatchObject({
      count: 2,
      message: '(combined from similar events): attempt 11 failed',
    });
  });

  it('sends the component as User-Agent (the server names a write without fieldManager after it)', async () => {
    const kc = withUserAgent(api.kubeConfig, 'kubenode-ua-probe');
    const c = kc.makeApiClient(CoreV1Api);
    const cm = await c.createNamespacedConfigMap({
      namespace: 'default',
      body: { metadata: { name: 'ua-probe' }, data: { a: 'b' } },
    });
    expect(cm.metadata?.managedFields?.map((m) => m.manager)).toEqual(['kubenode-ua-probe']);
    // The original KubeConfig is untouched.
    const plain = await core.createNamespacedConfigMap({
      namespace: 'default',
      body: { metadata: { name: 'ua-plain' }, data: { a: 'b' } },
    });
    expect(plain.metadata?.managedFields?.map((m) => m.manager)).not.toEqual(['kubenode-ua-probe']);
  });
});
