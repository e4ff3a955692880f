/**
 * The URL a client on this machine reaches a listener at, from the address it was bound to and the
 * port it got (the one the system picked for port 0): a wildcard address (`0.0.0.0`, `::`) is
 * reached on 127.0.0.1, an IPv6 address goes in brackets. The server prints its URLs so, the gateway
 * its health port and embedded broker.
 */
export function listenUrl(scheme: string, host: string, port: number): string {
  const shown = host === "0.0.0.0" || host === "::" ? "127.0.0.1" : host;
  return `${scheme}://${shown.includes(":") ? `[${shown}]` : shown}:${port}`;
}
