import net from 'node:net';
import { isPrivateAddress } from '../net/url-guard';

/** What a webhook target may be: HTTPS on a public host, unless the operator allows more (tests, local development). */
export interface WebhookUrlPolicy {
  /** WEBHOOK_ALLOW_HTTP: plain http:// targets are accepted. */
  allowHttp: boolean;
  /** WEBHOOK_ALLOW_PRIVATE: loopback and private-range hosts are accepted. */
  allowPrivate: boolean;
}

/**
 * Why a URL may not receive webhooks, or null when it may. Only what the URL itself says is
 * checked here (scheme, a literal private address, localhost); the name's addresses are checked
 * again by the delivery at every attempt, in the socket's own lookup (url-guard.ts), so a host
 * that resolves somewhere private later is still refused.
 */
export function webhookUrlProblem(value: string, policy: WebhookUrlPolicy): string | null {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return 'is not a valid URL';
  }
  if (url.protocol !== 'https:' && !(policy.allowHttp && url.protocol === 'http:')) {
    return policy.allowHttp ? 'must be an http(s) URL' : 'must be an https:// URL';
  }
  if (url.username || url.password) return 'must not carry credentials';
  if (value.length > 2048) return 'is longer than 2048 characters';
  const host = url.hostname.replace(/^\[|\]$/g, '');
  if (!policy.allowPrivate && (host === 'localhost' || host.endsWith('.localhost') || (net.isIP(host) !== 0 && isPrivateAddress(host)))) {
    return 'points at a private network address, which this gateway does not call';
  }
  return null;
}
