// Small DOM helpers shared by the playground's modules.

/** An element: h("p", {class: "x", onclick: f}, "text", child, ...). */
export function h(tag, attributes = {}, ...children) {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (value === undefined || value === null || value === false) continue;
    if (name.startsWith("on") && typeof value === "function") {
      element.addEventListener(name.slice(2), value);
    } else if (name === "dataset") {
      Object.assign(element.dataset, value);
    } else {
      element.setAttribute(name, value === true ? "" : String(value));
    }
  }
  append(element, children);
  return element;
}

function append(element, children) {
  for (const child of children) {
    if (child === undefined || child === null || child === false) continue;
    if (Array.isArray(child)) append(element, child);
    else element.append(child instanceof Node ? child : String(child));
  }
}

export const $ = (selector, root = document) => root.querySelector(selector);

/** Replace an element's children. */
export function fill(element, ...children) {
  element.replaceChildren();
  append(element, children);
  return element;
}

export function escapeHtml(text) {
  return text.replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]);
}

/** Offer `text` as a file download named `name`. */
export function download(name, text, type = "application/json") {
  const url = URL.createObjectURL(new Blob([text], { type }));
  const link = h("a", { href: url, download: name, hidden: true });
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}

/** Run `work` at most once per `ms`, after the last call. */
export function debounce(work, ms) {
  let timer = null;
  return (...args) => {
    clearTimeout(timer);
    timer = setTimeout(() => work(...args), ms);
  };
}

/** A diagnostic as a list item: code, place, message, help and did-you-mean. */
export function diagnosticItem(diagnostic, { onGo, onApply } = {}) {
  const place = diagnostic.span
    ? `line ${diagnostic.span.line}, column ${diagnostic.span.column}`
    : diagnostic.json_pointer ? `at ${diagnostic.json_pointer}` : "";
  const suggestion = didYouMean(diagnostic.message);
  return h(
    "li",
    { class: `diagnostic sev-${diagnostic.severity}`, dataset: { code: diagnostic.code, line: diagnostic.span?.line ?? "" } },
    h("span", { class: "badge" }, diagnostic.severity),
    " ",
    h("code", { class: "code" }, diagnostic.code),
    place && onGo && diagnostic.span
      ? h("button", { type: "button", class: "link", onclick: () => onGo(diagnostic) }, place)
      : place && h("span", { class: "muted" }, place),
    h("p", { class: "message" }, diagnostic.message),
    diagnostic.help && h("p", { class: "help" }, h("strong", {}, "Help: "), diagnostic.help),
    suggestion && h(
      "p",
      { class: "suggestion" },
      "Did you mean ",
      h("code", {}, suggestion),
      "? ",
      onApply && diagnostic.span
        ? h("button", { type: "button", onclick: () => onApply(diagnostic, suggestion) }, `Use “${suggestion}”`)
        : null,
    ),
  );
}

export function didYouMean(message) {
  const found = /did you mean [`'"]([^`'"]+)[`'"]/.exec(message || "");
  return found ? found[1] : null;
}

/** Fingerprints as a description list. */
export function fingerprintList(fingerprints) {
  const names = Object.keys(fingerprints || {});
  if (!names.length) return h("p", { class: "muted" }, "No fingerprints.");
  return h("dl", { class: "fingerprints" }, names.map((name) => [h("dt", {}, name), h("dd", {}, h("code", {}, fingerprints[name]))]));
}
