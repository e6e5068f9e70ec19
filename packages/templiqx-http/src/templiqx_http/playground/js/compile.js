// The compiled request: messages by role, tools, output schema, capabilities, fingerprints.

import { h, fill, diagnosticItem, fingerprintList } from "./dom.js";
import { JsonTree } from "./tree.js";

export function showCompiled(container, envelope) {
  if (!envelope.ok) {
    fill(container, h("p", { class: "error" }, "The contract did not compile with these values:"), h("ul", { class: "diagnostics" }, envelope.diagnostics.map((d) => diagnosticItem(d))));
    return;
  }
  const result = envelope.result;
  const schemaBox = h("div", { class: "tree-box" });
  new JsonTree(schemaBox, "output_schema").show(result.output_schema);
  const tools = result.tools || result.interaction?.tools || [];
  const toolBox = h("div", { class: "tree-box" });
  if (tools.length) new JsonTree(toolBox, "tools").show(tools);
  const policy = h("div", { class: "tree-box" });
  new JsonTree(policy, "runtime_policy").show(result.runtime_policy || {});
  fill(
    container,
    h("p", { class: "ok" }, `Compiled ${result.contract_id} ${result.contract_version} with ${result.compiler}.`),
    h("h3", {}, "Fingerprints"),
    fingerprintList(envelope.fingerprints),
    h("h3", {}, "Messages"),
    h("div", { class: "messages" }, (result.messages || []).map((m) =>
      h("article", { class: `message role-${m.role}` }, h("h4", {}, m.role), h("pre", {}, typeof m.content === "string" ? m.content : JSON.stringify(m.content, null, 2))))),
    h("h3", {}, "Tools"),
    tools.length ? toolBox : h("p", { class: "muted" }, "No tools."),
    h("h3", {}, "Output schema"),
    schemaBox,
    h("h3", {}, "Capabilities"),
    h("dl", { class: "fingerprints" },
      h("dt", {}, "required"), h("dd", {}, (result.required_capabilities || []).join(", ") || "none"),
      h("dt", {}, "target"), h("dd", {}, (result.target_capabilities || []).join(", ") || "none")),
    h("h3", {}, "Runtime policy"),
    policy,
    envelope.diagnostics.length ? [h("h3", {}, "Diagnostics"), h("ul", { class: "diagnostics" }, envelope.diagnostics.map((d) => diagnosticItem(d)))] : null,
  );
}
