// A JSON value as a collapsible tree (<details> per object and array, open unless closed by
// the reader: a tree re-drawn as the answer grows keeps what the reader folded).

import { h } from "./dom.js";

export class JsonTree {
  constructor(container, label = "value") {
    this.container = container;
    this.label = label;
    this.closed = new Set();
  }

  show(value) {
    this.container.replaceChildren(value === undefined ? h("p", { class: "muted" }, "Nothing yet.") : this.node(value, [], this.label));
  }

  node(value, path, key) {
    const name = h("span", { class: "j-key" }, key);
    if (value !== null && typeof value === "object") {
      const entries = Array.isArray(value) ? value.map((v, i) => [i, v]) : Object.entries(value);
      const where = JSON.stringify(path);
      const details = h(
        "details",
        { open: !this.closed.has(where) },
        h("summary", {}, name, h("span", { class: "muted" }, Array.isArray(value) ? ` [${entries.length}]` : ` {${entries.length}}`)),
        h("ul", { class: "j-children" }, entries.map(([k, v]) => h("li", {}, this.node(v, [...path, k], String(k))))),
      );
      details.addEventListener("toggle", () => {
        if (details.open) this.closed.delete(where);
        else this.closed.add(where);
      });
      return details;
    }
    return h("span", { class: "j-leaf" }, name, ": ", h("span", { class: `j-${value === null ? "null" : typeof value}` }, JSON.stringify(value)));
  }
}
