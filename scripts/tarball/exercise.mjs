// Run by scripts/check-tarball.sh inside a consumer project, under each Node version: imports
// the installed package through every entry point and makes one call into each subsystem.
import { createRequire } from 'node:module';
import * as root from 'kubenode';
import { PodAdmitChain } from 'kubenode/admission';
import { AllocationBitmap } from 'kubenode/bitmap';
import { Conntrack, conntrackMax } from 'kubenode/conntrack';
import { parsePrefix } from 'kubenode/servicecidr';
import { isValidSysctlName } from 'kubenode/sysctl';
import { encodeFile } from 'kubenode/userns';

const require = createRequire(import.meta.url);
const check = (what, ok) => {
  if (!ok) throw new Error(`check-tarball: ${what} failed under Node ${process.version}`);
};

const cjs = require('kubenode');
check('require and import share one instance', cjs.KubenodeError === root.KubenodeError);
check('require of a subpath', typeof require('kubenode/sysctl').isValidSysctlName === 'function');
check('sysctl', isValidSysctlName('net.ipv4.ip_forward') && !isValidSysctlName('net..x'));
check('userns', encodeFile(65536, 65536).includes('"hostId":65536'));
check('bitmap', new AllocationBitmap(4, 'check').allocateNext() !== null);
check('admission', (await new PodAdmitChain([]).admit({ pod: {} })).admit === true);
check('servicecidr', parsePrefix('10.96.0.0/12').bits === 12);
check('conntrack', conntrackMax({ maxPerCore: 32768, min: 131072 }, 8) === 262144);
if (process.getuid?.() === 0) (await Conntrack.open()).close();
try {
  new AllocationBitmap(-1, 'x');
  check('a bad argument throws', false);
} catch (e) {
  check('errors are KubenodeErrors', e instanceof root.KubenodeError && e instanceof RangeError);
}
check('no test hooks', !('injectFaults' in Conntrack.prototype) && !('createEntries' in Conntrack.prototype));
// The daemons load the peers on first use, and take the consumer's own KubeConfig.
const { KubeConfig } = await import('@kubernetes/client-node');
const kc = new KubeConfig();
kc.loadFromOptions({
  clusters: [{ name: 'c', server: 'https://127.0.0.1:1' }],
  users: [{ name: 'u', token: 't' }],
  contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
  currentContext: 'x',
});
const controller = new root.servicecidr.ServiceCIDRController({ kubeConfig: kc });
check('ServiceCIDRController with the consumer KubeConfig', typeof controller.run === 'function');
new root.conntrack.StaleFlowReconciler(kc, { families: ['IPv4'] });
console.log(`check-tarball: Node ${process.version}: require, import, every subsystem ok`);
