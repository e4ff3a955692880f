import { createServer } from "node:net";
import type { AddressInfo } from "node:net";
import { describe, expect, it } from "vitest";
import { HealthServer } from "../../gateway/daemon/health.js";

describe("gateway health server", () => {
  it("on a port in use, fails with the port and the option that moves it (two gateways on one machine)", async () => {
    const taken = createServer();
    await new Promise<void>((r) => taken.listen(0, "127.0.0.1", r));
    const port = (taken.address() as AddressInfo).port;
    try {
      const h = new HealthServer({ agent: () => { throw new Error("unused"); }, links: () => [], startedAt: Date.now() }, { port, host: "127.0.0.1" });
      await expect(h.start()).rejects.toThrow(`the health port 127.0.0.1:${port} is in use (another gateway?): choose another with --health-port`);
      await h.stop();
    } finally {
      await new Promise<void>((r) => taken.close(() => r()));
    }
  });
});
