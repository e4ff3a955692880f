/**
 * PtyPair with a stable link for the gateway's end (`blockkit sim nodes --serial --pty-link PATH`):
 * socat names both ptys before it makes the link, so the pair is ready only once the link is there.
 * A stand-in for socat that is slower at it than the real one makes that order visible every time.
 */
import { chmodSync, lstatSync, mkdtempSync, readlinkSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, expect, it } from "vitest";
import { PtyPair } from "../../simulator/nodes/pty-pair.js";

const cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const f of cleanup.splice(0).reverse()) await f();
});

it("resolves only once the gateway's link exists, though socat named both ptys before it made the link", async () => {
  const dir = mkdtempSync(join(tmpdir(), "blockkit-pty-pair-"));
  cleanup.push(() => rmSync(dir, { recursive: true, force: true }));
  // What `socat -d -d pty,raw,echo=0 pty,raw,echo=0,wait-slave,link=PATH` says and does, in its
  // order (xio-pty.c: the "PTY is" notice, then the symlink), with 300 ms between the two.
  const socat = join(dir, "socat");
  writeFileSync(
    socat,
    [
      "#!/bin/sh",
      'link=$(printf "%s" "$4" | sed -n "s/.*,link=//p")',
      'echo "2026/11/24 20:00:00 socat[1] N PTY is /dev/pts/901" >&2',
      'echo "2026/11/24 20:00:00 socat[1] N PTY is /dev/pts/902" >&2',
      "sleep 0.3",
      'ln -s /dev/pts/902 "$link"',
      "exec sleep 60",
    ].join("\n"),
  );
  chmodSync(socat, 0o755);
  const link = join(dir, "gw-end");
  const pair = new PtyPair({ socat, link });
  cleanup.push(() => pair.stop());
  const ends = await pair.start();
  expect(ends).toEqual({ node: "/dev/pts/901", gateway: link });
  expect(lstatSync(link).isSymbolicLink()).toBe(true);
  expect(readlinkSync(link)).toBe("/dev/pts/902");
});
