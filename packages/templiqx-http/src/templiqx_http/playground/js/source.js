// The source editor: a textarea over a highlighted copy of its text, line numbers, and every
// diagnostic underlined at its span (line and column, 1-based; the end column is exclusive).

import { $, h, fill, escapeHtml, diagnosticItem } from "./dom.js";

const KEY = /^(\s*)(- +)?((?:"[^"]*"|'[^']*'|[^\s#:'"][^:#]*?))(\s*:)(?=\s|$)/;

/** The highlighting classes of one YAML line, one per character. */
function classify(line) {
  const classes = new Array(line.length).fill("");
  const mark = (from, to, cls) => { for (let i = from; i < to; i++) classes[i] = cls; };
  const trimmed = line.trimStart();
  if (trimmed.startsWith("#")) { mark(line.length - trimmed.length, line.length, "t-comment"); return classes; }
  let at = 0;
  const key = KEY.exec(line);
  if (key) {
    at = key[1].length;
    if (key[2]) { mark(at, at + 1, "t-punct"); at += key[2].length; }
    mark(at, at + key[3].length, "t-key");
    at += key[3].length;
    mark(at, at + key[4].length, "t-punct");
    at += key[4].length;
  } else {
    const dash = /^(\s*)(- +)/.exec(line);
    if (dash) { mark(dash[1].length, dash[1].length + 1, "t-punct"); at = dash[0].length; }
  }
  while (at < line.length) {
    const rest = line.slice(at);
    let found;
    if ((found = /^\s+#.*/.exec(rest)) || (at === 0 && (found = /^#.*/.exec(rest)))) { mark(at, line.length, "t-comment"); break; }
    if ((found = /^"(?:[^"\\]|\\.)*"?|^'(?:[^']|'')*'?/.exec(rest))) { mark(at, at + found[0].length, "t-string"); at += found[0].length; continue; }
    if ((found = /^[[\]{},]/.exec(rest))) { mark(at, at + 1, "t-punct"); at += 1; continue; }
    if ((found = /^[^\s[\]{},]+/.exec(rest))) {
      const word = found[0];
      let cls = "t-plain";
      if (/^-?\d+(\.\d+)?([eE][-+]?\d+)?$/.test(word)) cls = "t-number";
      else if (/^(true|false|null|~)$/.test(word)) cls = "t-literal";
      else if (/^[|>][-+]?$/.test(word)) cls = "t-punct";
      mark(at, at + word.length, cls);
      at += word.length;
      continue;
    }
    at += 1;
  }
  return classes;
}

/** Per line, the column ranges [from, to) and severity the diagnostics underline. */
function ranges(diagnostics, lines) {
  const byLine = new Map();
  for (const d of diagnostics) {
    if (!d.span) continue;
    const first = d.span.line;
    const last = Math.max(d.span.end_line ?? first, first);
    for (let n = first; n <= last && n <= lines.length; n++) {
      const text = lines[n - 1] ?? "";
      let from = n === first ? d.span.column - 1 : 0;
      let to = n === last ? (d.span.end_column ?? d.span.column) - 1 : text.length;
      if (to <= from) { // a point: underline the word there, or the whole line
        const word = /^\S+/.exec(text.slice(from));
        to = word ? from + word[0].length : text.length;
        if (to <= from) { from = 0; to = Math.max(text.length, 1); }
      }
      if (!byLine.has(n)) byLine.set(n, []);
      byLine.get(n).push({ from, to, severity: d.severity });
    }
  }
  return byLine;
}

function lineHtml(line, marks) {
  const classes = classify(line);
  const width = Math.max(line.length, ...marks.map((m) => m.to));
  let html = "";
  let run = "";
  let runKey = null;
  const flush = () => {
    if (!run) return;
    const [cls, severity] = runKey.split("|");
    let piece = cls ? `<span class="${cls}">${escapeHtml(run)}</span>` : escapeHtml(run);
    if (severity) piece = `<mark class="diag sev-${severity}">${piece}</mark>`;
    html += piece;
    run = "";
  };
  for (let i = 0; i < width; i++) {
    const hit = marks.find((m) => i >= m.from && i < m.to);
    const key = `${classes[i] || ""}|${hit ? hit.severity : ""}`;
    if (key !== runKey) { flush(); runKey = key; }
    run += i < line.length ? line[i] : " ";
  }
  flush();
  return html;
}

export class SourceEditor {
  constructor({ onEdit, onSave }) {
    this.area = $("#source");
    this.highlight = $("#highlight");
    this.gutter = $("#gutter");
    this.list = $("#diagnostics");
    this.diagnostics = [];
    this.area.addEventListener("input", () => { this.render(); onEdit(this.area.value); });
    this.area.addEventListener("keydown", (event) => {
      if ((event.ctrlKey || event.metaKey) && event.key.toLowerCase() === "s") { event.preventDefault(); onSave(); }
    });
  }

  get text() { return this.area.value; }

  set(text, diagnostics = []) {
    this.area.value = text;
    this.showDiagnostics(diagnostics);
  }

  showDiagnostics(diagnostics) {
    this.diagnostics = diagnostics;
    this.render();
    fill(
      this.list,
      diagnostics.length
        ? diagnostics.map((d) => diagnosticItem(d, { onGo: (x) => this.go(x), onApply: (x, s) => this.apply(x, s) }))
        : h("li", { class: "none muted" }, "No problems."),
    );
  }

  render() {
    const lines = this.area.value.split("\n");
    const marks = ranges(this.diagnostics, lines);
    this.highlight.innerHTML = lines.map((line, i) => lineHtml(line, marks.get(i + 1) || [])).join("\n") + "\n";
    const worst = new Map();
    for (const d of this.diagnostics) {
      if (!d.span) continue;
      const was = worst.get(d.span.line);
      if (was !== "error") worst.set(d.span.line, d.severity);
    }
    const numbers = lines.map((_, i) => {
      const n = i + 1;
      const severity = worst.get(n);
      return `<div data-line="${n}"${severity ? ` class="has-${severity}"` : ""}>${n}</div>`;
    });
    this.gutter.innerHTML = numbers.join("");
    this.area.rows = lines.length + 1;
    this.area.style.width = `calc(${Math.max(...lines.map((l) => l.length), 40) + 2}ch + 1.5rem)`;
  }

  /** Scroll the first problem into view (without moving the focus). */
  reveal() {
    const first = this.diagnostics.find((d) => d.span);
    const box = this.area.closest(".editor");
    if (!first) { box.scrollTop = 0; return; }
    const row = this.gutter.querySelector(`[data-line="${first.span.line}"]`);
    if (row) box.scrollTop = Math.max(row.offsetTop - box.clientHeight / 3, 0);
  }

  offset(line, column) {
    const lines = this.area.value.split("\n");
    let at = 0;
    for (let i = 0; i < line - 1 && i < lines.length; i++) at += lines[i].length + 1;
    return at + Math.max(column - 1, 0);
  }

  go(diagnostic) {
    const { line, column, end_line: endLine, end_column: endColumn } = diagnostic.span;
    const from = this.offset(line, column);
    const to = Math.max(this.offset(endLine ?? line, endColumn ?? column), from);
    this.area.focus();
    this.area.setSelectionRange(from, to);
    const row = this.gutter.querySelector(`[data-line="${line}"]`);
    row?.scrollIntoView({ block: "center" });
  }

  apply(diagnostic, suggestion) {
    const { line, column, end_line: endLine, end_column: endColumn } = diagnostic.span;
    const from = this.offset(line, column);
    const to = this.offset(endLine ?? line, endColumn ?? column);
    if (to <= from) return;
    this.area.setRangeText(suggestion, from, to, "select");
    this.area.dispatchEvent(new Event("input"));
    this.area.focus();
  }
}
