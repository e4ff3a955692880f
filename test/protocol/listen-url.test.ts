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
