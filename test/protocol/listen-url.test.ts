/** listenUrl: where a client on this machine reaches a listener, from its bind address and bound port. */
import { expect, it } from "vitest";
import { listenUrl } from "../../protocol/listen-url.js";

it("keeps a concrete address, brackets IPv6, and shows a wildcard bind as 127.0.0.1", () => {
  expect(listenUrl("http", "127.0.0.1", 8000)).toBe("http://127.0.0.1:8000");
  expect(listenUrl("mqtt", "192.168.1.20", 1883)).toBe("mqtt://192.168.1.20:1883");
  expect(listenUrl("http", "localhost", 9464)).toBe("http://localhost:9464");
  expect(listenUrl("http", "::1", 9464)).toBe("http://[::1]:9464");
  expect(listenUrl("http", "0.0.0.0", 8001)).toBe("http://127.0.0.1:8001");
  expect(listenUrl("mqtt", "::", 1883)).toBe("mqtt://127.0.0.1:1883");
});

it("writes the % of an IPv6 zone id as %25 (RFC 6874), once", () => {
  expect(listenUrl("http", "fe80::1%eth0", 9464)).toBe("http://[fe80::1%25eth0]:9464");
  expect(listenUrl("mqtt", "fe80::a00:27ff:fe4e:66a1%wlan0", 1883)).toBe("mqtt://[fe80::a00:27ff:fe4e:66a1%25wlan0]:1883");
  // A numeric zone (the interface index, as Windows writes it) the same way.
  expect(listenUrl("http", "fe80::1%2", 80)).toBe("http://[fe80::1%252]:80");
  // An address without a zone is unchanged.
  expect(listenUrl("http", "fe80::1", 80)).toBe("http://[fe80::1]:80");
});
