// Records core/v1 Events the way client-go's recorder does for a cluster-scoped object: in the
// `default` namespace, with the controller as source component. Failures are logged, never
// thrown (events are best effort).
import type { CoreV1Api, V1ServiceCIDR } from '@kubernetes/client-node';
import { withSignal } from '../kube/abort.js';
import type { Logger } from './logger.js';

export class EventRecorder {
  constructor(
    private readonly core: CoreV1Api,
    private readonly component: string,
    private readonly log: Logger,
  ) {}

  /** Nothing is written once `signal` aborts (the recording controller lost its lease). */
  async warning(obj: V1ServiceCIDR, reason: string, message: string, signal?: AbortSignal): Promise<void> {
    if (signal?.aborted) return;
    const name = obj.metadata?.name ?? '';
    const now = new Date();
    this.log.info(3, 'Event occurred', {
      object: name,
      fieldPath: '',
      kind: 'ServiceCIDR',
      apiVersion: 'networking.k8s.io/v1',
      type: 'Warning',
      reason,
      message,
    });
    try {
      await this.core.createNamespacedEvent(
        {
          namespace: 'default',
          body: {
            metadata: { name: `${name}.${(Date.now() * 1e6).toString(16)}`, namespace: 'default' },
            involvedObject: {
              apiVersion: 'networking.k8s.io/v1',
              kind: 'ServiceCIDR',
              name,
              uid: obj.metadata?.uid,
              resourceVersion: obj.metadata?.resourceVersion,
            },
            reason,
            message,
            type: 'Warning',
            source: { component: this.component },
            firstTimestamp: now,
            lastTimestamp: now,
            count: 1,
          },
        },
        signal ? withSignal(signal) : undefined,
      );
    } catch (e) {
      this.log.error('Unable to write event', e, { reason });
    }
  }
}
