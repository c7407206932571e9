// The daemons' listener and JSON log lines, on their own (the daemons serve them end to end in
// test/deploy/cluster.test.ts).
import { spawnSync } from 'node:child_process';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { Counter, Registry } from 'prom-client';
import { afterEach, describe, expect, it } from 'vitest';
import { type HealthServer, parseAddr, serveHealth } from '../../ts/kube/health.js';
import { jsonLogger } from '../../ts/kube/log.js';
import { startDaemon } from '../support/daemon.js';

const servers: HealthServer[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) await s.close();
});

function registry(): Registry {
  const r = new Registry();
  new Counter({ name: 'kubenode_test_total', help: 'test', registers: [r] }).inc(3);
  return r;
}

async function get(
  addr: string,
  path: string,
): Promise<{ status: number; body: string; type: string | null }> {
  const r = await fetch(`http://${addr}${path}`);
  return { status: r.status, body: await r.text(), type: r.headers.get('content-type') };
}

describe('serveHealth', () => {
  it('serves /healthz, /readyz and /metrics on one listener when the addresses are equal', async () => {
    let why: string | undefined = 'informer-sync: not synced';
    const s = await serveHealth({
      healthAddr: '127.0.0.1:0',
      metricsAddr: '127.0.0.1:0',
      registry: registry(),
      notReady: () => why,
    });
    servers.push(s);
    expect(s.addresses).toHaveLength(1);
    const [addr] = s.addresses as [string];
    expect(await get(addr, '/healthz')).toMatchObject({ status: 200, body: 'ok' });
    expect(await get(addr, '/readyz')).toMatchObject({
      status: 500,
      body: '[-]informer-sync: not synced\nreadyz check failed\n',
    });
    why = undefined;
    expect(await get(addr, '/readyz')).toMatchObject({ status: 200, body: 'ok' });
    const m = await get(addr, '/metrics');
    expect(m.status).toBe(200);
    expect(m.type).toMatch(/^text\/plain; version=0\.0\.4/);
    expect(m.body).toMatch(/^kubenode_test_total 3$/m);
    expect((await get(addr, '/nope')).status).toBe(404);
  });

  it('splits the endpoints over two listeners when the addresses differ', async () => {
    const s = await serveHealth({
      healthAddr: '127.0.0.1:0',
      metricsAddr: '[::1]:0',
      registry: registry(),
      notReady: () => undefined,
    });
    servers.push(s);
    const [health, metrics] = s.addresses as [string, string];
    expect(metrics).toMatch(/^\[::1\]:\d+$/);
    expect((await get(health, '/readyz')).status).toBe(200);
    expect((await get(health, '/metrics')).status).toBe(404);
    expect((await get(metrics, '/metrics')).body).toMatch(/kubenode_test_total 3/);
    expect((await get(metrics, '/healthz')).status).toBe(200);
    expect((await get(metrics, '/readyz')).status).toBe(404);
  });

  it('refuses a malformed address and a taken port, leaving nothing bound', async () => {
    await expect(
      serveHealth({ healthAddr: 'localhost', registry: registry(), notReady: () => undefined }),
    ).rejects.toThrow('"localhost" is not HOST:PORT');
    const blocker = createServer();
    await new Promise<void>((r) => blocker.listen(0, '127.0.0.1', r));
    const port = (blocker.address() as { port: number }).port;
    await expect(
      serveHealth({
        healthAddr: '127.0.0.1:0',
        metricsAddr: `127.0.0.1:${port}`,
        registry: registry(),
        notReady: () => undefined,
      }),
    ).rejects.toThrow(`cannot listen on 127.0.0.1:${port}: listen EADDRINUSE`);
    blocker.close();
  });

  it('parses HOST:PORT like the kube components (empty host: all addresses)', () => {
    expect(parseAddr(':8080')).toEqual({ host: '0.0.0.0', port: 8080 });
    expect(parseAddr('[fd00::1]:9')).toEqual({ host: 'fd00::1', port: 9 });
    expect(parseAddr('1.2.3.4:65536')).toBeUndefined();
    expect(parseAddr('::1:80')).toBeUndefined();
  });
});

describe('jsonLogger', () => {
  it("writes component-base's JSON lines: ts (epoch ms), v, msg, err, then the keys", () => {
    const lines: string[] = [];
    const log = jsonLogger(2, { write: (s: string) => lines.push(s) });
    const before = Date.now();
    log.info(2, 'Updating ServiceCIDR condition', {
      ServiceCIDR: 'a',
      condition: { type: 'Ready' },
      gone: undefined,
    });
    log.info(3, 'too verbose');
    log.error('Unable to write event', new Error('boom'), { reason: 'X' });
    expect(lines).toHaveLength(2);
    for (const l of lines) expect(l.endsWith('}\n')).toBe(true);
    const [info, err] = lines.map((l) => JSON.parse(l));
    expect(Object.keys(info)).toEqual(['ts', 'v', 'msg', 'ServiceCIDR', 'condition', 'gone']);
    expect(info).toMatchObject({
      v: 2,
      msg: 'Updating ServiceCIDR condition',
      condition: { type: 'Ready' },
      gone: null,
    });
    expect(info.ts).toBeGreaterThanOrEqual(before - 1);
    expect(info.ts).toBeLessThanOrEqual(Date.now() + 1);
    expect(Object.keys(err)).toEqual(['ts', 'msg', 'err', 'reason']);
    expect(err).toMatchObject({ msg: 'Unable to write event', err: 'boom', reason: 'X' });
  });

  it('keeps a line whose values JSON cannot encode', () => {
    const lines: string[] = [];
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    jsonLogger(0, { write: (s: string) => lines.push(s) }).info(0, 'odd', { cyclic, big: 1n });
    expect(JSON.parse(lines[0] as string)).toMatchObject({ msg: 'odd', cyclic: '[object Object]', big: '1' });
  });
});

describe('daemon flags', () => {
  const main = join(import.meta.dirname, '..', '..', 'ts', 'cli', 'main.ts');
  const kubeconfig = join(import.meta.dirname, 'fixtures', 'kubeconfig.yaml');
  const run = (args: string[]) =>
    spawnSync(process.execPath, ['--import', 'tsx', main, ...args], { encoding: 'utf8', timeout: 60_000 });

  it('an unknown --logging-format, a bad -v or a bad listener address exits 2 and says why', () => {
    const badFormat = run(['conntrack', 'reconcile', '--kubeconfig', '/dev/null', '--logging-format', 'xml']);
    expect(badFormat.status).toBe(2);
    expect(badFormat.stderr).toBe(
      'kubenode conntrack reconcile: --logging-format must be text or json, got "xml"\n',
    );
    const badV = run(['servicecidr-controller', '--kubeconfig', kubeconfig, '-v', 'x']);
    expect(badV.status).toBe(2);
    expect(badV.stderr).toContain('invalid argument "x" for "-v, --v" flag');
    // The manifests' spelling, `-v=2`, is a verbosity (pflag's shorthand with `=`); `-v==2` is not.
    const manifestV = run([
      'servicecidr-controller',
      '--kubeconfig',
      kubeconfig,
      '-v=2',
      '--logging-format',
      'xml',
    ]);
    expect(manifestV.stderr).not.toContain('"-v, --v" flag');
    expect(manifestV.stderr).toContain('--logging-format must be text or json');
    const doubleEq = run(['servicecidr-controller', '--kubeconfig', kubeconfig, '-v==2']);
    expect(doubleEq.status).toBe(2);
    expect(doubleEq.stderr).toContain('invalid argument "==2" for "-v, --v" flag');
    // The reconciler checks its listener address as a usage error too, with one line.
    const badReconcilerAddr = run([
      'conntrack',
      'reconcile',
      '--kubeconfig',
      kubeconfig,
      '--healthz-bind-address=',
      '--metrics-bind-address',
      'nowhere',
    ]);
    expect(badReconcilerAddr.status, badReconcilerAddr.stderr).toBe(2);
    expect(badReconcilerAddr.stderr).toContain('kubenode conntrack reconcile: "nowhere" is not HOST:PORT');
    expect(badReconcilerAddr.stderr).not.toContain('exit 2');
    const badPort = run(['servicecidr-controller', '--kubeconfig', kubeconfig, '--secure-port', '70000']);
    expect(badPort.status).toBe(2);
    expect(badPort.stderr).toContain('--secure-port must be a port number (0: off), got "70000"');
    const badQps = run(['servicecidr-controller', '--kubeconfig', kubeconfig, '--kube-api-qps', '0']);
    expect(badQps.status).toBe(2);
    expect(badQps.stderr).toContain('--kube-api-qps must be a positive number, got "0"');
  });

  it('takes Go durations for the leader election timings and checks their order', () => {
    const ms = run([
      'servicecidr-controller',
      '--kubeconfig',
      kubeconfig,
      '--leader-elect-retry-period',
      '2000',
    ]);
    expect(ms.status).toBe(2);
    expect(ms.stderr).toContain(
      'invalid argument "2000" for "--leader-elect-retry-period" flag: time: missing unit in duration "2000"',
    );
    const order = run([
      'servicecidr-controller',
      '--kubeconfig',
      kubeconfig,
      '--leader-elect',
      '--leader-elect-renew-deadline=20s',
    ]);
    expect(order.status).toBe(2);
    expect(order.stderr).toContain(
      'leader election needs --leader-elect-lease-duration > --leader-elect-renew-deadline > --leader-elect-retry-period > 0',
    );
  });

  // Each renamed flag still works, with pflag's one-line warning; the value reaches the new flag
  // (shown by the refusal of a bad value, which names the new flag).
  it.each([
    ['conntrack reconcile', '--log-format', 'xml', '--logging-format must be text or json, got "xml"'],
    ['conntrack reconcile', '--health-addr', 'nowhere', '"nowhere" is not HOST:PORT'],
    ['conntrack reconcile', '--metrics-addr', 'elsewhere', '"elsewhere" is not HOST:PORT'],
    ['servicecidr-controller', '--log-format', 'xml', '--logging-format must be text or json, got "xml"'],
  ])('%s %s is a deprecated alias', (command, flag, value, refusal) => {
    // The listener the alias does not set stays off: its default port is one per machine.
    const quiet =
      command !== 'conntrack reconcile'
        ? []
        : flag === '--health-addr'
          ? ['--metrics-bind-address=']
          : flag === '--metrics-addr'
            ? ['--healthz-bind-address=']
            : ['--healthz-bind-address=', '--metrics-bind-address='];
    const r = run([...command.split(' '), '--kubeconfig', kubeconfig, ...quiet, flag, value]);
    expect(r.status, r.stderr).toBe(2);
    const replacement = {
      '--log-format': '--logging-format',
      '--health-addr': '--healthz-bind-address',
      '--metrics-addr': '--metrics-bind-address',
    }[flag];
    expect(r.stderr).toBe(
      `Flag ${flag} has been deprecated, use ${replacement} instead\nkubenode ${command}: ${refusal}\n`,
    );
  });

  it.each([
    ['--leader-elect-name', '--leader-elect-resource-name'],
    ['--leader-elect-namespace', '--leader-elect-resource-namespace'],
  ])('servicecidr-controller %s is a deprecated alias of %s', async (flag, replacement) => {
    // The value reaches the Lease the controller campaigns for (its log line names it); the
    // API server is unreachable, so the controller stays in its first attempt.
    const d = startDaemon([
      'servicecidr-controller',
      '--kubeconfig',
      kubeconfig,
      '--secure-port=0',
      '--leader-elect',
      `${flag}=from-alias`,
    ]);
    try {
      await d.waitOutput(/attempting to acquire leader lease/);
    } finally {
      await d.stop();
    }
    expect(d.stderr).toContain(`Flag ${flag} has been deprecated, use ${replacement} instead\n`);
    const lease = /attempting to acquire leader lease" lease="([^"]+)"/.exec(d.stderr)?.[1];
    expect(lease).toBe(
      flag.endsWith('-name') ? 'kube-system/from-alias' : 'from-alias/service-cidr-controller',
    );
  });

  it('the controller refuses its removed plain-HTTP listener flags, saying what replaces them', () => {
    for (const flag of ['--health-addr', '--metrics-addr']) {
      const r = run(['servicecidr-controller', '--kubeconfig', kubeconfig, flag, '127.0.0.1:8080']);
      expect(r.status).toBe(2);
      expect(r.stderr).toContain(
        `kubenode servicecidr-controller: ${flag} was removed: health and metrics are served over HTTPS on --bind-address:--secure-port`,
      );
    }
  });
});
