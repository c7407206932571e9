// Shared helpers for the ServiceCIDR controller tests against the real API server.
import { CoreV1Api, KubeConfig, NetworkingV1Api, type V1ServiceCIDR } from '@kubernetes/client-node';
import { servicecidr } from '../../ts/index.js';

/** A kubeconfig for a plain-HTTP server on loopback (a test server or proxy), no credentials. */
export function loopbackKubeConfig(port: number): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: 'loopback', server: `http://127.0.0.1:${port}`, skipTLSVerify: true }],
    users: [{ name: 'u' }],
    contexts: [{ name: 'c', cluster: 'loopback', user: 'u' }],
    currentContext: 'c',
  });
  return kc;
}

export function apis(kc: KubeConfig) {
  return { net: kc.makeApiClient(NetworkingV1Api), core: kc.makeApiClient(CoreV1Api) };
}

export async function waitFor<T>(
  what: string,
  f: () => Promise<T | undefined | false>,
  timeoutMs = 30_000,
  everyMs = 100,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await f();
      if (v !== undefined && v !== false) return v as T;
    } catch (e) {
      last = e;
    }
    if (Date.now() > deadline) {
      throw new Error(
        `timed out waiting for ${what}${last ? ` (last error: ${servicecidr.describeError(last)})` : ''}`,
      );
    }
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

export async function readCIDR(net: NetworkingV1Api, name: string): Promise<V1ServiceCIDR | undefined> {
  try {
    return await net.readServiceCIDR({ name });
  } catch (e) {
    if ((e as { code?: number }).code === 404) return undefined;
    throw e;
  }
}

export function ready(sc: V1ServiceCIDR | undefined) {
  return sc?.status?.conditions?.find((c) => c.type === 'Ready');
}

export function hasFinalizer(sc: V1ServiceCIDR | undefined): boolean {
  return (sc?.metadata?.finalizers ?? []).includes(servicecidr.SERVICE_CIDR_PROTECTION_FINALIZER);
}

/** Waits until the controller has made `name` Ready=True with its finalizer. */
export function waitReady(net: NetworkingV1Api, name: string, timeoutMs = 30_000): Promise<V1ServiceCIDR> {
  return waitFor(
    `${name} Ready`,
    async () => {
      const sc = await readCIDR(net, name);
      const r = ready(sc);
      return sc && hasFinalizer(sc) && r?.status === 'True' && r.message === servicecidr.MESSAGE_READY && sc;
    },
    timeoutMs,
  );
}

export function waitGone(net: NetworkingV1Api, name: string, timeoutMs = 30_000): Promise<true> {
  return waitFor(`${name} gone`, async () => (await readCIDR(net, name)) === undefined, timeoutMs);
}

export async function createCIDR(
  net: NetworkingV1Api,
  name: string,
  cidrs: string[],
): Promise<V1ServiceCIDR> {
  return net.createServiceCIDR({ body: { metadata: { name }, spec: { cidrs } } });
}

/** An IPAddress as the API server's allocator writes it, owned by a (possibly absent) Service. */
export async function createIP(net: NetworkingV1Api, ip: string, family: 'IPv4' | 'IPv6'): Promise<void> {
  await net.createIPAddress({
    body: {
      metadata: {
        name: ip,
        labels: {
          [servicecidr.LABEL_IP_FAMILY]: family,
          [servicecidr.LABEL_MANAGED_BY]: servicecidr.IPALLOCATOR_CONTROLLER_NAME,
        },
      },
      spec: {
        parentRef: {
          group: '',
          resource: 'services',
          namespace: 'default',
          name: `svc-${ip.replace(/[.:]/g, '-')}`,
        },
      },
    },
  });
}

export async function deleteIP(net: NetworkingV1Api, ip: string): Promise<void> {
  await net.deleteIPAddress({ name: ip });
}

/** Starts a controller; returns a stop function that waits for a clean shutdown. */
export function runController(o: servicecidr.ServiceCIDRControllerOptions) {
  const controller = new servicecidr.ServiceCIDRController({ logger: servicecidr.silentLogger, ...o });
  const ac = new AbortController();
  const done = controller.run(ac.signal);
  return {
    controller,
    done,
    stop: async () => {
      ac.abort();
      await done;
    },
  };
}

/** Collects klog lines in memory. */
export function memoryLogger(verbosity = 4) {
  const lines: string[] = [];
  return { lines, logger: servicecidr.klogLogger(verbosity, { write: (s: string) => lines.push(s) }) };
}
