// `kubenode conntrack …` with only the conntrack commands loaded: the reconciler runs for the
// life of a node, and the other groups' modules (sysctl, userns, ServiceCIDRs and their
// dependencies) would stay resident in it for nothing, about 6 MiB.
import { registerConntrack } from './conntrack.js';
import { programOf, runProgram } from './run.js';

export function main(argv: string[]): Promise<number> {
  return runProgram(argv, () => programOf(registerConntrack));
}
