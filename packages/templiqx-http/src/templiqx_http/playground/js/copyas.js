// "Copy as": the same execution as a curl command, Python (stream_contract) and a templiqx
// command. The token is never written out: the commands read it from the environment.

import { BASE, hasToken } from "./api.js";

const shellQuote = (text) => `'${text.replace(/'/g, `'\\''`)}'`;

function python(value, indent = "") {
  if (value === null) return "None";
  if (value === true) return "True";
  if (value === false) return "False";
  if (typeof value === "number" || typeof value === "string") return JSON.stringify(value);
  const inner = indent + "    ";
  if (Array.isArray(value)) {
    if (!value.length) return "[]";
    return "[\n" + value.map((v) => inner + python(v, inner) + ",\n").join("") + indent + "]";
  }
  const keys = Object.keys(value);
  if (!keys.length) return "{}";
  return "{\n" + keys.map((k) => `${inner}${JSON.stringify(k)}: ${python(value[k], inner)},\n`).join("") + indent + "}";
}

/** The request a run sends: {package, contract, values, capabilities, fixtureOutput}. */
export function commands({ package: p, contract: c, values, capabilities, fixtureOutput }) {
  const body = { render: values, stream: true };
  if (capabilities) body.capabilities = capabilities;
  if (fixtureOutput !== undefined) body.fixture_output = fixtureOutput;
  const url = new URL(`${BASE}/packages/${encodeURIComponent(p)}/contracts/${encodeURIComponent(c)}/execute`, location.href).href;
  const curl = [
    `curl -N -X POST ${shellQuote(url)}`,
    "  -H 'Accept: text/event-stream'",
    "  -H 'Content-Type: application/json'",
    hasToken() ? '  -H "Authorization: Bearer $TEMPLIQX_HTTP_TOKEN"' : null,
    `  --data-binary ${shellQuote(JSON.stringify(body))}`,
  ].filter(Boolean).join(" \\\n");
  const args = [
    `    ${JSON.stringify(p)},`,
    `    ${JSON.stringify(c)},`,
    `    inputs=${python(values.inputs, "    ")},`,
    `    context=${python(values.context, "    ")},`,
    capabilities ? `    capabilities=${python(capabilities, "    ")},` : null,
    fixtureOutput !== undefined ? `    fixture_output=${python(fixtureOutput, "    ")},` : null,
  ].filter(Boolean);
  const py = [
    "# the server's packages root and runtime (templiqx-http-server --root ...)",
    "from templiqx_local import compose",
    "",
    'service = compose("PACKAGES_ROOT")',
    "with service.stream_contract(",
    ...args,
    ") as run:",
    "    for event in run:",
    "        print(event)",
    "print(run.envelope)",
  ].join("\n");
  const cli = [
    `cat > values.json <<'JSON'\n${JSON.stringify(values, null, 2)}\nJSON`,
    fixtureOutput !== undefined ? `cat > output.json <<'JSON'\n${JSON.stringify(fixtureOutput, null, 2)}\nJSON` : null,
    [
      `templiqx --root PACKAGES_ROOT execute ${shellQuote(p)} ${shellQuote(c)} --values values.json`,
      fixtureOutput !== undefined ? " --fixture-output output.json" : "",
      ...(capabilities || []).map((x) => ` --capability ${shellQuote(x)}`),
      " --stream",
    ].join(""),
  ].filter(Boolean).join("\n");
  return { curl, python: py, cli };
}
