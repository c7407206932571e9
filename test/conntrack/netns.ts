// A throwaway network namespace with a dummy uplink, nftables DNAT rules and real UDP traffic,
// checked with conntrack-tools. Everything is removed in `destroy()`.
import { execFileSync, spawnSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
let counter = 0;

function run(cmd: string, args: string[], input?: string): string {
  const r = spawnSync(cmd, args, { encoding: 'utf8', input });
  if (r.error) throw new Error(`${cmd} not available: ${r.error.message}`);
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')} failed: ${r.stderr}`);
  return r.stdout;
}

export interface CtEntry {
  proto: string;
  origSrc: string;
  origDst: string;
  sport: number;
  dport: number;
  replySrc: string;
  replySport: number;
}

/** Parses `conntrack -L` lines (first src/dst/sport/dport: original; second: reply). */
export function parseConntrackL(out: string): CtEntry[] {
  return out
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => {
      const all = (k: string) => [...l.matchAll(new RegExp(`\\b${k}=(\\S+)`, 'g'))].map((m) => m[1] ?? '');
      const src = all('src');
      const dst = all('dst');
      const sport = all('sport');
      const dport = all('dport');
      return {
        proto: l.split(/\s+/)[0] ?? '',
        origSrc: src[0] ?? '',
        origDst: dst[0] ?? '',
        sport: Number(sport[0]),
        dport: Number(dport[0]),
        replySrc: src[1] ?? '',
        replySport: Number(sport[1]),
      };
    });
}

export class TestNetns {
  readonly name: string;
  readonly path: string;

  /** `prefix` keeps parallel suites' namespaces apart. */
  constructor(prefix = 'kn-ct-vt') {
    this.name = `${prefix}-${process.pid}-${counter++}`;
    this.path = `/var/run/netns/${this.name}`;
    if (process.getuid?.() !== 0) throw new Error('conntrack kernel tests need root (CAP_NET_ADMIN)');
    for (const bin of ['ip', 'nft', 'conntrack']) {
      const r = spawnSync('sh', ['-c', `command -v ${bin}`]);
      if (r.status !== 0) throw new Error(`${bin} is missing: install iproute2, nftables and conntrack`);
    }
    run('ip', ['netns', 'add', this.name]);
    try {
      this.#setup();
    } catch (e) {
      this.destroy();
      throw e;
    }
  }

  #setup(): void {
    const sh = [
      'ip link set lo up',
      // A veth pair stands in for the uplink (the test kernel has no dummy driver); packets
      // routed out of up0 land on up1 and go nowhere.
      'ip link add up0 type veth peer name up1',
      'ip link set up0 up',
      'ip link set up1 up',
      'ip addr add 10.0.0.1/16 dev up0',
      'ip route add 10.96.0.0/16 dev up0',
      'ip route add 10.244.0.0/16 dev up0',
      'ip route add 192.0.2.0/24 dev up0',
      'ip route add 198.51.100.0/24 dev up0',
      'ip route add 203.0.113.0/24 dev up0',
      'ip -6 addr add fd00::1/64 dev up0 nodad',
      'ip -6 route add fd00:96::/64 dev up0',
      'ip -6 route add fd00:244::/64 dev up0',
      'ip -6 route add 2001:db8::/64 dev up0',
    ].join(' && ');
    this.exec('sh', ['-c', sh]);
  }

  exec(cmd: string, args: string[], input?: string): string {
    return run('ip', ['netns', 'exec', this.name, cmd, ...args], input);
  }

  nft(script: string): void {
    this.exec('nft', ['-f', '-'], script);
  }

  /** Sends one datagram per [srcPort, dstIP, dstPort] from inside the namespace. */
  sendUdp(sends: [number, string, number][]): void {
    this.exec(process.execPath, [join(here, 'send-udp.mjs'), JSON.stringify(sends)]);
  }

  conntrackL(family: 'ipv4' | 'ipv6', proto = 'udp'): CtEntry[] {
    return parseConntrackL(this.exec('conntrack', ['-L', '-f', family, '-p', proto]));
  }

  destroy(): void {
    spawnSync('ip', ['netns', 'del', this.name]);
  }
}

/** Test teardown: removes the scratch directory and the namespace, and fails if it leaked. */
export function teardown(ns: TestNetns | undefined, dir: string | undefined): void {
  if (dir) rmSync(dir, { recursive: true, force: true });
  if (!ns) return;
  ns.destroy();
  if (netnsExists(ns.name)) throw new Error(`network namespace ${ns.name} leaked`);
}

/**
 * The CLI suites' table: `vip:53` DNATed by source port (40001…) to `eps[i]:5353`, one flow per
 * endpoint, one straight to the VIP (sport 42002) and one unrelated; `extraNft` adds rules.
 */
export function dnsFlows(ns: TestNetns, vip: string, eps: string[], extraNft = ''): void {
  const rules = eps.map((ip, i) => `ip daddr ${vip} udp dport 53 udp sport ${40001 + i} dnat to ${ip}:5353`);
  ns.nft(
    `table ip kn {\n chain out {\n  type nat hook output priority -100; policy accept;\n  ${rules.join('\n  ')}\n }\n}\n${extraNft}`,
  );
  // Unreplied UDP entries live 30 s by default; each CLI run takes about a second.
  ns.exec('sh', ['-c', 'echo 600 > /proc/sys/net/netfilter/nf_conntrack_udp_timeout']);
  ns.sendUdp([
    ...eps.map((_, i): [number, string, number] => [40001 + i, vip, 53]),
    [42002, vip, 53], // not DNATed: straight to the VIP
    [43000, '203.0.113.5', 9999], // unrelated
  ]);
}

/** True if the namespace still exists (for leak checks). */
export function netnsExists(name: string): boolean {
  return execFileSync('ip', ['netns', 'list'], { encoding: 'utf8' }).includes(name);
}
