// The wire under ts/kube/rest.ts: one HTTP/2 session per API server (TLS with ALPN h2), opened
// on first use, replaced when it dies or when the TLS material changes (a plugin's new client
// certificate), and pinged while streams are open so a dead peer is noticed (client-go's
// ReadIdleTimeout 30 s, PingTimeout 15 s). A server whose ALPN answer is not h2, and any
// plain-http server, gets keep-alive HTTP/1.1 instead. The session holds the process up only
// while a request or watch is open.
import type { Agent as HttpAgent, IncomingMessage } from 'node:http';
import {
  type ClientHttp2Session,
  type ClientHttp2Stream,
  constants as h2,
  connect as h2connect,
  type IncomingHttpHeaders,
} from 'node:http2';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import { StringDecoder } from 'node:string_decoder';
import type { TLSSocket } from 'node:tls';
import { http, net, tls as nodeTls } from '../node-builtins.js';
import type { KubeConnection, TlsMaterial } from './rest-types.js';

export interface Exchange {
  method: string;
  /** Path and query, without the server's own path prefix. */
  path: string;
  body?: Buffer;
  contentType?: string;
  signal?: AbortSignal;
  timeoutMs?: number;
}

export interface Answer {
  status: number;
  body: Buffer;
}

// Flow-control windows as client-go sets them (x/net/http2 Transport: 4 MiB per stream, 1 GiB
// per connection). With HTTP/2's 64 KiB defaults the API server waits for the client's
// WINDOW_UPDATE every 64 KiB of a watch. The data is still read as it arrives, so the windows
// hold nothing in memory.
const STREAM_WINDOW = 4 << 20;
const CONNECTION_WINDOW = 1 << 30;
const PING_EVERY_MS = 30_000;
const PING_TIMEOUT_MS = 15_000;
/** Longest error body kept (a Status is a few hundred bytes). */
const MAX_ERROR_BODY = 64 * 1024;

function abortError(signal: AbortSignal | undefined): Error {
  const reason = signal?.reason;
  if (reason instanceof Error) return reason;
  return Object.assign(new Error('The operation was aborted'), { name: 'AbortError' });
}

function sameTls(a: TlsMaterial, b: TlsMaterial): boolean {
  const eq = (x: Buffer | undefined, y: Buffer | undefined) => (x && y ? x.equals(y) : x === y);
  return (
    eq(a.ca, b.ca) &&
    eq(a.cert, b.cert) &&
    eq(a.key, b.key) &&
    (a.insecureSkipTLSVerify ?? false) === (b.insecureSkipTLSVerify ?? false) &&
    a.serverName === b.serverName
  );
}

function tlsOptions(url: URL, t: TlsMaterial) {
  const host = url.hostname.replace(/^\[|\]$/g, '');
  const servername = t.serverName ?? (net.isIP(host) ? undefined : host);
  return {
    host,
    port: Number(url.port || 443),
    ...(t.ca ? { ca: t.ca } : {}),
    ...(t.cert ? { cert: t.cert } : {}),
    ...(t.key ? { key: t.key } : {}),
    rejectUnauthorized: !t.insecureSkipTLSVerify,
    ...(servername ? { servername } : {}),
  };
}

interface Session {
  h2: ClientHttp2Session;
  tls: TlsMaterial;
  open: number;
  ping: NodeJS.Timeout;
}

interface H1 {
  agent: HttpAgent;
  tls: TlsMaterial;
}

/** A request's streams: the HTTP/2 stream or the HTTP/1.1 response, seen the same way. */
interface Sink {
  status(code: number): void;
  data(chunk: Buffer): void;
  end(): void;
  fail(err: Error): void;
}

export class Transport {
  readonly #conn: KubeConnection;
  readonly #ua: string;
  readonly #url: URL;
  readonly #prefix: string;
  #session: Session | undefined;
  #opening: Promise<Session | undefined> | undefined;
  #h1: H1 | undefined;
  /** The server answered ALPN without h2: HTTP/1.1 from then on. */
  #noH2: boolean;
  #closed = false;
  protocol: 'h2' | 'http/1.1' | undefined;
  sessionsOpened = 0;

  constructor(conn: KubeConnection, userAgent: string) {
    this.#conn = conn;
    this.#ua = userAgent;
    this.#url = new URL(conn.server);
    this.#prefix = this.#url.pathname.replace(/\/+$/, '');
    this.#noH2 = this.#url.protocol === 'http:';
  }

  /** One request and its whole answer (error bodies capped). */
  exchange(x: Exchange): Promise<Answer> {
    return new Promise((resolve, reject) => {
      const chunks: Buffer[] = [];
      let status = 0;
      this.#send(x, {
        status: (c) => {
          status = c;
        },
        data: (c) => chunks.push(c),
        end: () => resolve({ status, body: Buffer.concat(chunks) }),
        fail: reject,
      }).catch(reject);
    });
  }

  /**
   * A streamed GET: each complete line of a 2xx answer goes to `onLine` (a throw ends the
   * stream with that error); an error status rejects with `statusError(status, body)`. An abort
   * by `signal` resolves.
   */
  stream(
    path: string,
    onLine: (line: string) => void,
    statusError: (status: number, body: string) => Error,
    signal?: AbortSignal,
  ): Promise<void> {
    return new Promise((resolve, reject) => {
      let status = 0;
      let rest = '';
      // A chunk may end inside a multi-byte character; the decoder keeps its first bytes.
      const utf8 = new StringDecoder('utf8');
      const errorBody: Buffer[] = [];
      let size = 0;
      const controller = new AbortController();
      const stop = () => controller.abort(abortError(signal));
      if (signal?.aborted) return resolve();
      signal?.addEventListener('abort', stop, { once: true });
      const settle = (err?: Error) => {
        signal?.removeEventListener('abort', stop);
        if (err && !signal?.aborted) reject(err);
        else resolve();
      };
      this.#send(
        { method: 'GET', path, signal: controller.signal },
        {
          status: (c) => {
            status = c;
          },
          data: (c) => {
            if (status >= 300) {
              if (size < MAX_ERROR_BODY) errorBody.push(c);
              size += c.length;
              return;
            }
            rest += utf8.write(c);
            let nl = rest.indexOf('\n');
            while (nl >= 0) {
              const line = rest.slice(0, nl).trim();
              rest = rest.slice(nl + 1);
              if (line !== '') {
                try {
                  onLine(line);
                } catch (e) {
                  controller.abort(e);
                  signal?.removeEventListener('abort', stop);
                  reject(e);
                  return;
                }
              }
              nl = rest.indexOf('\n');
            }
          },
          end: () => {
            if (status >= 300) settle(statusError(status, Buffer.concat(errorBody).toString('utf8')));
            else settle();
          },
          fail: (e) => settle(e),
        },
      ).catch((e: Error) => settle(e));
    });
  }

  close(): void {
    this.#closed = true;
    const s = this.#session;
    this.#session = undefined;
    if (s) this.#drop(s);
    this.#h1?.agent.destroy();
    this.#h1 = undefined;
  }

  async #send(x: Exchange, sink: Sink): Promise<void> {
    if (x.signal?.aborted) throw abortError(x.signal);
    const creds = await this.#conn.credentials();
    const tls = creds.tls ?? this.#conn.tls;
    const headers: Record<string, string> = {
      'user-agent': this.#ua,
      accept: 'application/json',
      ...(creds.authorization ? { authorization: creds.authorization } : {}),
      ...(x.contentType ? { 'content-type': x.contentType } : {}),
    };
    let session: Session | undefined;
    try {
      session = this.#noH2 ? undefined : await this.#h2(tls);
    } catch (e) {
      throw this.#networkError(x, e);
    }
    if (this.#closed) throw new Error('the client is closed');
    let timer: NodeJS.Timeout | undefined;
    let onAbort: (() => void) | undefined;
    const cleanup = () => {
      clearTimeout(timer);
      if (onAbort) x.signal?.removeEventListener('abort', onAbort);
    };
    const done: Sink = {
      status: sink.status,
      data: sink.data,
      end: () => {
        cleanup();
        sink.end();
      },
      fail: (e) => {
        cleanup();
        // The caller's own abort or timeout stays as it is; a network failure names the request.
        sink.fail(e.name === 'AbortError' || e.name === 'TimeoutError' ? e : this.#networkError(x, e));
      },
    };
    const cancel = session ? this.#h2send(session, x, headers, done) : this.#h1send(tls, x, headers, done);
    onAbort = () => cancel(abortError(x.signal));
    x.signal?.addEventListener('abort', onAbort, { once: true });
    if (x.timeoutMs !== undefined) {
      const ms = x.timeoutMs;
      timer = setTimeout(
        () =>
          cancel(Object.assign(new Error(`the request took longer than ${ms} ms`), { name: 'TimeoutError' })),
        ms,
      );
    }
  }

  /** A failure to reach the server, naming the request as client-go's url.Error does. */
  #networkError(x: Exchange, e: unknown): Error {
    const err = e instanceof Error ? e : new Error(String(e));
    const where = `${this.#url.origin}${this.#prefix}${x.path.split('?')[0]}`;
    return Object.assign(new Error(`${x.method} ${where}: ${err.message}`, { cause: err }), {
      ...((err as NodeJS.ErrnoException).code ? { code: (err as NodeJS.ErrnoException).code } : {}),
    });
  }

  #h2send(s: Session, x: Exchange, headers: Record<string, string>, sink: Sink): (err: Error) => void {
    const req: ClientHttp2Stream = s.h2.request(
      {
        [h2.HTTP2_HEADER_METHOD]: x.method,
        [h2.HTTP2_HEADER_PATH]: this.#prefix + x.path,
        ...headers,
      },
      { endStream: x.body === undefined },
    );
    s.open++;
    if (s.open === 1) s.h2.ref();
    let failed: Error | undefined;
    let settled = false;
    const once = (f: () => void) => {
      if (settled) return;
      settled = true;
      s.open--;
      if (s.open === 0 && !s.h2.destroyed) s.h2.unref();
      f();
    };
    req.on('response', (h: IncomingHttpHeaders) => sink.status(Number(h[h2.HTTP2_HEADER_STATUS])));
    req.on('data', (c: Buffer) => {
      if (!settled) sink.data(c);
    });
    req.on('end', () => once(() => sink.end()));
    req.on('error', (e: Error) => once(() => sink.fail(failed ?? e)));
    req.on('close', () =>
      once(() => sink.fail(failed ?? new Error('the HTTP/2 stream closed before its end'))),
    );
    if (x.body !== undefined) req.end(x.body);
    return (err) => {
      failed = err;
      req.close(h2.NGHTTP2_CANCEL);
      once(() => sink.fail(err));
    };
  }

  #h1send(tls: TlsMaterial, x: Exchange, headers: Record<string, string>, sink: Sink): (err: Error) => void {
    const https = this.#url.protocol === 'https:';
    if (!this.#h1 || !sameTls(this.#h1.tls, tls)) {
      this.#h1?.agent.destroy();
      const agent = https
        ? new HttpsAgent({ keepAlive: true, ...tlsOptions(this.#url, tls) })
        : new http.Agent({ keepAlive: true });
      this.#h1 = { agent, tls };
    }
    this.protocol = 'http/1.1';
    const o = tlsOptions(this.#url, tls);
    const req = (https ? httpsRequest : http.request)({
      ...(https ? o : {}),
      host: o.host,
      port: Number(this.#url.port || (https ? 443 : 80)),
      method: x.method,
      path: this.#prefix + x.path,
      headers: { ...headers, ...(x.body ? { 'content-length': String(x.body.length) } : {}) },
      agent: this.#h1.agent,
    });
    let settled = false;
    const once = (f: () => void) => {
      if (settled) return;
      settled = true;
      f();
    };
    req.on('response', (res: IncomingMessage) => {
      sink.status(res.statusCode ?? 0);
      res.on('data', (c: Buffer) => {
        if (!settled) sink.data(c);
      });
      res.on('end', () => once(() => sink.end()));
      res.on('error', (e) => once(() => sink.fail(e)));
      res.on('aborted', () => once(() => sink.fail(new Error('the response was cut off'))));
    });
    req.on('error', (e) => once(() => sink.fail(e)));
    req.end(x.body);
    return (err) => {
      once(() => sink.fail(err));
      req.destroy(err);
    };
  }

  /** The live session for `tls`, opened if needed; undefined when the server does not speak h2. */
  async #h2(tls: TlsMaterial): Promise<Session | undefined> {
    for (;;) {
      const s = this.#session;
      if (s && !s.h2.destroyed && !s.h2.closed && sameTls(s.tls, tls)) return s;
      if (this.#opening) {
        await this.#opening.catch(() => undefined);
        if (this.#noH2) return undefined;
        // Another caller's session: loop to check it fits this request's TLS material.
        if (this.#session && sameTls(this.#session.tls, tls)) continue;
      }
      if (s) {
        this.#session = undefined;
        // Streams still open on it finish there; the next request opens a new one.
        s.h2.close();
      }
      const opening = this.#open(tls);
      this.#opening = opening;
      try {
        const fresh = await opening;
        if (!fresh) return undefined;
        this.#session = fresh;
        return fresh;
      } finally {
        if (this.#opening === opening) this.#opening = undefined;
      }
    }
  }

  async #open(tls: TlsMaterial): Promise<Session | undefined> {
    const socket = await new Promise<TLSSocket>((resolve, reject) => {
      const sock = nodeTls.connect({ ...tlsOptions(this.#url, tls), ALPNProtocols: ['h2', 'http/1.1'] });
      sock.once('secureConnect', () => resolve(sock));
      sock.once('error', reject);
    });
    if (socket.alpnProtocol !== 'h2') {
      socket.destroy();
      this.#noH2 = true;
      return undefined;
    }
    this.sessionsOpened++;
    this.protocol = 'h2';
    const h2s = h2connect(this.#url.origin, {
      createConnection: () => socket,
      settings: { initialWindowSize: STREAM_WINDOW },
    });
    // The socket is connected, so the session's handle exists now: the window goes out before
    // the first request's HEADERS (its 'connect' event would come after them).
    if (h2s.connecting) h2s.once('connect', () => h2s.setLocalWindowSize(CONNECTION_WINDOW));
    else h2s.setLocalWindowSize(CONNECTION_WINDOW);
    const session: Session = { h2: h2s, tls, open: 0, ping: undefined as unknown as NodeJS.Timeout };
    session.ping = setInterval(() => this.#ping(session), PING_EVERY_MS);
    session.ping.unref();
    h2s.unref();
    const forget = () => {
      clearInterval(session.ping);
      if (this.#session === session) this.#session = undefined;
    };
    h2s.on('error', forget);
    h2s.on('close', forget);
    h2s.on('goaway', forget);
    return session;
  }

  #ping(s: Session): void {
    if (s.open === 0 || s.h2.destroyed) return;
    const timer = setTimeout(
      () => s.h2.destroy(new Error('the API server did not answer a ping')),
      PING_TIMEOUT_MS,
    );
    timer.unref();
    s.h2.ping((err) => {
      clearTimeout(timer);
      if (err && !s.h2.destroyed) s.h2.destroy(err);
    });
  }

  #drop(s: Session): void {
    clearInterval(s.ping);
    s.h2.destroy();
  }
}
