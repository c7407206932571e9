// The YAML library, loaded on first use rather than at import: the daemons and most commands
// read JSON (kubeconfigs and API objects are JSON more often than not, and JSON takes the native
// parser), and loading the library costs a long-running process about 5 MiB it never gives back.
import { createRequire } from 'node:module';

type Yaml = typeof import('yaml');

const require = createRequire(import.meta.url);
let loaded: Yaml | undefined;

/** The `yaml` package. */
export function yaml(): Yaml {
  loaded ??= require('yaml') as Yaml;
  return loaded;
}
