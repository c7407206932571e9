// Upstream kube-proxy beside the reconcilers: one per node, each in a network namespace of its
// own (its nftables rules and conntrack cleanup must not touch the reconcilers' tables), in
// nftables mode, with flows of its own through the DNAT rules it programs. The API server
// listens on the host's loopback; socat carries each namespace's loopback port to it over a
// Unix socket, so kube-proxy dials the address its kubeconfig names and the certificate fits.
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import type { CoreV1Api } from '@kubernetes/client-node';
import { TestNetns } from '../../test/conntrack/netns.js';
import type { ApiServer } from '../../test/support/apiserver.js';

export interface ProxyNode {
  ns: TestNetns;
  name: string;
  child?: ChildProcess;
  bridge?: ChildProcess;
  out: string;
}

/** The namespace's address (TestNetns's uplink): the Node's InternalIP. */
const NODE_IP = '10.0.0.1';

function needSocat(): void {
  if (spawnSync('sh', ['-c', 'command -v socat']).status !== 0) {
    throw new Error('socat is missing: install it (scripts/setup.sh does) to run kube-proxy in the fleet');
  }
}

/** A root-namespace listener on `sock` that forwards each connection to the API server. */
export function startApiBridge(api: ApiServer, sock: string): ChildProcess {
  needSocat();
  const port = new URL(api.url).port;
  return spawn('socat', [`UNIX-LISTEN:${sock},fork,mode=600`, `TCP:127.0.0.1:${port}`], { stdio: 'ignore' });
}

/** Starts one kube-proxy per node, each in its own namespace, and registers their Nodes. */
export async function startKubeProxies(
  bin: string,
  api: ApiServer,
  core: CoreV1Api,
  sock: string,
  count: number,
): Promise<ProxyNode[]> {
  const port = new URL(api.url).port;
  const nodes: ProxyNode[] = [];
  for (let i = 0; i < count; i++) {
    const name = `fleet-node-${i}`;
    await core.createNode({
      body: {
        metadata: { name, labels: { 'kubernetes.io/hostname': name } },
        status: { addresses: [{ type: 'InternalIP', address: NODE_IP }] },
      },
    });
    const ns = new TestNetns('kn-fleet-kp');
    const n: ProxyNode = { ns, name, out: '' };
    nodes.push(n);
    n.bridge = spawn(
      'ip',
      [
        'netns',
        'exec',
        ns.name,
        'socat',
        `TCP-LISTEN:${port},bind=127.0.0.1,fork,reuseaddr`,
        `UNIX-CONNECT:${sock}`,
      ],
      { stdio: 'ignore' },
    );
    n.child = spawn(
      'ip',
      [
        'netns',
        'exec',
        ns.name,
        bin,
        `--kubeconfig=${api.kubeconfigFile}`,
        `--hostname-override=${name}`,
        '--proxy-mode=nftables',
        // The conntrack table size is the host's (read-only in a namespace); leave it and the
        // TCP timeouts as they are, as a kube-proxy in a container without the privilege does.
        '--conntrack-max-per-core=0',
        '--conntrack-tcp-timeout-established=0',
        '--conntrack-tcp-timeout-close-wait=0',
        '--v=0',
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    const keep = (c: string) => {
      // Its start-up log only: enough to say why it failed.
      if (n.out.length < 20_000) n.out += c;
    };
    n.child.stdout?.setEncoding('utf8').on('data', keep);
    n.child.stderr?.setEncoding('utf8').on('data', keep);
  }
  return nodes;
}

/** True once the node's kube-proxy has programmed the Service's VIP into its nftables table. */
export function programmed(n: ProxyNode, vip: string): boolean {
  if (n.child?.exitCode !== null) throw new Error(`kube-proxy on ${n.name} exited: ${n.out}`);
  const r = spawnSync('ip', ['netns', 'exec', n.ns.name, 'nft', 'list', 'table', 'ip', 'kube-proxy'], {
    encoding: 'utf8',
  });
  return r.status === 0 && r.stdout.includes(vip);
}

export function stopKubeProxies(nodes: ProxyNode[]): void {
  for (const n of nodes) {
    if (n.child && n.child.exitCode === null) n.child.kill('SIGKILL');
    if (n.bridge && n.bridge.exitCode === null) n.bridge.kill('SIGKILL');
  }
  // socat's per-connection children outlive their parent: kill what is left in each namespace.
  for (const n of nodes) {
    const pids = spawnSync('ip', ['netns', 'pids', n.ns.name], { encoding: 'utf8' }).stdout.trim();
    for (const pid of pids.split('\n').filter(Boolean)) spawnSync('kill', ['-KILL', pid]);
    n.ns.destroy();
  }
}
