// The façade checks only JS shapes, in its own words; every rule on values (addresses, ports,
// protocols) and its message is the core's, so no shape error repeats a core message.
import { describe, expect, it } from 'vitest';
import { toNativeFlow } from '../../ts/conntrack/client.js';
import { validateTables } from '../../ts/conntrack/tables.js';
import { KubenodeTypeError } from '../../ts/index.js';

const svc = { name: 'a', protocol: 'UDP', clusterIP: '10.96.0.10', port: 53 };
const tuple = { srcIP: '10.0.0.1', dstIP: '10.0.0.2', srcPort: 1, dstPort: 53 };

describe('conntrack JS shapes', () => {
  it('names the wrong type, not a rule on the value', () => {
    const shape = (f: () => unknown, message: string) =>
      expect(f).toThrow(expect.objectContaining({ name: KubenodeTypeError.name, message }));
    shape(() => validateTables([{ ...svc, name: 7 }], {}), 'services[0].name must be a string, got 7');
    shape(
      () => validateTables([svc], { a: [{ ip: 7, port: 5353, serving: true }] }),
      'endpoints["a"][0].ip must be a string, got 7',
    );
    shape(
      () => validateTables([{ ...svc, port: '53' }], {}),
      'services[0] (a).port must be a number, got "53"',
    );
    shape(
      () => toNativeFlow({ protocol: 17, forward: { ...tuple, srcIP: 1 }, reverse: tuple } as never, 0),
      'flows[0].forward.srcIP must be a string, got 1',
    );
  });
});
