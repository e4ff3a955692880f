/**
 * CSRF tokens (synchroniser pattern without server state). A form's hidden `csrf` field is an HMAC
 * of what identifies the browser: the session hash once logged in, before that a random
 * "pre-session" id kept in its own HttpOnly cookie. A forged cross-site post has the cookies but
 * cannot read the page, so it cannot know the field.
 */
import type { Session } from "./sessions.js";
import { sign } from "./sessions.js";
import { safeEqual } from "../secrets.js";

export const CSRF_FIELD = "csrf";
export const PRE_SESSION_COOKIE = "bk_pre";

export type CsrfBinding = { session: Session } | { preSession: string };

export function csrfToken(key: Buffer, binding: CsrfBinding): string {
  const subject = "session" in binding ? `s:${binding.session.hash}` : `p:${binding.preSession}`;
  return sign(key, `csrf|${subject}`);
}

export function csrfValid(key: Buffer, binding: CsrfBinding | null, given: unknown): boolean {
  if (!binding || typeof given !== "string" || given === "") return false;
  return safeEqual(given, csrfToken(key, binding));
}
