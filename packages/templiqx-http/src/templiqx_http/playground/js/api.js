// The operations API, as the page calls it: every request goes to ../operations/v1/...
// (relative to the page, so a host may mount the app under a prefix), with the bearer token
// when the server asked for one. The token lives in this module's memory only.

export const BASE = new URL("../operations/v1", document.baseURI).pathname;

let token = null;
let askToken = null;

/** `ask()` returns a promise of the token the user typed (called on a 401). */
export function onTokenNeeded(ask) {
  askToken = ask;
}

export function hasToken() {
  return token !== null;
}

export function path(...segments) {
  return BASE + segments.map((s) => (s.startsWith("?") ? s : "/" + encodeURIComponent(s))).join("");
}

/** fetch() with the token; on 401 asks for the token once and retries. */
export async function request(method, url, { json, yaml, headers = {}, accept, signal } = {}) {
  for (let attempt = 0; ; attempt++) {
    const sent = new Headers(headers);
    if (token !== null) sent.set("Authorization", `Bearer ${token}`);
    let body;
    if (json !== undefined) {
      sent.set("Content-Type", "application/json");
      body = JSON.stringify(json);
    } else if (yaml !== undefined) {
      sent.set("Content-Type", "application/yaml");
      body = yaml;
    }
    sent.set("Accept", accept || "application/json");
    const response = await fetch(url, { method, headers: sent, body, signal, cache: "no-store" });
    if (response.status !== 401 || askToken === null || attempt > 2) return response;
    token = await askToken(token !== null);
  }
}

/** An operation's envelope: {status, envelope, headers}. */
export async function call(method, url, options) {
  const response = await request(method, url, options);
  const type = response.headers.get("content-type") || "";
  if (!type.includes("json")) {
    throw new Error(`${method} ${url}: expected a JSON envelope, got ${response.status} ${type}`);
  }
  return { status: response.status, envelope: await response.json(), headers: response.headers };
}

export const api = {
  packages: () => call("GET", path("packages")),
  inspect: (p, c) => call("GET", path("packages", p, "contracts", c)),
  /** The stored YAML text: {status, text, token} or {status, envelope} when it cannot be read. */
  async source(p, c) {
    const response = await request("GET", path("packages", p, "contracts", c), { accept: "application/yaml" });
    if ((response.headers.get("content-type") || "").includes("yaml")) {
      const etag = response.headers.get("etag");
      return { status: response.status, text: await response.text(), token: etag ? etag.replace(/^"|"$/g, "") : null };
    }
    return { status: response.status, envelope: await response.json() };
  },
  validate: (p, c) => call("POST", path("packages", p, "contracts", c, "validate")),
  validateSource: (p, c, text) => call("POST", path("packages", p, "contracts", c, "validate"), { yaml: text }),
  put: (p, c, text, token) =>
    call("PUT", path("packages", p, "contracts", c), {
      yaml: text,
      headers: token ? { "If-Match": `"${token}"` } : {},
    }),
  compile: (p, c, body) => call("POST", path("packages", p, "contracts", c, "compile"), { json: body }),
  execute: (p, c, body) => call("POST", path("packages", p, "contracts", c, "execute"), { json: body }),
  diff: (p, c, rp, rc) =>
    call("POST", path("packages", p, "contracts", c, "diff"), { json: { right_package: rp, right_contract: rc } }),
  evals: (p) => call("GET", path("packages", p, "evals")),
  runEval: (p, contract, fixture) =>
    call("POST", path("packages", p, "evals", "run"), { json: { contract, fixture_id: fixture } }),
};

/** The error diagnostics of an envelope. */
export function errors(envelope) {
  return (envelope?.diagnostics || []).filter((d) => d.severity === "error");
}
