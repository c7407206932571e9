// A pod's view of the test apiserver: its token and CA in a service-account directory, and the
// environment a kubelet sets (KUBERNETES_SERVICE_HOST/PORT), pointed at the real apiserver.
import { copyFileSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ApiServer } from './apiserver.js';

export interface InCluster {
  /** Environment for a child process (process.env without any kubeconfig, plus the pod's). */
  env: NodeJS.ProcessEnv;
  dir: string;
  remove(): void;
}

/** The environment of a process with no kubeconfig at all and no cluster around it. */
export function outsideEnv(): NodeJS.ProcessEnv {
  const env = { ...process.env };
  delete env.KUBECONFIG;
  delete env.KUBERNETES_SERVICE_HOST;
  delete env.KUBERNETES_SERVICE_PORT;
  delete env.KUBENODE_SERVICEACCOUNT_DIR;
  // client-node's last resort reads ~/.kube/config: an empty HOME proves it is not used.
  env.HOME = '/nonexistent';
  return env;
}

export function inCluster(api: ApiServer): InCluster {
  const dir = mkdtempSync(join(tmpdir(), 'kubenode-sa-daemons-'));
  writeFileSync(join(dir, 'token'), api.token);
  copyFileSync(api.caFile, join(dir, 'ca.crt'));
  writeFileSync(join(dir, 'namespace'), 'kube-system');
  const u = new URL(api.url);
  return {
    dir,
    env: {
      ...outsideEnv(),
      KUBERNETES_SERVICE_HOST: u.hostname,
      KUBERNETES_SERVICE_PORT: u.port,
      KUBENODE_SERVICEACCOUNT_DIR: dir,
    },
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}
