/**
 * The URL a client on this machine reaches a listener at, from the address it was bound to and the
 * port it got (the one the system picked for port 0): a wildcard address (`0.0.0.0`, `::`) is
 * reached on 127.0.0.1, an IPv6 address goes in brackets, and the `%` before an IPv6 zone id
 * (`fe80::1%eth0`, a link-local address) is written `%25` (RFC 6874). The server prints its URLs
 * so, the gateway its health port and embedded broker.
 *
 * A zone id is for people and tools that take RFC 6874 (curl, mosquitto_sub): Node's URL parser
 * (WHATWG, as fetch and undici use it) refuses any zone id, however it is written.
 */
export function listenUrl(scheme: string, host: string, port: number): string {
  const shown = host === "0.0.0.0" || host === "::" ? "127.0.0.1" : host;
  return `${scheme}://${shown.includes(":") ? `[${shown.replaceAll("%", "%25")}]` : shown}:${port}`;
}
