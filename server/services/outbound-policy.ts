/**
 * Where the server may connect on a user's behalf (callbacks, webhook actuators, File Host PUTs):
 * one policy and one undici connector for all three. Users choose those URLs, so without a policy a
 * user could make the server call its own API, a cloud metadata address, or probe the LAN.
 *
 * Decision for an address (and port), among the networks that contain it:
 * - the most specific network wins (the longest prefix);
 * - on a tie, a network given by the operator (`--outbound-allow`, `--outbound-deny`) beats a
 *   built-in one, and a deny beats an allow;
 * - built in: deny 169.254.0.0/16 and fe80::/10 (link-local, where cloud metadata services
 *   answer), fd00:ec2::254/128 (a metadata address in IPv6), and the server's own listeners (its API and stream
 *   ports on any address of this host, including 127.0.0.0/8, ::1, 0.0.0.0 and ::);
 * - with no `--outbound-allow`, everything else is allowed (LAN targets of a home hub work);
 *   with one, only what it covers.
 * So `--outbound-allow 127.0.0.1/32` lets the server call its own listeners on 127.0.0.1 (a test
 * of loops does), while `--outbound-allow 0.0.0.0/0` does not.
 *
 * The address checked is the one connected to: the connector resolves the host name once, keeps
 * the addresses the policy allows, and connects to those (no second lookup that a DNS answer with a
 * short TTL could change in between: DNS rebinding).
 */
import { lookup as dnsLookup } from "node:dns";
import { isIP } from "node:net";
import { networkInterfaces } from "node:os";
import { Agent, buildConnector } from "undici";

export interface OutboundPolicyOptions {
  /** Networks (CIDR, e.g. `192.168.1.0/24`, `fd00::/8`, or one address) the server may connect to; none given: all but the denied. */
  allow?: readonly string[];
  /** Networks the server must not connect to, on top of the built-in ones. */
  deny?: readonly string[];
}

/** Resolves a host name to its addresses (a seam for tests; default `dns.lookup` with `all`). */
export type Resolver = (hostname: string) => Promise<string[]>;

interface Net {
  /** 128-bit value; IPv4 as IPv4-mapped IPv6 (::ffff:a.b.c.d). */
  base: bigint;
  prefix: number;
  deny: boolean;
  given: boolean;
  text: string;
}

export const BUILT_IN_DENY = ["169.254.0.0/16", "fe80::/10", "fd00:ec2::254/128"] as const;

/** Why a connection was not made: the policy refused every address of the target. */
export class OutboundRefusedError extends Error {
  readonly code = "BLOCKKIT_OUTBOUND_REFUSED";
  constructor(message: string) {
    super(message);
    this.name = "OutboundRefusedError";
  }
}

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

function contains(n: { base: bigint; prefix: number }, bits: bigint): boolean {
  return (bits & mask(n.prefix)) === n.base;
}

/** Addresses on which the server's own listeners may be reached. */
function localNetworks(): { base: bigint; prefix: number }[] {
  const out = [parseNetwork("127.0.0.0/8"), parseNetwork("::1"), parseNetwork("0.0.0.0"), parseNetwork("::")];
  for (const list of Object.values(networkInterfaces())) {
    for (const a of list ?? []) {
      const bits = addressBits(a.address);
      if (bits !== null) out.push({ base: bits, prefix: 128 });
    }
  }
  return out;
}

const LOCAL_CACHE_MS = 5000;

export class OutboundPolicy {
  private readonly nets: Net[] = [];
  private readonly allowListed: boolean;
  private ownPorts: number[] = [];
  private local: { at: number; nets: { base: bigint; prefix: number }[] } | null = null;

  constructor(
    options: OutboundPolicyOptions = {},
    private readonly resolve: Resolver = lookupAll,
    /** Told of each connection refused, with why (the server counts it as a limit that bit). */
    private readonly onRefused?: (why: string) => void,
  ) {
    const add = (list: readonly string[] | undefined, deny: boolean, given: boolean, name: string): void => {
      for (const text of list ?? []) {
        try {
          this.nets.push({ ...parseNetwork(text), deny, given, text });
        } catch (err) {
          throw new TypeError(`${name}: ${(err as Error).message}`);
        }
      }
    };
    add(BUILT_IN_DENY, true, false, "built-in");
    add(options.allow, false, true, "outbound allow");
    add(options.deny, true, true, "outbound deny");
    this.allowListed = (options.allow?.length ?? 0) > 0;
  }

  /** The ports of the server's own listeners (API, stream), refused on every local address. */
  setOwnPorts(ports: readonly number[]): void {
    this.ownPorts = [...ports];
  }

  /** Null when the server may connect to `address`:`port`, else why not (for logs, not for users). */
  check(address: string, port: number): string | null {
    const bits = addressBits(address);
    if (bits === null) return `${address} is not an IP address`;
    let best: Net | null = null;
    const better = (n: Net): boolean =>
      best === null || n.prefix > best.prefix || (n.prefix === best.prefix && (n.given !== best.given ? n.given : n.deny && !best.deny));
    for (const n of this.nets) if (contains(n, bits) && better(n)) best = n;
    if (this.ownPorts.includes(port)) {
      for (const l of this.localNets()) {
        const own: Net = { ...l, deny: true, given: false, text: "the server's own listener" };
        if (contains(l, bits) && better(own)) best = own;
      }
    }
    if (best === null) return this.allowListed ? `${address} is outside every --outbound-allow network` : null;
    if (best.deny) return `${address}:${port} is in a denied network (${best.text})`;
    return null;
  }

  private localNets(): { base: bigint; prefix: number }[] {
    const now = Date.now();
    if (!this.local || now - this.local.at > LOCAL_CACHE_MS) this.local = { at: now, nets: localNetworks() };
    return this.local.nets;
  }

  /**
   * An undici Agent whose every connection goes through the policy: the host name is resolved once
   * (bounded by `connectTimeoutMs`), the allowed addresses are tried in order, and a target with
   * none fails with OutboundRefusedError without any packet sent.
   */
  agent(o: { connectTimeoutMs: number; connections?: number; keepAliveTimeout?: number }): Agent {
    const base = buildConnector({ timeout: o.connectTimeoutMs });
    const connect: buildConnector.connector = (opts, callback) => {
      const port = Number(opts.port) || (opts.protocol === "https:" ? 443 : 80);
      let done = false;
      const finish = (err: Error | null, socket?: Parameters<buildConnector.Callback>[1]): void => {
        if (done) {
          socket?.destroy();
          return;
        }
        done = true;
        clearTimeout(timer);
        if (err) callback(err, null);
        else callback(null, socket as NonNullable<typeof socket>);
      };
      const timer = setTimeout(() => finish(new Error(`resolving ${opts.hostname} took longer than ${o.connectTimeoutMs} ms`)), o.connectTimeoutMs);
      this.resolve(opts.hostname).then(
        (addresses) => {
          if (done) return;
          const allowed = addresses.filter((a) => this.check(a, port) === null);
          if (allowed.length === 0) {
            const why = addresses.map((a) => this.check(a, port)).join("; ") || `${opts.hostname} has no address`;
            this.onRefused?.(why);
            return finish(new OutboundRefusedError(`refused by the outbound policy: ${why}`));
          }
          clearTimeout(timer);
          const attempt = (i: number): void => {
            base({ ...opts, hostname: allowed[i] as string }, (err, socket) => {
              if (err && i + 1 < allowed.length && !done) attempt(i + 1);
              else if (err) finish(err);
              else finish(null, socket);
            });
          };
          attempt(0);
        },
        (err: unknown) => finish(err as Error),
      );
    };
    return new Agent({ connect, connections: o.connections ?? null, keepAliveTimeout: o.keepAliveTimeout ?? 4000 });
  }
}

function lookupAll(hostname: string): Promise<string[]> {
  return new Promise((resolve, reject) => {
    dnsLookup(hostname, { all: true }, (err, addresses) => (err ? reject(err) : resolve(addresses.map((a) => a.address))));
  });
}
