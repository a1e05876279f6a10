// Calls to the engine: the public API through the same-origin proxy /ui/api/ (the server
// adds the session's token; scripts never see it) and the dashboard's own /ui/ endpoints.

// ApiError carries the engine's {group, code, message} error.
export class ApiError extends Error {
  constructor(status, body) {
    super(body && body.message ? body.group + "." + body.code + ": " + body.message : "HTTP " + status);
    this.status = status;
    this.body = body;
  }
}

async function call(url, init) {
  const res = await fetch(url, { credentials: "same-origin", ...init });
  if (res.status === 401) {
    location.reload(); // the page answers with the login form
    throw new ApiError(401, null);
  }
  let body = null;
  try {
    body = await res.json();
  } catch {
    body = null;
  }
  if (!res.ok) throw new ApiError(res.status, body);
  return body;
}

// api reads path of the public API (path with its query string).
export const api = (path) => call("/ui/api" + path);

// ui reads one of the dashboard's own endpoints, /ui/<path>.
export const ui = (path) => call("/ui/" + path);

// query builds a query string from an object, leaving out empty values; arrays repeat.
export function query(params) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) {
    if (v === undefined || v === null || v === "" || v === false) continue;
    for (const one of Array.isArray(v) ? v : [v]) q.append(k, String(one));
  }
  const s = q.toString();
  return s ? "?" + s : "";
}

// namespace is the namespace the header's selector names.
export function namespace() {
  return localStorage.getItem("berth.namespace") || "";
}

// send makes one of the inspector's actions: method path of the public API with a JSON body.
export const send = (method, path, body) =>
  call("/ui/api" + path, { method, headers: { "Content-Type": "application/json" }, body: JSON.stringify(body || {}) });
