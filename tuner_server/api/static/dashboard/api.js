// The REST API as the signed-in token sees it. The token lives in sessionStorage (this tab only, gone when it
// closes) and travels only in the Authorization header, never in a URL.

const TOKEN_KEY = "tunefarm.token";

export class ApiError extends Error {
  constructor(status, error, detail) {
    super(error);
    this.status = status;
    this.detail = detail;
  }
}

export const session = {
  scope: null, // 'read' or 'admin', from GET /v1/whoami
  get token() { return sessionStorage.getItem(TOKEN_KEY); },
  signIn(token) { sessionStorage.setItem(TOKEN_KEY, token); },
  signOut() { sessionStorage.removeItem(TOKEN_KEY); this.scope = null; },
  get admin() { return this.scope === "admin"; },
};

export async function api(path, { method = "GET", body } = {}) {
  const token = session.token;
  if (!token) throw new ApiError(401, "not signed in");
  const headers = { Authorization: `Bearer ${token}`, Accept: "application/json" };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const res = await fetch(path, { method, headers, cache: "no-store",
                                  body: body === undefined ? undefined : JSON.stringify(body) });
  let data = null;
  try { data = await res.json(); } catch { /* an empty or non-JSON body: the status says enough */ }
  if (!res.ok) throw new ApiError(res.status, data?.error ?? `${res.status} ${res.statusText}`, data?.detail);
  return data;
}

// An int param typed as text becomes a JSON number only when spelled as the server spells integers (digits, no '+',
// space or leading zero: compiler_core.workload's UNSIGNED_TEXT) and exactly representable; anything else ("016", "1e3")
// goes as typed, for the server to refuse with the param's range, not read silently as another number.
export function intParam(text) {
  return /^-?(?:0|[1-9][0-9]*)$/.test(text) && Number.isSafeInteger(Number(text)) ? Number(text) : text;
}

// A schedule key as the query string /v1/best* take: op, the op's params, device.
export function keyQuery(op, params, device) {
  const q = new URLSearchParams({ op });
  for (const [name, value] of Object.entries(params)) q.set(name, String(value));
  q.set("device", device);
  return q.toString();
}
