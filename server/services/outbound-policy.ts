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
import { networkInterfaces } from "node:os";
import { Agent, buildConnector } from "undici";
import { badRequest } from "../errors.js";
import { addressBits, contains, parseNetwork } from "./networks.js";

export { addressBits, parseNetwork };

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

  /**
   * Why the server would refuse to connect to `url`, as far as can be told without DNS, for a check
   * when a user registers it (a callback, a webhook actuator, a File Host target): null when allowed
   * or when only the check at connect time can tell. A literal address (in any form the WHATWG URL
   * parser accepts: `2130706433`, `0x7f.1`, `[::ffff:a9fe:a9fe]`) is checked as connect would check
   * it; `localhost` and names under `.localhost` (loopback by RFC 6761) as 127.0.0.1 and ::1,
   * refused when both are. Any other name is not resolved here (the answer may change, and a
   * registration should not wait on DNS): it is checked at every connect.
   */
  checkUrl(url: string): string | null {
    let parsed: URL;
    try {
      parsed = new URL(url);
    } catch {
      return "it is not a valid URL";
    }
    if (parsed.protocol !== "http:" && parsed.protocol !== "https:") return `its scheme ${parsed.protocol} is not http: or https:`;
    const port = Number(parsed.port) || (parsed.protocol === "https:" ? 443 : 80);
    const host = parsed.hostname.replace(/^\[|\]$/g, "").replace(/\.$/, "").toLowerCase();
    if (addressBits(host) !== null) return this.check(host, port);
    if (host === "localhost" || host.endsWith(".localhost")) {
      const why = ["127.0.0.1", "::1"].map((a) => this.check(a, port));
      return why.every((w) => w !== null) ? `${host} is a loopback name: ${why.join("; ")}` : null;
    }
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

/**
 * Refuses `url` at registration when the policy would refuse it at connect (OutboundPolicy.checkUrl):
 * a 400 that names what it is, the URL and the rule. `what`: e.g. "callback URL".
 */
export function assertOutboundUrl(policy: OutboundPolicy, what: string, url: string): void {
  const why = policy.checkUrl(url);
  if (why === null) return;
  const rules = why.startsWith("it is not") || why.startsWith("its scheme") ? "" : " (the server's outbound policy: --outbound-allow, --outbound-deny)";
  throw badRequest(`${what} "${url}" is refused: ${why}${rules}`);
}

function lookupAll(hostname: string): Promise<string[]> {
  return new Promise((resolve, reject) => {
    dnsLookup(hostname, { all: true }, (err, addresses) => (err ? reject(err) : resolve(addresses.map((a) => a.address))));
  });
}
