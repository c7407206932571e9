// `conntrack.events()` on the real kernel: real UDP flows through nftables DNAT in a throwaway
// namespace, changed and deleted with conntrack-tools, seen through the event stream.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { conntrack, KubenodeError, KubenodeTypeError } from '../../ts/index.js';
import { TestNetns, teardown } from './netns.js';

const VIP = '10.96.0.10';
const EP = ['10.244.0.1', '10.244.0.2'];
/** Source ports 41000… go to EP[0], 42000… to EP[1]. */
const N = 20;

/** One UDP request from port argv[1] to a local echo server, and its reply. */
const ECHO = `
const dgram = require('node:dgram');
const srv = dgram.createSocket('udp4');
srv.on('message', (m, r) => srv.send(m, r.port, r.address));
srv.bind(7777, '10.0.0.1', () => {
  const c = dgram.createSocket('udp4');
  c.on('message', () => { c.close(); srv.close(); });
  c.bind(Number(process.argv[1]), '10.0.0.1', () => c.send('x', 7777, '10.0.0.1'));
});`;

/** Pulls events without losing one to a timeout: an unanswered next() is kept for the next call. */
class Reader {
  #pending: Promise<IteratorResult<conntrack.ConntrackEvent>> | undefined;
  constructor(readonly stream: conntrack.EventStream) {}

  /** Events until `enough` holds or `ms` pass. */
  async collect(
    enough: (got: conntrack.ConntrackEvent[]) => boolean,
    ms = 10_000,
  ): Promise<conntrack.ConntrackEvent[]> {
    const got: conntrack.ConntrackEvent[] = [];
    const deadline = Date.now() + ms;
    while (!enough(got)) {
      const left = deadline - Date.now();
      if (left <= 0) break;
      this.#pending ??= this.stream.next();
      let timer: NodeJS.Timeout | undefined;
      const timeout = new Promise<'timeout'>((r) => {
        timer = setTimeout(() => r('timeout'), left);
      });
      const r = await Promise.race([this.#pending, timeout]);
      clearTimeout(timer);
      if (r === 'timeout') break;
      this.#pending = undefined;
      if (r.done) break;
      got.push(r.value);
    }
    return got;
  }
}

const flowsOf = (evs: conntrack.ConntrackEvent[]) =>
  evs.filter((e): e is conntrack.FlowEvent => e.type !== 'lost');
const count = (evs: conntrack.ConntrackEvent[], type: string) => evs.filter((e) => e.type === type).length;

/** The netlink sockets this process holds (each stream holds one). */
function netlinkSockets(): number {
  const inodes = new Set(
    spawnSync('sh', ['-c', 'cat /proc/net/netlink'], { encoding: 'utf8' })
      .stdout.split('\n')
      .slice(1)
      .map((l) => l.trim().split(/\s+/)[9])
      .filter(Boolean),
  );
  let n = 0;
  for (const fd of readdirSync('/proc/self/fd')) {
    try {
      const m = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/self/fd/${fd}`));
      if (m && !inodes.has(m[1])) n++;
    } catch {
      // closed while listing
    }
  }
  return n;
}

describe('conntrack.events() on the real kernel', () => {
  let ns: TestNetns;
  let dir: string;
  let sport = 41000;

  /** Sends one datagram per new source port to the VIP (DNATed by port range) and returns the ports. */
  const send = (n: number, base?: number): number[] => {
    const start = base ?? sport;
    if (base === undefined) sport += n;
    const ports = Array.from({ length: n }, (_, i) => start + i);
    ns.sendUdp(ports.map((p): [number, string, number] => [p, VIP, 53]));
    return ports;
  };

  beforeAll(() => {
    ns = new TestNetns('kn-ct-ev');
    dir = mkdtempSync(join(tmpdir(), 'kn-ct-ev-'));
    ns.nft(`table ip kn {
 chain out {
  type nat hook output priority -100; policy accept;
  ip daddr ${VIP} udp dport 53 udp sport 41000-41999 dnat to ${EP[0]}:5353
  ip daddr ${VIP} udp dport 53 udp sport 42000-49999 dnat to ${EP[1]}:5353
 }
}`);
    ns.exec('sh', ['-c', 'echo 600 > /proc/sys/net/netfilter/nf_conntrack_udp_timeout']);
  });

  afterAll(() => teardown(ns, dir));

  it('sees every flow once as new and once as destroy, with its DNAT target', async () => {
    const stream = conntrack.events({ netns: ns.path });
    await stream.ready();
    const r = new Reader(stream);
    const ports = send(N);
    ns.exec('conntrack', ['-F']);
    const evs = flowsOf(await r.collect((g) => count(g, 'destroy') >= N));
    stream.close();
    const seen = (type: string) =>
      evs
        .filter((e) => e.type === type)
        .map((e) => e.flow.forward.srcPort)
        .sort();
    expect(seen('new')).toEqual(ports);
    expect(seen('destroy')).toEqual(ports);
    const e = evs.find((x) => x.type === 'destroy');
    expect(e?.flow).toMatchObject({
      protocol: 17,
      forward: { srcIP: '10.0.0.1', dstIP: VIP, dstPort: 53 },
      reverse: { srcIP: EP[0], srcPort: 5353 },
    });
    expect(e?.flow.id).toBeTypeOf('number');
  });

  it('sees an update when a flow changes; a destroy-only stream sees no new flow', async () => {
    const all = conntrack.events({ netns: ns.path });
    const destroyOnly = conntrack.events({ netns: ns.path, groups: ['destroy'] });
    await Promise.all([all.ready(), destroyOnly.ready()]);
    // A request and its reply: the reply sets SEEN_REPLY, an update.
    const p = 43500;
    ns.exec(process.execPath, ['-e', ECHO, String(p)]);
    ns.exec('conntrack', ['-D', '-p', 'udp', '--sport', String(p)]);
    const evs = await new Reader(all).collect((g) => count(g, 'destroy') >= 1);
    const destroyed = await new Reader(destroyOnly).collect((g) => count(g, 'destroy') >= 1);
    all.close();
    destroyOnly.close();
    expect(evs.map((e) => e.type)).toEqual(['new', 'update', 'destroy']);
    const IPS_SEEN_REPLY = 1 << 1;
    const [created, updated] = flowsOf(evs).map((e) => e.flow.status & IPS_SEEN_REPLY);
    expect([created, updated]).toEqual([0, IPS_SEEN_REPLY]);
    expect(destroyed.map((e) => e.type)).toEqual(['destroy']);
    expect(flowsOf(destroyed)[0]?.flow.forward.srcPort).toBe(p);
  });

  it('filters by protocol and destination (in the kernel and again in Rust)', async () => {
    const tcp = conntrack.events({ netns: ns.path, filter: { protocol: 'tcp' } });
    const udpToVip = conntrack.events({
      netns: ns.path,
      filter: { protocol: 'udp', orig: { dst: '10.96.0.0/16', dstPort: 53 } },
    });
    const labelsOnly = conntrack.events({ netns: ns.path, filter: { labels: { value: 1n, mask: 1n } } });
    await Promise.all([tcp.ready(), udpToVip.ready(), labelsOnly.ready()]);
    // Protocol and address are checked by the kernel; labels are not.
    expect([tcp.kernelFilter, udpToVip.kernelFilter, labelsOnly.kernelFilter]).toEqual([true, true, false]);
    labelsOnly.close();
    // Still known while a read waits on the socket (no flow yet).
    const pending = new Reader(tcp).collect((g) => g.length >= 1);
    await new Promise((r) => setTimeout(r, 50));
    expect(tcp.kernelFilter).toBe(true);
    const [p] = send(1);
    ns.sendUdp([[43999, '203.0.113.5', 9999]]); // other destination
    ns.exec('conntrack', [
      ...['-I', '-p', 'tcp', '-s', '10.0.0.1', '-d', '10.96.0.30', '--sport', '1000', '--dport', '80'],
      ...['--state', 'ESTABLISHED', '-u', 'SEEN_REPLY', '-t', '100'],
    ]);
    const t = await pending;
    const u = await new Reader(udpToVip).collect((g) => g.length >= 2, 2000);
    tcp.close();
    udpToVip.close();
    expect(tcp.kernelFilter).toBe(false);
    expect(flowsOf(t).map((e) => [e.type, e.flow.protocol, e.flow.forward.srcPort])).toEqual([
      ['new', 6, 1000],
    ]);
    expect(flowsOf(u).map((e) => [e.type, e.flow.forward.srcPort])).toEqual([['new', p]]);
    ns.exec('conntrack', ['-F']);
  });

  it('reports a forced overflow as lost and keeps working after it', async () => {
    const stream = conntrack.events({ netns: ns.path, bufferSize: 4096, groups: ['new'] });
    await stream.ready();
    // Nobody reads while 300 flows are created: the 8 KiB buffer overflows.
    send(300, 44000);
    const r = new Reader(stream);
    const first = await r.collect((g) => g.some((e) => e.type === 'lost'));
    const lost = first.find((e): e is conntrack.LostEvent => e.type === 'lost');
    expect(lost?.count).toBeGreaterThanOrEqual(1);
    expect(count(first, 'new')).toBeLessThan(300);
    // Drain what was queued, then a new flow arrives as usual.
    await r.collect(() => false, 1500);
    const [p] = send(1, 45000);
    const after = await r.collect((g) => g.length >= 1);
    stream.close();
    expect(after.map((e) => e.type)).toEqual(['new']);
    expect(flowsOf(after)[0]?.flow.forward.srcPort).toBe(p);
    ns.exec('conntrack', ['-F']);
  });

  it('closes the socket on break and on close()', async () => {
    const before = netlinkSockets();
    const stream = conntrack.events({ netns: ns.path, groups: ['new'] });
    await stream.ready();
    expect(netlinkSockets()).toBe(before + 1);
    send(1);
    for await (const e of stream) {
      expect(e.type).toBe('new');
      break;
    }
    expect(netlinkSockets()).toBe(before);
    expect(await stream.next()).toEqual({ value: undefined, done: true });

    // close() while a next() waits: the read is woken and the iteration ends.
    const waiting = conntrack.events({ netns: ns.path, groups: ['new'] });
    await waiting.ready();
    const pending = waiting.next();
    await new Promise((r) => setTimeout(r, 50));
    const t0 = Date.now();
    waiting.close();
    expect(await pending).toEqual({ value: undefined, done: true });
    expect(Date.now() - t0).toBeLessThan(700);
    expect(netlinkSockets()).toBe(before);
  });

  it('ends with signal.reason on abort', async () => {
    const ac = new AbortController();
    const stream = conntrack.events({ netns: ns.path, signal: ac.signal });
    await stream.ready();
    const pending = stream.next();
    ac.abort(new Error('stop'));
    await expect(pending).rejects.toThrow('stop');
  });

  it('refuses bad shapes with typed errors and bad values on the first next()', async () => {
    expect(() => conntrack.events({ groups: 'new' as never })).toThrow(KubenodeTypeError);
    expect(() => conntrack.events({ bufferSize: '1' as never })).toThrow(KubenodeTypeError);
    expect(() => conntrack.events({ filter: { orig: { dst: 1 as never } } })).toThrow(KubenodeTypeError);
    const cases: [conntrack.EventsOptions, string][] = [
      [{ groups: ['new', 'created' as never] }, 'groups[1]: unknown event group "created"'],
      [{ groups: [] }, 'at least one of the groups'],
      [{ bufferSize: 0 }, 'bufferSize 0 is out of range'],
      [{ filter: { orig: { dstPort: 53 } } }, 'needs a protocol'],
      [{ netns: join(dir, 'missing') }, 'missing'],
    ];
    for (const [opts, msg] of cases) {
      const s = conntrack.events({ netns: ns.path, ...opts });
      await expect(s.next()).rejects.toThrow(msg);
      await expect(s.ready()).rejects.toThrow(msg);
      expect(await s.next()).toEqual({ value: undefined, done: true });
    }
    const s = conntrack.events({ netns: ns.path, groups: [] });
    await expect(s.ready()).rejects.toBeInstanceOf(KubenodeError);
  });

  it('lets the process exit while a stream is open and idle', () => {
    const script = join(dir, 'idle.mts');
    const index = join(import.meta.dirname, '..', '..', 'ts', 'conntrack', 'index.ts');
    writeFileSync(
      script,
      `import { execFileSync } from 'node:child_process';
import { events } from ${JSON.stringify(index)};
const stream = events({ netns: ${JSON.stringify(ns.path)}, groups: ['new'] });
await stream.ready();
execFileSync('ip', ['netns', 'exec', ${JSON.stringify(ns.name)}, 'conntrack', '-I', '-p', 'udp', '-s', '10.0.0.1', '-d', '10.96.0.99', '--sport', '7', '--dport', '53', '-t', '100']);
const first = await stream.next();
console.log(first.value?.type);
`,
    );
    const tsx = join(import.meta.dirname, '..', '..', 'node_modules', '.bin', 'tsx');
    const r = spawnSync(tsx, [script], { encoding: 'utf8', timeout: 30_000 });
    expect(r.signal, r.stderr).toBeNull();
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout.trim()).toBe('new');
  });
});
