// `auditSysctlPolicy` on a real kube-apiserver whose history is compacted while an audit pages
// through it: the continue token expires (410 Expired) and the audit goes on from the token the
// API server offers, reporting every object once, instead of failing half-way or starting over.
import { spawnSync } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sysctl } from '../../ts/index.js';
import { type ApiServer, startApiServer } from '../support/apiserver.js';
import { Api, pod } from './support/admission.js';

let server: ApiServer;
let api: Api;

beforeAll(async () => {
  // The LIST is served from etcd, whose history the API server compacts every 2 s.
  server = await startApiServer({ extraArgs: ['--watch-cache=false', '--etcd-compaction-interval=2s'] });
  api = new Api(server);
  for (const name of ['bad-0', 'bad-1', 'bad-2']) {
    const r = await api.send(
      'POST',
      '/api/v1/namespaces/default/pods',
      pod(name, [{ name: 'net.core.somaxconn', value: '8192' }]),
    );
    expect(r.status).toBe(201);
  }
});

afterAll(async () => {
  api?.close();
  await server?.stop();
});

/**
 * Blocks this thread for about 7 s while another process writes ConfigMaps: the revision moves
 * on, and at least two compactions pass the revision an audit's continue token holds.
 */
function writeWhileBlocked(): void {
  const script = `
    const https = require('node:https');
    const post = (i) => new Promise((resolve, reject) => {
      const req = https.request(${JSON.stringify(`${server.url}/api/v1/namespaces/default/configmaps`)}, {
        method: 'POST', rejectUnauthorized: false,
        headers: { Authorization: 'Bearer ${server.token}', 'Content-Type': 'application/json' },
      }, (res) => { res.resume(); res.on('end', () => res.statusCode === 201 ? resolve() : reject(new Error(String(res.statusCode)))); });
      req.on('error', reject);
      req.end(JSON.stringify({ metadata: { name: 'tick-' + i } }));
    });
    (async () => { for (let i = 0; i < 4; i++) { await post(i); await new Promise((r) => setTimeout(r, 2300)); } })()
      .catch((e) => { console.error(e); process.exit(1); });`;
  const r = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8', timeout: 30_000 });
  expect(r.status, r.stderr).toBe(0);
}

describe('sysctl policy audit across a compaction', () => {
  it('goes on from the API server token when its continue token expired, each object once', async () => {
    const file = sysctl.parseSysctlPolicyFile(
      'apiVersion: kubenode.io/v1alpha1\nkind: SysctlPolicy\nmetadata: {name: all}\nspec:\n' +
        '  sysctls: [{name: net.core.somaxconn, min: 128, max: 4096}]\n',
    );
    const found: string[] = [];
    const summary = await sysctl.auditSysctlPolicy(server.kubeConfig, file, {
      chunkSize: 1,
      onFinding: (f) => {
        found.push(`${f.kind} ${f.namespace}/${f.name}`);
        // A slow consumer after the first page: the next page's token has expired by then.
        if (found.length === 1) writeWhileBlocked();
      },
    });
    expect(found).toEqual(['Pod default/bad-0', 'Pod default/bad-1', 'Pod default/bad-2']);
    expect(summary.inconsistentResumes).toBe(1);
    expect(summary.refused).toBe(3);
  }, 120_000);
});
