// Host text for the bind-host setting, by the rules of py_services/codecompass/common/hosts.py
// (the Python services read the same CODECOMPASS_BIND_HOST): an IP address, IPv6 with or without
// brackets, or an RFC 1123 host name.
import * as net from 'node:net';

export const LOOPBACK = '127.0.0.1';

const HOST_NAME = /^(?=.{1,253}$)[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$/;

/** The host to listen on, or undefined when `text` is none (a port, a URL, blanks). */
export function parseBindHost(text: string): string | undefined {
  const host = text.trim();
  const bare = host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
  if (net.isIP(bare) !== 0) return bare;
  // All digits and dots is a malformed IPv4 address, not a name.
  if (HOST_NAME.test(host) && !/^[\d.]+$/.test(host)) return host;
  return undefined;
}

const LOOPBACK_RANGES = new net.BlockList();
LOOPBACK_RANGES.addSubnet('127.0.0.0', 8, 'ipv4');
LOOPBACK_RANGES.addAddress('::1', 'ipv6');

/** True for hosts only this machine can reach: 127.0.0.0/8, ::1, localhost. */
export function isLoopback(host: string): boolean {
  const bare = host.replace(/^\[|\]$/g, '').toLowerCase();
  if (bare === 'localhost') return true;
  const family = net.isIP(bare);
  // A host name other than localhost may resolve to any address.
  return family !== 0 && LOOPBACK_RANGES.check(bare, family === 4 ? 'ipv4' : 'ipv6');
}

/** `host:port`, with an IPv6 host in brackets (`[::1]:50051`). */
export function hostPort(host: string, port: number): string {
  return host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
}
