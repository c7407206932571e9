// Whether the container runtime's handlers support user namespaces, as the kubelet learns it:
// CRI `RuntimeService/Status` over the runtime's unix socket, `runtime_handlers[].features.
// user_namespaces`. One unary gRPC call over Node's own HTTP/2 client, with the two messages
// encoded and decoded by hand (field numbers of k8s.io/cri-api runtime/v1), so no gRPC
// dependency is needed for one read.
import { connect } from 'node:http2';
import { connect as netConnect } from 'node:net';
import { assertString, KubenodeError } from '../errors.js';

/** A runtime handler and its user-namespace support, as the runtime reports it. */
export interface RuntimeHandlerInfo {
  /** Handler name (`''` is the default handler). */
  name: string;
  /** `features.user_namespaces`. */
  userNamespaces: boolean;
}

const STATUS_PATH = '/runtime.v1.RuntimeService/Status';

/** Reads a varint at `o.i`. */
function varint(b: Uint8Array, o: { i: number }): number {
  let v = 0;
  let mul = 1;
  for (;;) {
    if (o.i >= b.length) throw new Error('truncated varint');
    const x = b[o.i++] as number;
    v += (x & 0x7f) * mul;
    if (x < 0x80) return v;
    mul *= 128;
    if (mul > 2 ** 63) throw new Error('varint too long');
  }
}

/** The fields of one protobuf message: field number → values (varints or byte slices). */
function fields(b: Uint8Array): Map<number, (number | Uint8Array)[]> {
  const out = new Map<number, (number | Uint8Array)[]>();
  const o = { i: 0 };
  while (o.i < b.length) {
    const key = varint(b, o);
    const field = Math.floor(key / 8);
    let v: number | Uint8Array;
    switch (key & 7) {
      case 0:
        v = varint(b, o);
        break;
      case 1:
        o.i += 8;
        continue;
      case 2: {
        const n = varint(b, o);
        if (o.i + n > b.length) throw new Error('truncated field');
        v = b.subarray(o.i, o.i + n);
        o.i += n;
        break;
      }
      case 5:
        o.i += 4;
        continue;
      default:
        throw new Error(`unsupported wire type ${key & 7}`);
    }
    out.set(field, [...(out.get(field) ?? []), v]);
  }
  return out;
}

/** `StatusResponse.runtime_handlers` (field 3): `RuntimeHandler{name=1, features=2{user_namespaces=2}}`. */
export function decodeRuntimeHandlers(message: Uint8Array): RuntimeHandlerInfo[] {
  const bytes = (v: number | Uint8Array | undefined) => (v instanceof Uint8Array ? v : new Uint8Array());
  return (fields(message).get(3) ?? []).map((h) => {
    const f = fields(bytes(h));
    const features = fields(bytes(f.get(2)?.[0]));
    return {
      name: new TextDecoder().decode(bytes(f.get(1)?.[0])),
      userNamespaces: (features.get(2)?.[0] ?? 0) !== 0,
    };
  });
}

function criError(socket: string, message: string, cause?: unknown): KubenodeError {
  return new KubenodeError(
    'ERR_KUBENODE_IO',
    `CRI ${socket}: ${message}`,
    cause === undefined ? {} : { cause },
  );
}

/**
 * Asks the runtime at unix socket `socket` for its handlers (`Status`, verbose as the kubelet
 * asks). Rejects with a KubenodeError (`ERR_KUBENODE_IO`) when the runtime cannot be reached
 * or answers with a gRPC error, within `timeoutMs`.
 */
export async function runtimeHandlers(socket: string, timeoutMs = 5000): Promise<RuntimeHandlerInfo[]> {
  assertString('socket', socket);
  const path = socket.replace(/^unix:\/\//, '');
  const session = connect('http://localhost', { createConnection: () => netConnect(path) });
  try {
    const body = await new Promise<Buffer>((resolve, reject) => {
      const timer = setTimeout(() => reject(criError(socket, `no answer within ${timeoutMs} ms`)), timeoutMs);
      session.once('error', (e) => {
        clearTimeout(timer);
        reject(criError(socket, (e as Error).message, e));
      });
      const req = session.request({
        ':method': 'POST',
        ':path': STATUS_PATH,
        'content-type': 'application/grpc',
        te: 'trailers',
      });
      const chunks: Buffer[] = [];
      let status: string | undefined;
      let message = '';
      req.on('response', (h) => {
        if (h['grpc-status'] !== undefined) status = String(h['grpc-status']);
      });
      req.on('trailers', (t) => {
        status = String(t['grpc-status'] ?? status ?? '');
        message = decodeURIComponent(String(t['grpc-message'] ?? ''));
      });
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('error', (e) => {
        clearTimeout(timer);
        reject(criError(socket, e.message, e));
      });
      req.on('end', () => {
        clearTimeout(timer);
        if (status !== '0') {
          reject(
            criError(
              socket,
              `Status failed: grpc-status ${status ?? 'missing'}${message ? `: ${message}` : ''}`,
            ),
          );
          return;
        }
        resolve(Buffer.concat(chunks));
      });
      // StatusRequest{verbose: true}, length-prefixed, uncompressed.
      const msg = Buffer.from([0x08, 0x01]);
      const frame = Buffer.alloc(5);
      frame.writeUInt32BE(msg.length, 1);
      req.end(Buffer.concat([frame, msg]));
    });
    if (body.length < 5 || body[0] !== 0) throw criError(socket, 'unexpected response framing');
    const n = body.readUInt32BE(1);
    if (body.length < 5 + n) throw criError(socket, 'truncated response');
    try {
      return decodeRuntimeHandlers(body.subarray(5, 5 + n));
    } catch (e) {
      throw criError(socket, `malformed StatusResponse: ${(e as Error).message}`, e);
    }
  } finally {
    session.close();
    session.destroy();
  }
}
