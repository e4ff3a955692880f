/**
 * Noticing that the client of a held request (the commands long-poll, the activation wait) went
 * away. The API server keeps half-open sockets (app.ts: a client may half-close after its request
 * and still get the answer), so a client that closes its side no longer closes the response:
 * its end of stream is watched as well.
 */
import type { FastifyReply } from "fastify";

/** Calls `gone` once if the socket ends or the response closes before it was written. */
export function onClientGone(reply: FastifyReply, gone: () => void): void {
  const res = reply.raw;
  const socket = res.socket;
  let called = false;
  const fire = (): void => {
    if (called || res.writableFinished) return;
    called = true;
    gone();
  };
  res.once("close", () => {
    socket?.off("end", fire);
    fire();
  });
  if (!socket) return;
  if (socket.readableEnded) {
    queueMicrotask(fire);
    return;
  }
  socket.once("end", fire);
}
