// Evals: the package's cases (list_evals), each run with run_eval (the verdict, offline, as CI
// runs it), and optionally the same values on the server's runtime, its answer diffed
// against the case's expected one (its fake_output).

import { $, h, fill, diagnosticItem } from "./dom.js";
import { api } from "./api.js";
import { jsonDiff, jsonDiffTable } from "./diff.js";
import { JsonTree } from "./tree.js";

export class Evals {
  constructor(setStatus) {
    this.setStatus = setStatus;
    this.package = null;
    this.cases = [];
    this.contracts = new Map();
    $("#run-evals").addEventListener("click", () => this.runAll());
  }

  async load(p) {
    this.package = p;
    this.contracts.clear();
    fill($("#eval-detail"));
    const { envelope } = await api.evals(p);
    const body = $("#evals");
    if (!envelope.ok) {
      fill(body, h("tr", {}, h("td", { colspan: 5 }, h("ul", { class: "diagnostics" }, envelope.diagnostics.map((d) => diagnosticItem(d))))));
      this.cases = [];
      return;
    }
    this.cases = envelope.result.map((c) => ({ ...c, row: null }));
    fill(body, this.cases.length ? this.cases.map((c) => this.row(c)) : h("tr", {}, h("td", { colspan: 5, class: "muted" }, "This package has no evals.")));
    $("#evals-state").textContent = `${this.cases.length} case(s).`;
  }

  row(c) {
    const verdict = h("td", { class: "verdict" }, "—");
    const button = h("button", { type: "button", class: "small", "aria-label": `Run ${c.contract_id} ${c.fixture_id}` }, "Run");
    button.addEventListener("click", () => this.runOne(c));
    c.verdict = verdict;
    c.row = h("tr", { dataset: { case: `${c.contract_id}/${c.fixture_id}` } }, h("td", {}, c.contract_id), h("td", {}, c.fixture_id), h("td", {}, c.required_capabilities.join(", ")), verdict, h("td", {}, button));
    return c.row;
  }

  async expected(c) {
    if (!this.contracts.has(c.contract_id)) this.contracts.set(c.contract_id, api.inspect(this.package, c.contract_id));
    const { envelope } = await this.contracts.get(c.contract_id);
    return envelope.ok ? (envelope.result.evals || []).find((e) => e.id === c.fixture_id) : undefined;
  }

  async runOne(c, { quiet = false } = {}) {
    fill(c.verdict, "running…");
    const { envelope } = await api.runEval(this.package, c.contract_id, c.fixture_id);
    const passed = envelope.ok && envelope.result?.passed;
    fill(c.verdict, h("span", { class: passed ? "pass" : "fail" }, passed ? "pass" : "fail"));
    c.row.dataset.verdict = passed ? "pass" : "fail";
    const fixture = await this.expected(c);
    let actual;
    let actualEnvelope;
    if ($("#evals-actual").checked && fixture) {
      ({ envelope: actualEnvelope } = await api.execute(this.package, c.contract_id, {
        render: { inputs: fixture.inputs || {}, context: fixture.context || {} },
        fixture_output: fixture.fake_output,
      }));
      actual = actualEnvelope.result?.output;
    }
    if (!quiet) this.detail(c, envelope, fixture, actual, actualEnvelope);
    return passed;
  }

  detail(c, envelope, fixture, actual, actualEnvelope) {
    const problems = envelope.ok ? envelope.result.diagnostics : envelope.diagnostics;
    const expectedBox = h("div", { class: "tree-box" });
    if (fixture) new JsonTree(expectedBox, "expected").show(fixture.fake_output);
    const parts = [
      h("h3", {}, `${c.contract_id} / ${c.fixture_id}`),
      h("p", { class: envelope.result?.passed ? "ok" : "error" }, envelope.result?.passed ? "Passed: the expected answer satisfies the contract." : "Failed."),
      problems?.length ? h("ul", { class: "diagnostics" }, problems.map((d) => diagnosticItem(d))) : null,
      envelope.result?.artifact_fingerprint ? h("p", { class: "muted" }, "Output fingerprint: ", h("code", {}, envelope.result.artifact_fingerprint)) : null,
    ];
    if (problems?.some((d) => d.json_pointer) && fixture) {
      parts.push(h("p", {}, "Where the expected answer breaks the output schema: ", problems.filter((d) => d.json_pointer).map((d) => h("code", {}, d.json_pointer + " ")), "."));
    }
    if (actual !== undefined || actualEnvelope) {
      const adapter = actualEnvelope?.result?.adapter;
      parts.push(
        h("h4", {}, `Expected vs actual (${adapter ? `${adapter.id} ${adapter.version}` : "the server's runtime"})`),
        actualEnvelope && !actualEnvelope.ok ? h("ul", { class: "diagnostics" }, actualEnvelope.diagnostics.map((d) => diagnosticItem(d))) : null,
        actual !== undefined ? jsonDiffTable(jsonDiff(fixture.fake_output, actual)) : null,
      );
    }
    parts.push(h("h4", {}, "Expected answer"), expectedBox);
    fill($("#eval-detail"), parts);
  }

  async runAll() {
    $("#run-evals").disabled = true;
    let passed = 0;
    try {
      for (const c of this.cases) if (await this.runOne(c, { quiet: c !== this.cases[this.cases.length - 1] })) passed += 1;
      $("#evals-state").textContent = `${passed} of ${this.cases.length} case(s) passed.`;
      this.setStatus(`Evals: ${passed} of ${this.cases.length} passed.`);
    } finally {
      $("#run-evals").disabled = false;
    }
  }
}

