import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import { guardedLookup, isPrivateAddress } from '../net/url-guard';

export interface WebhookPostOptions {
  /** WEBHOOK_ALLOW_PRIVATE: private and loopback addresses may be called (tests, local development). */
  allowPrivate: boolean;
  /** WEBHOOK_TIMEOUT_MS: the whole request, from DNS to the end of the answer. */
  timeoutMs: number;
}

/** How one POST ended: the receiver's HTTP status, or why no status came. */
export type PostOutcome = { status: number } | { error: string };

/** Only this much of a receiver's answer is read (and then dropped): a 2xx is all that counts. */
const MAX_ANSWER_BYTES = 64 * 1024;

/**
 * POSTs one delivery. The host's addresses are checked in the socket's own DNS lookup, at every
 * call (a name that now resolves somewhere private is refused: no DNS-rebinding gap); redirects
 * are not followed (a 3xx is a failed attempt); one deadline covers the whole exchange.
 */
export function postWebhook(rawUrl: string, headers: Record<string, string>, body: string, opts: WebhookPostOptions): Promise<PostOutcome> {
  const url = new URL(rawUrl);
  const blocked = opts.allowPrivate ? () => false : isPrivateAddress;
  const host = url.hostname.replace(/^\[|\]$/g, '');
  if (net.isIP(host) !== 0 && blocked(host)) return Promise.resolve({ error: `refusing to call a private address (${url.hostname})` });
  const client = url.protocol === 'https:' ? https : http;
  return new Promise((resolve) => {
    let settled = false;
    const done = (outcome: PostOutcome) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve(outcome);
    };
    const req = client.request(
      url,
      {
        method: 'POST',
        // A connection of its own: never reused for another key's endpoint.
        agent: false,
        lookup: guardedLookup(blocked),
        headers: { ...headers, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), 'user-agent': 'durable-model-gateway-webhooks' },
      },
      (res) => {
        let read = 0;
        res.on('data', (chunk: Buffer) => {
          read += chunk.length;
          if (read > MAX_ANSWER_BYTES) res.destroy();
        });
        const status = res.statusCode ?? 0;
        res.on('end', () => done({ status }));
        res.on('close', () => done({ status }));
        res.on('error', () => done({ status }));
      },
    );
    const timer = setTimeout(() => {
      req.destroy();
      done({ error: `no answer within ${opts.timeoutMs} ms` });
    }, opts.timeoutMs);
    req.on('error', (err: NodeJS.ErrnoException) => {
      done({ error: err.code === 'EPRIVATE' ? err.message.replace('fetch from', 'call') : `request failed: ${err.code ?? err.message}` });
    });
    req.end(body);
  });
}
