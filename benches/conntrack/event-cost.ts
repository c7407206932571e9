// The event stream's cost on the flow rate: new UDP flows per second through nftables DNAT in a
// namespace (one datagram per destination port from one socket, `udp-flows`), with no
// subscriber, with a Rust subscriber reading every event in the sending process (the kernel's
// cost of building and queueing each event plus a reader), and with `conntrack.events()` in
// this process reading every event into JavaScript. Rounds interleave the three (the order
// rotates), the table is flushed between runs, and each ratio is the median of the rounds'
// same-round ratios.
import { spawn, spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { events } from '../../ts/conntrack/index.js';
import { type BenchContext, fmtRatio, repoRoot } from '../lib/harness.js';

const VIP = '10.96.0.10';
const BACKEND = '10.244.0.5';
/** Receive buffer of every subscriber: large enough that one that keeps up loses nothing. */
const RCVBUF = 8 << 20;

type Mode = 'none' | 'rust' | 'js';
interface Run {
  rate: number;
  events: number;
  lost: number;
}

function sh(argv: string[], what: string, input?: string): string {
  const [cmd, ...args] = argv as [string, ...string[]];
  const r = spawnSync(cmd, args, { encoding: 'utf8', cwd: repoRoot, input });
  if (r.status !== 0) throw new Error(`${what} failed (${r.status}): ${r.stderr}`);
  return r.stdout;
}

/** Runs the sender without blocking this process's event loop (the JS subscriber reads meanwhile). */
function send(ns: string, bin: string, flows: number, subscribe: boolean): Promise<Run> {
  return new Promise((resolve, reject) => {
    const args = ['netns', 'exec', ns, bin, VIP, String(flows), ...(subscribe ? ['--subscribe'] : [])];
    const child = spawn('ip', args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d) => {
      out += d;
    });
    child.stderr.on('data', (d) => {
      err += d;
    });
    child.on('error', reject);
    child.on('close', (code) => {
      if (code !== 0) return reject(new Error(`udp-flows failed (${code}): ${err}`));
      const j = JSON.parse(out.trim().split('\n').pop() ?? '{}');
      if (j.failed !== 0) return reject(new Error(`udp-flows: ${j.failed} sends failed`));
      resolve({ rate: j.rate, events: j.events, lost: j.overflows });
    });
  });
}

async function once(ns: string, nsPath: string, bin: string, flows: number, mode: Mode): Promise<Run> {
  sh(['ip', 'netns', 'exec', ns, 'conntrack', '-F'], 'conntrack -F');
  if (mode !== 'js') return send(ns, bin, flows, mode === 'rust');
  const stream = events({ netns: nsPath, groups: ['new'], bufferSize: RCVBUF, batchSize: 1024 });
  await stream.ready();
  let seen = 0;
  let lost = 0;
  const reading = (async () => {
    for await (const e of stream) {
      if (e.type === 'lost') lost += e.count;
      else if (++seen === flows) break;
    }
  })();
  const run = await send(ns, bin, flows, false);
  // The sender's rate is what is measured; the reader then drains what is left (or stops on loss).
  const drained = await Promise.race([
    reading.then(() => true),
    new Promise((r) => setTimeout(r, 10_000, false)),
  ]);
  stream.close();
  await reading;
  if (!drained && lost === 0) throw new Error(`the JS subscriber saw ${seen} of ${flows} events`);
  return { rate: run.rate, events: seen, lost };
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? (s[m] ?? Number.NaN) : ((s[m - 1] ?? 0) + (s[m] ?? 0)) / 2;
}

/** The event-stream cost table (its own namespace, removed at the end). */
export async function eventCost(ctx: BenchContext): Promise<string> {
  const flows = ctx.quick ? 20_000 : 60_000;
  const rounds = ctx.quick ? 3 : 7;
  sh(
    ['cargo', 'build', '--release', '-q', '-p', 'kubenode-ct-bench', '--bin', 'udp-flows'],
    'cargo build udp-flows',
  );
  const bin = join(repoRoot, 'target/release/udp-flows');
  const ns = `kn-ct-ev-bench-${process.pid}`;
  const nsPath = `/var/run/netns/${ns}`;
  const runs: Record<Mode, Run[]> = { none: [], rust: [], js: [] };
  const modes: Mode[] = ['none', 'rust', 'js'];
  try {
    sh(['ip', 'netns', 'add', ns], 'ip netns add');
    const setup = [
      'ip link set lo up',
      'ip link add up0 type veth peer name up1',
      'ip link set up0 up',
      'ip link set up1 up',
      'ip addr add 10.0.0.1/16 dev up0',
      'ip route add 10.96.0.0/16 dev up0',
      'ip route add 10.244.0.0/16 dev up0',
      // A resolved neighbour: no ARP queue limits the send rate.
      `ip neigh add ${BACKEND} lladdr 02:00:00:00:00:05 dev up0 nud permanent`,
      'echo 600 > /proc/sys/net/netfilter/nf_conntrack_udp_timeout',
    ].join(' && ');
    sh(['ip', 'netns', 'exec', ns, 'sh', '-c', setup], 'namespace setup');
    // The port is kept, so every flow's reply tuple differs too.
    const nft = `table ip kn {\n chain out {\n  type nat hook output priority -100; policy accept;\n  ip daddr ${VIP} dnat to ${BACKEND}\n }\n}\n`;
    sh(['ip', 'netns', 'exec', ns, 'nft', '-f', '-'], 'nft', nft);
    for (let r = 0; r < rounds; r++) {
      for (let i = 0; i < modes.length; i++) {
        const mode = modes[(r + i) % modes.length] as Mode;
        const run = await once(ns, nsPath, bin, flows, mode);
        runs[mode].push(run);
        ctx.log(
          `  events round ${r + 1} ${mode}: ${Math.round(run.rate)} flows/s, ${run.events} events, ${run.lost} lost`,
        );
      }
    }
  } finally {
    spawnSync('ip', ['netns', 'del', ns]);
  }
  const ratio = (m: Mode) => median(runs[m].map((x, i) => x.rate / (runs.none[i]?.rate ?? Number.NaN)));
  const row = (m: Mode, label: string) => {
    const rs = runs[m];
    const events = m === 'none' ? '—' : `${median(rs.map((x) => x.events))} of ${flows}`;
    const lost = m === 'none' ? '—' : String(rs.reduce((a, x) => a + x.lost, 0));
    return `| ${label} | ${rounds} | ${Math.round(median(rs.map((x) => x.rate))).toLocaleString('en-US')} | ${fmtRatio(ratio(m))} | ${events} | ${lost} |`;
  };
  return [
    `Event stream: new UDP flows/s through nftables DNAT (${flows.toLocaleString('en-US')} flows per run, one socket, median of ${rounds} interleaved rounds; subscribers join the NEW group with an 8 MiB buffer)`,
    '',
    '| subscriber | rounds | flows/s (median) | vs no subscriber (median of same-round ratios) | events read (median) | losses (all rounds) |',
    '| --- | ---: | ---: | ---: | ---: | ---: |',
    row('none', 'none'),
    row('rust', 'Rust `EventSocket` reader in the sending process'),
    row('js', '`conntrack.events()` in Node (batches of 1,024)'),
  ].join('\n');
}
