/** The common response envelope of the service API (spec: "Response envelope"). */
export interface Envelope<T = unknown> {
  result: 0 | 1;
  error: string | null;
  id: 0;
  data?: T;
}

export function ok<T>(data?: T): Envelope<T> {
  return data === undefined ? { result: 1, error: null, id: 0 } : { result: 1, error: null, id: 0, data };
}

export function fail(error: string): Envelope<never> {
  return { result: 0, error, id: 0 };
}
