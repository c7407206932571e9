// The transport opens HTTP/2 flow-control windows as client-go does (4 MiB per stream, 1 GiB per
// connection), so a server sends a watch's bytes without waiting for the client's
// WINDOW_UPDATE every 64 KiB. Seen from the server's end of a real HTTP/2 session: what the
// client advertised, and what the server could send before the client read anything.
import type { ServerHttp2Session } from 'node:http2';
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
  server.on('stream', (stream) => {
    stream.respond({ ':status': 200, 'content-type': 'application/json' });
    stream.end(JSON.stringify({ kind: 'Blob', data: 'x'.repeat(BODY_BYTES) }));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  url = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  for (const s of sessions) s.destroy();
  await new Promise((r) => server.close(r));
});

describe('HTTP/2 flow control', () => {
  it('advertises client-go windows, and the server writes a 1 MiB answer without stalling', async () => {
    const rest = restClient(
      { server: url, tls: { ca }, credentials: async () => ({}), user: 'test' },
      'kubenode-flow-test',
    );
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
