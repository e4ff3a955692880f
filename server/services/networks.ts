/**
 * IP networks as 128-bit values (IPv4 as IPv4-mapped IPv6), for the outbound policy
 * (outbound-policy.ts) and the trusted proxies. Apart from them, with no I/O and no HTTP client, so
 * the command line can check `--outbound-allow`/`--outbound-deny` and `--trust-proxy` without
 * loading undici or fastify into every program (the gateway's footprint test holds it to that).
 */
import { isIP } from "node:net";

const MAPPED = 0xffffn << 32n;
const ALL = (1n << 128n) - 1n;

function parseV4(s: string): bigint | null {
  const parts = s.split(".");
  if (parts.length !== 4) return null;
  let v = 0n;
  for (const p of parts) {
    if (!/^\d{1,3}$/.test(p) || Number(p) > 255) return null;
    v = (v << 8n) | BigInt(p);
  }
  return v;
}

/** An address as 128 bits (IPv4 mapped), or null when it is not an IP address. */
export function addressBits(address: string): bigint | null {
  const kind = isIP(address);
  if (kind === 4) {
    const v = parseV4(address);
    return v === null ? null : MAPPED | v;
  }
  if (kind !== 6) return null;
  let s = address.split("%")[0] as string;
  let tail: bigint | null = null;
  const v4 = /(\d+\.\d+\.\d+\.\d+)$/.exec(s);
  if (v4) {
    tail = parseV4(v4[1] as string);
    if (tail === null) return null;
    s = `${s.slice(0, -(v4[1] as string).length)}0:0`;
  }
  const [head, rest] = s.includes("::") ? (s.split("::") as [string, string]) : [s, null];
  const h = head === "" ? [] : head.split(":");
  const r = rest === null || rest === "" ? [] : rest.split(":");
  const groups = rest === null ? h : [...h, ...Array<string>(8 - h.length - r.length).fill("0"), ...r];
  if (groups.length !== 8) return null;
  let v = 0n;
  for (const g of groups) v = (v << 16n) | BigInt(Number.parseInt(g, 16));
  if (tail !== null) v = (v & ~0xffffffffn) | tail;
  return v;
}

/** Parses `a.b.c.d/n`, `x::y/n` or a single address; throws a TypeError naming the value. */
export function parseNetwork(text: string): { base: bigint; prefix: number } {
  const m = /^([^/]+)(?:\/(\d{1,3}))?$/.exec(text.trim());
  const bits = m ? addressBits(m[1] as string) : null;
  if (!m || bits === null) throw new TypeError(`"${text}" is not a network: give an address or address/prefix (e.g. 192.168.1.0/24, fd00::/8)`);
  const v4 = isIP(m[1] as string) === 4;
  const max = v4 ? 32 : 128;
  const given = m[2] === undefined ? max : Number(m[2]);
  if (given > max) throw new TypeError(`"${text}" is not a network: the prefix of an IPv${v4 ? 4 : 6} network is at most ${max}`);
  const prefix = v4 ? given + 96 : given;
  return { base: bits & mask(prefix), prefix };
}

function mask(prefix: number): bigint {
  return prefix === 0 ? 0n : (ALL << BigInt(128 - prefix)) & ALL;
}

export function contains(n: { base: bigint; prefix: number }, bits: bigint): boolean {
  return (bits & mask(n.prefix)) === n.base;
}

const LOOPBACK_V4 = parseNetwork("127.0.0.0/8");

/**
 * Whether `address` is the machine itself: 127.0.0.0/8 (IPv4-mapped too) or ::1. Anything that is
 * not an IP address is not: a forwarded address is text a client may have written.
 */
export function isLoopbackAddress(address: string): boolean {
  const bits = addressBits(address);
  return bits !== null && (bits === 1n || contains(LOOPBACK_V4, bits));
}

/*
 * The proxies whose X-Forwarded-For the server believes (`blockkit server --trust-proxy`,
 * ServerOptions.trustProxy). fastify does the rest through proxy-addr: on a connection from one of
 * them, request.ip is the rightmost address of X-Forwarded-For that is not itself a trusted proxy;
 * on any other connection, the socket's address.
 */

/** Why the server will not trust every hop, for the refusals below. */
const EVERY_HOP =
  "trusting every hop lets any client choose its own address, since X-Forwarded-For is whatever the client sends " +
  "before the proxy appends to it (127.0.0.1 would open GET /metrics, another's address would use up their login " +
  "attempts): name your proxies' own addresses instead, e.g. 127.0.0.1,::1 for one on this machine";

/**
 * The list of `value` (comma- or space-separated when a string), each item checked: an address or
 * address/prefix. `true`, `*` and /0 networks are refused (EVERY_HOP), as is a hop count. Throws a
 * TypeError naming the item at fault. An empty array is "trust no proxy"; an empty string is refused.
 */
export function trustedProxies(value: string | readonly string[]): string[] {
  const list = typeof value === "string" ? value.split(/[\s,]+/).filter((v) => v !== "") : value.map((v) => v.trim());
  if (typeof value === "string" && list.length === 0) throw new TypeError("give the proxies' addresses or networks, e.g. 127.0.0.1,::1 or 10.0.0.0/8");
  for (const item of list) {
    if (/^(true|\*|all)$/i.test(item)) throw new TypeError(`"${item}" is refused: ${EVERY_HOP}`);
    try {
      parseNetwork(item);
    } catch {
      throw new TypeError(`"${item}" is not a proxy's address or network: give an address or address/prefix (e.g. 127.0.0.1, ::1, 10.0.0.0/8)`);
    }
    if (/\/0+$/.test(item)) throw new TypeError(`"${item}" is every address: ${EVERY_HOP}`);
  }
  return list;
}

/** Whether an address is one of `list`'s (trustedProxies, already checked): the connection is a trusted proxy's. */
export function proxyMatcher(list: readonly string[]): (address: string) => boolean {
  const nets = list.map(parseNetwork);
  return (address) => {
    const bits = addressBits(address);
    return bits !== null && nets.some((n) => contains(n, bits));
  };
}

/**
 * Whether `list` trusts an address of the machine itself (a network holding 127.0.0.0/8's or ::1,
 * or held by 127.0.0.0/8): then a request from loopback without X-Forwarded-For may be the proxy's
 * own, carrying an outside client, and is not taken for the machine's (server/http/client-address.ts).
 */
export function trustsLoopback(list: readonly string[]): boolean {
  return list.map(parseNetwork).some((n) => contains(n, 1n) || contains(n, LOOPBACK_V4.base) || contains(LOOPBACK_V4, n.base));
}
