// The transport against a local HTTP/2 server that shapes its bytes as each case needs (the
// API server cannot): the flow-control windows the transport opens as client-go does (4 MiB
// per stream, 1 GiB per connection), seen from the server's end, and watch lines whose UTF-8
// characters arrive split across DATA frames.
import type { ServerHttp2Session, ServerHttp2Stream } from 'node:http2';
import { createSecureServer } from 'node:http2';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { restClient } from '../../ts/kube/rest.js';
import { selfSignedCert } from '../../ts/kube/serving-cert.js';

const BODY_BYTES = 1 << 20;
let server: ReturnType<typeof createSecureServer>;
let url: string;
let ca: Buffer;
const sessions: ServerHttp2Session[] = [];

beforeAll(async () => {
  const { cert, key } = await selfSignedCert();
  ca = Buffer.from(cert);
  server = createSecureServer({ cert, key });
  server.on('session', (s) => sessions.push(s));
  server.on('stream', (stream, headers) => {
    stream.respond({ ':status': 200, 'content-type': 'application/json' });
    if (String(headers[':path']).startsWith('/api/v1/configmaps?')) return void splitWatch(stream);
    stream.end(JSON.stringify({ kind: 'Blob', data: 'x'.repeat(BODY_BYTES) }));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  url = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

const NAME = 'caf\u00e9-\u540d-\u{1f600}';
const EVENT = `${JSON.stringify({ type: 'ADDED', object: { kind: 'ConfigMap', metadata: { name: NAME } } })}\n`;

/** One watch event written a piece at a time, cut inside each byte of its 4-byte character. */
function splitWatch(stream: ServerHttp2Stream): void {
  const bytes = Buffer.from(EVENT);
  const emoji = bytes.indexOf(Buffer.from('\u{1f600}'));
  const cuts = [bytes.indexOf(Buffer.from('\u00e9')) + 1, emoji + 1, emoji + 2, emoji + 3, bytes.length];
  let from = 0;
  const next = (i: number) => {
    const to = cuts[i] as number;
    const piece = bytes.subarray(from, to);
    from = to;
    if (i === cuts.length - 1) stream.end(piece);
    else stream.write(piece, () => setTimeout(() => next(i + 1), 20));
  };
  next(0);
}

afterAll(async () => {
  for (const s of sessions) s.destroy();
  await new Promise((r) => server.close(r));
});

/** The transport to the local server, trusting its certificate, with no credentials. */
const client = () =>
  restClient({ server: url, tls: { ca }, credentials: async () => ({}), user: 'test' }, 'kubenode-wire-test');

describe('HTTP/2 flow control', () => {
  it('advertises client-go windows, and the server writes a 1 MiB answer without stalling', async () => {
    const rest = client();
    try {
      const answer = await rest.request<{ data: string }>({ path: '/api/v1/blobs/one' });
      expect(answer.data.length).toBe(BODY_BYTES);
      expect(rest.protocol).toBe('h2');
      const s = sessions[0] as ServerHttp2Session;
      // The per-stream window the client advertised in its SETTINGS.
      expect(s.remoteSettings.initialWindowSize).toBe(4 << 20);
      // The connection-level window left to the server after sending the whole answer: with
      // HTTP/2's default (65,535 bytes) it could never exceed that.
      expect(s.state.remoteWindowSize).toBeGreaterThan((1 << 30) - 2 * BODY_BYTES);
    } finally {
      rest.close();
    }
  });
});

describe('watch lines', () => {
  it('a character split across DATA frames arrives whole', async () => {
    const rest = client();
    try {
      const names: string[] = [];
      await rest.watch<{ metadata: { name: string } }>('/api/v1/configmaps', {}, (e) =>
        names.push(e.object.metadata.name),
      );
      expect(names).toEqual([NAME]);
    } finally {
      rest.close();
    }
  });
});
