/**
 * A scrape of GET /metrics runs on the event loop: it must not walk every handle of the process
 * (one per open connection, and a fleet holds one poll per block). prom-client's default gauges
 * of active handles and resources did, twice per scrape for the handles (docs/scaling-fleet.md).
 */
import { afterEach, describe, expect, it, vi } from "vitest";
import { type TestServer, startTestServer } from "../helpers/server.js";

describe("a /metrics scrape", () => {
  let t: TestServer;
  afterEach(async () => {
    vi.restoreAllMocks();
    await t.close();
  });

  it("keeps the process metrics that cost little and walks no handle list", async () => {
    t = await startTestServer({}, { listen: true });
    const proc = process as unknown as { _getActiveHandles: () => unknown[]; getActiveResourcesInfo: () => string[] };
    const handles = vi.spyOn(proc, "_getActiveHandles");
    const resources = vi.spyOn(proc, "getActiveResourcesInfo");
    const res = await fetch(`${new URL(t.baseUrl as string).origin}/metrics`);
    expect(res.status).toBe(200);
    const text = await res.text();
    expect(handles).not.toHaveBeenCalled();
    expect(resources).not.toHaveBeenCalled();
    expect(text).not.toMatch(/^blockkit_process_nodejs_active_(handles|resources)/m);
    for (const name of ["blockkit_process_process_cpu_seconds_total", "blockkit_process_process_resident_memory_bytes", "blockkit_process_nodejs_eventloop_lag_seconds", "blockkit_open_connections"]) {
      expect(text, name).toMatch(new RegExp(`^${name} `, "m"));
    }
    expect(text).toMatch(/^blockkit_process_process_open_fds \d+/m);
  });
});
