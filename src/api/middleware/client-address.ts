import net from 'node:net';
import type { ParameterizedContext } from 'koa';
import type { GatewayState } from '../context';

/**
 * The address a per-client limit is keyed by. IPv4 as it is; an IPv4-mapped IPv6 address as
 * the IPv4 one; any other IPv6 address by its /64 prefix, since one client (one LAN, one
 * host) is usually handed a whole /64 and could otherwise pick a fresh address per request.
 */
export function addressKey(address: string): string {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped) return mapped[1];
  if (net.isIPv4(address)) return address;
  if (!net.isIPv6(address)) return address;
  return `${expandIpv6(address).slice(0, 4).join(':')}::/64`;
}

/** The eight hextets of an IPv6 address (zone id dropped, an embedded IPv4 tail converted). */
function expandIpv6(address: string): string[] {
  let text = address.split('%')[0].toLowerCase();
  const v4 = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text);
  if (v4) {
    const [a, b, c, d] = v4.slice(1).map(Number) as [number, number, number, number];
    text = `${text.slice(0, v4.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head = '', tail] = text.split('::');
  const left = head === '' ? [] : head.split(':');
  const right = tail === undefined || tail === '' ? [] : tail.split(':');
  const fill = tail === undefined ? [] : new Array<string>(8 - left.length - right.length).fill('0');
  return [...left, ...fill, ...right].map((h) => h.replace(/^0+(?=.)/, ''));
}

/**
 * The client's address: the socket's peer (the app runs with proxy: false), or with
 * trustProxy the last X-Forwarded-For entry, which is the one the (single, trusted) reverse
 * proxy in front appended; entries before it are whatever the client wrote.
 */
export function clientAddress(ctx: ParameterizedContext<GatewayState>, trustProxy: boolean): string {
  if (trustProxy) {
    const forwarded = ctx.get('x-forwarded-for');
    const last = forwarded.slice(forwarded.lastIndexOf(',') + 1).trim();
    if (net.isIP(last)) return addressKey(last);
  }
  return addressKey(ctx.req.socket.remoteAddress ?? 'unknown');
}
