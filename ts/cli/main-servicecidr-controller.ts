// `kubenode servicecidr-controller` with only its own command loaded: the controller runs for
// the life of the control plane, and the other groups' modules (conntrack, sysctl, userns and
// their dependencies) would stay resident in it for nothing.
import { programOf, runProgram } from './run.js';
import { registerServicecidr } from './servicecidr.js';

export function main(argv: string[]): Promise<number> {
  return runProgram(argv, () => programOf(registerServicecidr));
}
