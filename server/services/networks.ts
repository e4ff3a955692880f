/**
 * IP networks as 128-bit values (IPv4 as IPv4-mapped IPv6), for the outbound policy
 * (outbound-policy.ts). Apart from it, with no I/O and no HTTP client, so the command line can check
 * `--outbound-allow`/`--outbound-deny` without loading undici into every program (the gateway's
 * footprint test holds it to that).
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
