// The daemons' listeners under abuse from anything on the node (hostNetwork): slow headers,
// oversized headers, more connections than a probe can wait behind. In-process for each limit,
// then a real reconciler process under a bounded slow-header flood over loopback.
import { type ChildProcess, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { get } from 'node:http';
import { get as httpsGet } from 'node:https';
import { connect, type Socket } from 'node:net';
import { join } from 'node:path';
import { Registry } from 'prom-client';
import { afterEach, describe, expect, it } from 'vitest';
import {
  type HealthServer,
  LISTENER_LIMITS,
  type ListenerLimits,
  serveHealth,
} from '../../ts/kube/health.js';
import { selfSignedCert } from '../../ts/kube/serving-cert.js';

const servers: HealthServer[] = [];
const sockets: Socket[] = [];
afterEach(async () => {
  for (const s of sockets.splice(0)) s.destroy();
  for (const s of servers.splice(0)) await s.close();
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * A connection that sends the start of a request and `pad` bytes of a header, then stalls; with
 * `pad` below 0 it sends nothing at all.
 */
function stalled(addr: string, pad: number): Promise<Socket> {
  const [host, port] = [addr.slice(0, addr.lastIndexOf(':')), Number(addr.slice(addr.lastIndexOf(':') + 1))];
  return new Promise((resolve) => {
    const s = connect(port, host, () => {
      if (pad >= 0) s.write(`GET /healthz HTTP/1.1\r\nHost: x\r\nX-Pad: ${'a'.repeat(pad)}`);
      resolve(s);
    });
    s.on('error', () => resolve(s));
    // Read what comes back: a paused socket would never see the server close it.
    s.resume();
    sockets.push(s);
  });
}

const closed = (s: Socket) => new Promise<void>((r) => (s.destroyed ? r() : s.once('close', () => r())));

/**
 * GET /healthz on a new connection, as the kubelet probes (no kept-alive connection from before
 * a flood); the status and how long it took, or status 0 on a failure or past 3 s.
 */
function probe(addr: string): Promise<{ status: number; ms: number }> {
  const t = performance.now();
  return new Promise((resolve) => {
    const done = (status: number) => resolve({ status, ms: performance.now() - t });
    const req = get(`http://${addr}/healthz`, { agent: false, timeout: 3000 }, (res) => {
      res.resume();
      res.on('end', () => done(res.statusCode ?? 0));
      res.on('error', () => done(0));
    });
    req.on('timeout', () => req.destroy());
    req.on('error', () => done(0));
  });
}

async function serve(limits: Partial<ListenerLimits>): Promise<string> {
  const s = await serveHealth({
    healthAddr: '127.0.0.1:0',
    registry: new Registry(),
    notReady: () => undefined,
    limits,
  });
  servers.push(s);
  return s.addresses[0] as string;
}

/** GET /healthz over HTTPS on a new connection; resolves with the status (0 on a failure). */
function probeTls(addr: string): Promise<number> {
  return new Promise((resolve) => {
    const req = httpsGet(
      `https://${addr}/healthz`,
      { agent: false, rejectUnauthorized: false, timeout: 3000 },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
        res.on('error', () => resolve(0));
      },
    );
    req.on('timeout', () => req.destroy());
    req.on('error', () => resolve(0));
  });
}

describe('listener limits', () => {
  it('closes a connection whose headers do not arrive in time', async () => {
    const addr = await serve({ headersTimeoutMs: 500, requestTimeoutMs: 1000 });
    const s = await stalled(addr, 10);
    const t = performance.now();
    await closed(s);
    expect(performance.now() - t).toBeLessThan(3000);
  });

  it('answers headers over the limit with 431 and closes', async () => {
    const addr = await serve({});
    const r = await fetch(`http://${addr}/healthz`, {
      headers: { 'X-Pad': 'a'.repeat(LISTENER_LIMITS.maxHeaderBytes) },
    }).catch((e: Error) => e);
    // Node answers 431 and closes; fetch may see either.
    if (!(r instanceof Error)) expect(r.status).toBe(431);
    expect((await probe(addr)).status).toBe(200);
  });

  it('past the connection cap closes the oldest stalled connection, so a probe gets through', async () => {
    const addr = await serve({ maxConnections: 20 });
    const flood: Socket[] = [];
    for (let i = 0; i < 20; i++) flood.push(await stalled(addr, 100));
    await sleep(100);
    const p = await probe(addr);
    expect(p.status).toBe(200);
    await closed(flood[0] as Socket);
    expect(flood.filter((s) => s.destroyed).length).toBeGreaterThanOrEqual(1);
    // The newest stalled connections are still open.
    expect((flood[19] as Socket).destroyed).toBe(false);
  });

  it('over HTTPS, past the cap closes the oldest stalled connection after requests have been served', async () => {
    const tls = await selfSignedCert();
    const s = await serveHealth({
      healthAddr: '127.0.0.1:0',
      registry: new Registry(),
      notReady: () => undefined,
      tls,
      limits: { maxConnections: 20 },
    });
    servers.push(s);
    const addr = s.addresses[0] as string;
    // Served requests on connections that then close: none may stay behind in the cap's queue.
    for (let i = 0; i < 5; i++) expect(await probeTls(addr)).toBe(200);
    await sleep(100);
    const flood: Socket[] = [];
    // Connections that never start the TLS handshake.
    for (let i = 0; i < 20; i++) flood.push(await stalled(addr, -1));
    await sleep(100);
    expect(await probeTls(addr)).toBe(200);
    const t = performance.now();
    await Promise.race([closed(flood[0] as Socket), sleep(5000)]);
    expect(performance.now() - t).toBeLessThan(5000);
    expect((flood[0] as Socket).destroyed).toBe(true);
    expect((flood[19] as Socket).destroyed).toBe(false);
  });
});

function rssKiB(pid: number): number {
  const m = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return Number(m?.[1]);
}

describe('a reconciler under a slow-header flood', () => {
  it('keeps /healthz fast and its memory bounded', async () => {
    const main = join(import.meta.dirname, '..', '..', 'ts', 'cli', 'main.ts');
    const kubeconfig = join(import.meta.dirname, 'fixtures', 'kubeconfig.yaml');
    // 1024 descriptors: a flood past them would starve the probe of a connection, as the
    // process's limit does in a pod.
    const child: ChildProcess = spawn(
      'prlimit',
      [
        '--nofile=1024:1024',
        process.execPath,
        '--import',
        'tsx',
        main,
        'conntrack',
        'reconcile',
        '--kubeconfig',
        kubeconfig,
        '--family=ipv4',
        '--dry-run',
        '--healthz-bind-address=127.0.0.1:0',
        '--metrics-bind-address=',
        '--logging-format=json',
      ],
      { stdio: ['ignore', 'ignore', 'pipe'] },
    );
    let stderr = '';
    child.stderr?.on('data', (c) => {
      stderr += c;
    });
    try {
      const deadline = Date.now() + 60_000;
      let addr: string | undefined;
      while (!addr) {
        addr = /"msg":"Serving health and metrics".*?"addresses":\["([^"]+)"/.exec(stderr)?.[1];
        if (Date.now() > deadline || child.exitCode !== null) throw new Error(`no listener: ${stderr}`);
        await sleep(100);
      }
      const pid = child.pid as number;
      expect((await probe(addr)).status).toBe(200);
      const before = rssKiB(pid);
      // 2000 connections (twice the descriptors), half with 15 KB of headers (over the header
      // limit), half with 4 KB (under it), all stalled; 20 at a time.
      for (let i = 0; i < 2000; i += 20) {
        await Promise.all(
          Array.from({ length: 20 }, (_, j) => stalled(addr, (i + j) % 2 ? 15 * 1024 : 4 * 1024)),
        );
      }
      const probes: { status: number; ms: number }[] = [];
      let peak = 0;
      for (let i = 0; i < 10; i++) {
        probes.push(await probe(addr));
        peak = Math.max(peak, rssKiB(pid));
        await sleep(200);
      }
      expect(probes.map((p) => p.status)).toEqual(Array(10).fill(200));
      // Generous for a loaded machine: before the limits, probes got no answer at all.
      expect(Math.max(...probes.map((p) => p.ms))).toBeLessThan(2500);
      expect((peak - before) / 1024, `RSS ${before} KiB -> ${peak} KiB`).toBeLessThan(64);
    } finally {
      for (const s of sockets.splice(0)) s.destroy();
      child.kill('SIGTERM');
      await new Promise((r) => (child.exitCode !== null ? r(null) : child.once('exit', r)));
    }
  }, 120_000);
});
