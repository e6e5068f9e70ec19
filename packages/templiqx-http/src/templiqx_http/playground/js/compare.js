// Compare: diff_contract between the saved contract and another one (side by side, with the
// sections the operation reports as changed), or the unsaved edit against the saved text.

import { h, fill, diagnosticItem } from "./dom.js";
import { api } from "./api.js";
import { sideBySide } from "./diff.js";

export async function compareContracts(container, left, right) {
  fill(container, h("p", { class: "muted" }, "Comparing…"));
  const [{ envelope }, leftText, rightText] = await Promise.all([
    api.diff(left.package, left.contract, right.package, right.contract),
    api.source(left.package, left.contract),
    api.source(right.package, right.contract),
  ]);
  const title = (x) => `${x.package}/${x.contract}`;
  if (!envelope.ok) {
    fill(container, h("p", { class: "error" }, "diff_contract refused:"), h("ul", { class: "diagnostics" }, envelope.diagnostics.map((d) => diagnosticItem(d))));
    return;
  }
  const result = envelope.result;
  fill(
    container,
    h("p", { class: result.equal ? "same" : "changed", id: "compare-verdict" }, result.equal ? "The contracts are equal." : "The contracts differ."),
    h("dl", { class: "fingerprints" },
      h("dt", {}, title(left)), h("dd", {}, h("code", {}, result.left_fingerprint)),
      h("dt", {}, title(right)), h("dd", {}, h("code", {}, result.right_fingerprint))),
    result.changes?.length ? [h("h4", {}, "Changed sections"), h("ul", { class: "changes" }, result.changes.map((c) => h("li", {}, h("code", {}, c))))] : null,
    leftText.text !== undefined && rightText.text !== undefined ? sideBySide(title(left), leftText.text, title(right), rightText.text) : null,
  );
}

export function compareEdit(container, saved, edited) {
  fill(
    container,
    h("p", { class: "muted" }, "Your edit against the saved text, line by line (diff_contract compares saved contracts: save the edit to compare it through the API)."),
    sideBySide("saved", saved, "your edit", edited),
  );
}
