/**
 * Load generator of bench/automation.bench.ts, in its own process so that it does not share the
 * server's event loop. It reads one job per stdin line, `URL TOKEN DEVICES SECONDS CONNECTIONS`,
 * runs autocannon POSTing data events round-robin over the node's devices, and answers one JSON
 * line per job.
 */
import { createInterface } from "node:readline";
import autocannon from "autocannon";

async function run(line: string): Promise<string> {
  const [url, token, devices, seconds, connections] = line.trim().split(/\s+/);
  if (!url || !token) throw new Error(`bad job line: ${line}`);
  const n = Number(devices ?? 1000);
  let i = 0;
  const result = await autocannon({
    url,
    method: "POST",
    connections: Number(connections ?? 32),
    duration: Number(seconds ?? 10),
    headers: { "content-type": "application/json", "x-service-token": token },
    requests: [
      {
        setupRequest: (req) => {
          i++;
          return { ...req, body: JSON.stringify({ G: String(i % n), V: 0, D: 9, DA: String(i % 40) }) };
        },
      },
    ],
  });
  return JSON.stringify({ rps: result.requests.average, total: result.requests.total, non2xx: result.non2xx, errors: result.errors });
}

for await (const line of createInterface({ input: process.stdin })) {
  if (line.trim() === "") continue;
  process.stdout.write(`${await run(line)}\n`);
}
