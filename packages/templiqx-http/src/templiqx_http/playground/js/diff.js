// Differences: of two JSON values (by path), and of two texts (by line, side by side).

import { h } from "./dom.js";

/** [{path, kind: "changed" | "missing" | "extra", expected, actual}] */
export function jsonDiff(expected, actual, path = []) {
  const isObject = (v) => v !== null && typeof v === "object";
  if (isObject(expected) && isObject(actual) && Array.isArray(expected) === Array.isArray(actual)) {
    const keys = Array.isArray(expected)
      ? [...Array(Math.max(expected.length, actual.length)).keys()]
      : [...new Set([...Object.keys(expected), ...Object.keys(actual)])];
    return keys.flatMap((key) => {
      const has = (v) => (Array.isArray(v) ? key < v.length : Object.hasOwn(v, key));
      if (!has(actual)) return [{ path: [...path, key], kind: "missing", expected: expected[key] }];
      if (!has(expected)) return [{ path: [...path, key], kind: "extra", actual: actual[key] }];
      return jsonDiff(expected[key], actual[key], [...path, key]);
    });
  }
  return JSON.stringify(expected) === JSON.stringify(actual) ? [] : [{ path, kind: "changed", expected, actual }];
}

export function pointer(path) {
  return "/" + path.map((p) => String(p).replace(/~/g, "~0").replace(/\//g, "~1")).join("/");
}

export function jsonDiffTable(differences) {
  if (!differences.length) return h("p", { class: "same" }, "No differences.");
  const show = (v) => (v === undefined ? h("span", { class: "muted" }, "—") : h("code", {}, JSON.stringify(v)));
  return h(
    "table",
    { class: "diff-table" },
    h("thead", {}, h("tr", {}, h("th", { scope: "col" }, "Where"), h("th", { scope: "col" }, "Expected"), h("th", { scope: "col" }, "Actual"))),
    h("tbody", {}, differences.map((d) => h("tr", { class: `d-${d.kind}` }, h("td", {}, h("code", {}, pointer(d.path)), " ", h("span", { class: "muted" }, d.kind)), h("td", {}, show(d.expected)), h("td", {}, show(d.actual))))),
  );
}

/** Line operations turning `a` into `b`: [{op: "same" | "del" | "add", a?, b?}] (LCS). */
export function lineDiff(a, b) {
  const n = a.length;
  const m = b.length;
  const table = Array.from({ length: n + 1 }, () => new Uint32Array(m + 1));
  for (let i = n - 1; i >= 0; i--) {
    for (let j = m - 1; j >= 0; j--) {
      table[i][j] = a[i] === b[j] ? table[i + 1][j + 1] + 1 : Math.max(table[i + 1][j], table[i][j + 1]);
    }
  }
  const ops = [];
  let i = 0;
  let j = 0;
  while (i < n || j < m) {
    if (i < n && j < m && a[i] === b[j]) { ops.push({ op: "same", a: i, b: j }); i++; j++; }
    else if (j < m && (i >= n || table[i][j + 1] >= table[i + 1][j])) { ops.push({ op: "add", b: j }); j++; }
    else { ops.push({ op: "del", a: i }); i++; }
  }
  return ops;
}

/** Two texts side by side, changed lines marked. */
export function sideBySide(leftTitle, left, rightTitle, right) {
  const a = left.split("\n");
  const b = right.split("\n");
  const rows = [];
  const ops = lineDiff(a, b);
  for (let k = 0; k < ops.length; k++) {
    const op = ops[k];
    if (op.op === "same") { rows.push([op.a, op.b, "same"]); continue; }
    // pair a run of deletions with the additions that follow
    const dels = [];
    const adds = [];
    while (k < ops.length && ops[k].op !== "same") { (ops[k].op === "del" ? dels : adds).push(ops[k]); k++; }
    k--;
    for (let r = 0; r < Math.max(dels.length, adds.length); r++) rows.push([dels[r]?.a, adds[r]?.b, "changed"]);
  }
  const cell = (lines, index, side, kind) => [
    h("td", { class: "ln" }, index === undefined ? "" : String(index + 1)),
    h("td", { class: `txt ${kind === "changed" && index !== undefined ? (side === "l" ? "del" : "add") : ""}` }, index === undefined ? "" : lines[index]),
  ];
  const changed = rows.filter((r) => r[2] === "changed").length;
  return h(
    "div",
    { class: "side-by-side" },
    h("p", { class: changed ? "muted" : "same" }, changed ? `${changed} line(s) differ.` : "The texts are the same."),
    h(
      "table",
      {},
      h("thead", {}, h("tr", {}, h("th", { colspan: 2, scope: "col" }, leftTitle), h("th", { colspan: 2, scope: "col" }, rightTitle))),
      h("tbody", {}, rows.map(([l, r, kind]) => h("tr", { class: kind }, cell(a, l, "l", kind), cell(b, r, "r", kind)))),
    ),
  );
}
