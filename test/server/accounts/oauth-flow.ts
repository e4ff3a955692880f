/** Helpers of the OAuth tests: one authorization through the pages, and the token exchange. */
import type { FastifyInstance, LightMyRequestResponse } from "fastify";
import { expect } from "vitest";
import type { PageClient } from "./page-client.js";

export const REDIRECT = "https://client.example/cb?from=app";

export function authorizeUrl(params: Record<string, string>): string {
  return `/oauth/authorize?${new URLSearchParams(params).toString()}`;
}

/** Runs step 1 for a signed-in client: consent page, then `decision`; returns the redirect URL. */
export async function authorize(client: PageClient, params: Record<string, string>, decision = "allow"): Promise<URL> {
  const consent = await client.get(authorizeUrl(params));
  expect(consent.statusCode, consent.body).toBe(200);
  const res = await client.submit(consent, "/oauth/authorize", { decision });
  expect(res.statusCode).toBe(303);
  return new URL(String(res.headers.location));
}

export function exchange(app: FastifyInstance, body: Record<string, string>, as: "form" | "json" = "form"): Promise<LightMyRequestResponse> {
  return app.inject({
    method: "POST",
    url: "/oauth/access_token",
    headers: { "content-type": as === "json" ? "application/json" : "application/x-www-form-urlencoded" },
    payload: as === "json" ? JSON.stringify(body) : new URLSearchParams(body).toString(),
  });
}
