/** `blockkit gateway`: run the hardware gateway daemon (one block bridging serial and MQTT nodes). */
import type { Command } from "commander";
import { StartCancelled } from "../protocol/lifecycle.js";
import { programLogger } from "./logger.js";
import type { GatewayFlags } from "../gateway/daemon/config.js";
import { logLevel, port, positiveInt, url } from "./options.js";
import { stopOnSignals } from "./signals.js";

interface Flags extends GatewayFlags {
  config?: string;
  check?: boolean;
}

export function registerGateway(program: Command): void {
  program
    .command("gateway")
    .description("run the gateway daemon: one block bridging serial (Ninja firmware) and MQTT nodes to the server")
    .option("--server <url>", "the server's root URL (or its /rest/v0 root)", url)
    .option("--stream <url>", "the server's stream_url (camera uploads); default: the server's port + 1", url)
    .option("--node-id <id>", "this block's node id (12+ letters and digits)")
    .option("--user-token <token>", "a user access token for the direct activation flow (used once)")
    .option("--serial <path>", "serial port of a Ninja-firmware node, e.g. /dev/ttyAMA0")
    .option("--baud <n>", "serial baud rate (default 9600)", positiveInt)
    .option("--mqtt-listen <port>", "run the embedded MQTT broker on this port (0: one the system picks, named in the ready line)", port)
    .option("--mqtt-url <url>", "use an external MQTT broker (mqtt://, mqtts://)")
    .option("--mqtt-prefix <prefix>", "MQTT topic prefix (default blockkit)")
    .option("--state-dir <dir>", "where the token and the outbox live (default ./gateway-state)")
    .option("--config <file>", "configuration file (JSON or YAML)")
    .option("--health-port <port>", "port of /healthz and /metrics on 127.0.0.1 (default 9464; 0: one the system picks, named in the ready line)", port)
    .option("--record <file>", "append every frame received from hardware to FILE as JSON lines")
    .option("--log-level <level>", "log level", logLevel)
    .option("--check", "validate the configuration and exit")
    .action(async (flags: Flags) => {
      // Loaded here, not at the top: `blockkit server` need not load the gateway, nor the reverse.
      const { ConfigError, loadConfig } = await import("../gateway/daemon/config.js");
      const { Gateway } = await import("../gateway/daemon/gateway.js");
      let config;
      try {
        config = loadConfig({ file: flags.config, flags, env: process.env });
      } catch (err) {
        if (err instanceof ConfigError) {
          process.stderr.write(`${err.message}\n`);
          process.exit(2);
        }
        throw err;
      }
      if (flags.check) {
        process.stdout.write("configuration ok\n");
        return;
      }
      const logger = await programLogger("blockkit-gateway", config.logLevel);
      const gateway = new Gateway(config, { logger });
      stopOnSignals(logger, () => gateway.stop());
      try {
        // A failed start has stopped what it had started (the outbox is closed) when it rejects.
        await gateway.start();
      } catch (err) {
        // SIGINT/SIGTERM during start: the signal handler's stop() ends the process once it is done.
        if (err instanceof StartCancelled) return;
        throw err;
      }
      // The bound ports: with 0 (--health-port 0, --mqtt-listen 0) the system picked them. Tests and
      // scripts read them here (docs/gateway.md "Ports"); keep the shape of the line.
      const at = gateway.listening();
      const health = at.health ? ` health ${at.health}` : "";
      const broker = at.mqtt ? ` mqtt ${at.mqtt}` : "";
      process.stdout.write(`blockkit gateway ready node ${config.nodeId}${health}${broker}\n`);
    });
}

/** `blockkit mqtt-password`: a password from stdin as the hash for the gateway config's `mqtt.users`. */
export function registerMqttPassword(program: Command): void {
  program
    .command("mqtt-password")
    .description("read a node's MQTT password on stdin and print its hash for mqtt.users[].passwordHash in the gateway config")
    .action(async () => {
      const chunks: Buffer[] = [];
      for await (const c of process.stdin) chunks.push(c as Buffer);
      const password = Buffer.concat(chunks).toString("utf8").replace(/\r?\n$/, "");
      if (password.length < 8) {
        process.stderr.write("mqtt-password: the password needs at least 8 characters\n");
        process.exitCode = 2;
        return;
      }
      const { hashMqttPassword } = await import("../gateway/links/mqtt-users.js");
      process.stdout.write(`${hashMqttPassword(password)}\n`);
    });
}
