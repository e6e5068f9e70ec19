// The playground: picks a package and contract, and wires the views together.

import { $, h, fill, debounce, download } from "./dom.js";
import { api, onTokenNeeded, errors } from "./api.js";
import { SourceEditor } from "./source.js";
import { valuesForm } from "./form.js";
import { showCompiled } from "./compile.js";
import { Runner } from "./run.js";
import { commands } from "./copyas.js";
import { compareContracts, compareEdit } from "./compare.js";
import { Evals } from "./evals.js";

const state = {
  packages: [],
  package: null,
  contract: null,
  saved: "", // the stored text
  token: null, // the contract's compare-and-swap token (If-Match of a save)
  inspected: null, // inspect_contract's result (null when the contract does not load)
  form: null,
  raw: false,
  generation: 0, // a newer selection makes older answers stale
};

const status = (text) => { $("#status").textContent = text; };
const sourceState = (text, kind = "") => { const n = $("#source-state"); n.textContent = text; n.dataset.state = kind; };

// --- token: asked once, kept in this module's memory -----------------------------------------
onTokenNeeded((wrong) => new Promise((resolve) => {
  const dialog = $("#token-dialog");
  const input = $("#token-input");
  input.value = "";
  dialog.querySelector("p").textContent = wrong
    ? "That token was refused. Type the bearer token the server was started with."
    : "Type the bearer token the server was started with. It stays in this tab's memory only, and is gone when you close or reload the tab.";
  dialog.addEventListener("close", () => resolve(input.value), { once: true });
  dialog.showModal();
  input.focus();
}));

// --- theme ----------------------------------------------------------------------------------
function applyTheme(dark) {
  document.documentElement.dataset.theme = dark ? "dark" : "light";
  $("#theme").setAttribute("aria-pressed", String(dark));
}
applyTheme(matchMedia("(prefers-color-scheme: dark)").matches);
$("#theme").addEventListener("click", () => applyTheme(document.documentElement.dataset.theme !== "dark"));

// --- tabs (arrow keys move between them) ------------------------------------------------------
const tabs = [...document.querySelectorAll('[role="tab"]')];
function select(tab, focus = false) {
  for (const t of tabs) {
    const on = t === tab;
    t.setAttribute("aria-selected", String(on));
    t.tabIndex = on ? 0 : -1;
    $(`#${t.getAttribute("aria-controls")}`).hidden = !on;
  }
  if (focus) tab.focus();
  if (tab.id === "tab-run") updateCopy();
}
for (const tab of tabs) {
  tab.addEventListener("click", () => select(tab));
  tab.addEventListener("keydown", (event) => {
    const at = tabs.indexOf(tab);
    const next = { ArrowRight: at + 1, ArrowLeft: at - 1, Home: 0, End: tabs.length - 1 }[event.key];
    if (next === undefined) return;
    event.preventDefault();
    select(tabs[(next + tabs.length) % tabs.length], true);
  });
}

// --- source: live validation through the API, explicit CAS save ------------------------------
const editor = new SourceEditor({ onEdit: () => { markEdited(); validateEdit(); }, onSave: () => save() });

function markEdited() {
  const edited = editor.text !== state.saved;
  $("#save").disabled = !edited;
  $("#revert").disabled = !edited;
  sourceState(edited ? "Edited, not saved" : "Saved", edited ? "edited" : "saved");
}

const validateEdit = debounce(async () => {
  const generation = state.generation;
  const text = editor.text;
  const { envelope } = await api.validateSource(state.package, state.contract, text);
  if (generation !== state.generation || text !== editor.text) return;
  editor.showDiagnostics(envelope.diagnostics);
  const count = errors(envelope).length;
  sourceState(`${text === state.saved ? "Saved" : "Edited, not saved"} — ${count ? `${count} error(s)` : "valid"}`, text === state.saved ? "saved" : "edited");
}, 350);

async function save() {
  if (editor.text === state.saved) return;
  const text = editor.text;
  sourceState("Saving…", "saving");
  const { status: code, envelope } = await api.put(state.package, state.contract, text, state.token);
  if (envelope.ok) {
    state.saved = text;
    state.token = envelope.fingerprints.contract;
    markEdited();
    sourceState("Saved", "saved");
    status(`Saved ${state.package}/${state.contract}.`);
    await inspect(state.generation);
    return;
  }
  editor.showDiagnostics(envelope.diagnostics);
  if (code === 409) {
    sourceState("Not saved: the contract changed on the server since you opened it. Copy your edit, then reload the contract.", "conflict");
  } else {
    sourceState(`Not saved (${code}): fix the problems listed below.`, "refused");
  }
}

$("#save").addEventListener("click", save);
$("#revert").addEventListener("click", () => { editor.set(state.saved, editor.diagnostics); markEdited(); validateEdit(); });

// --- inputs ---------------------------------------------------------------------------------
function values() {
  if (state.raw) return JSON.parse($("#raw-json").value);
  return state.form ? state.form.get() : { inputs: {}, context: {} };
}

function checkValues() {
  if (!state.form || state.raw) return;
  const problems = state.form.problems();
  $("#values-state").textContent = problems.length ? `${problems.length} problem(s): ${problems.join("; ")}` : "The values fit the contract's schemas.";
  $("#values-state").dataset.state = problems.length ? "invalid" : "valid";
  updateCopy();
}

function buildForm() {
  const contract = state.inspected;
  const form = $("#values-form");
  const preset = $("#preset");
  if (!contract) {
    state.form = null;
    fill(form, h("p", { class: "muted" }, "The contract does not load: fix its diagnostics to get its form."));
    fill(preset, h("option", { value: "" }, "empty values"));
    $("#values-state").textContent = "";
    $("#capabilities").value = "";
    $("#fixture-output").value = "";
    return;
  }
  state.form = valuesForm(contract, checkValues);
  fill(form, state.form.elements);
  const evals = contract.evals || [];
  fill(preset, h("option", { value: "" }, "empty values"), evals.map((e, i) => h("option", { value: String(i) }, `eval ${e.id}`)));
  $("#capabilities").value = (contract.capabilities || []).join(", ");
  const first = evals[0];
  $("#fixture-output").value = first && first.fake_output !== undefined ? JSON.stringify(first.fake_output, null, 2) : "";
  state.form.set({ inputs: {}, context: {} });
  checkValues();
}

$("#preset").addEventListener("change", (event) => {
  const chosen = state.inspected?.evals?.[Number(event.target.value)];
  const given = chosen ? { inputs: chosen.inputs || {}, context: chosen.context || {} } : { inputs: {}, context: {} };
  setValues(given);
  if (chosen && chosen.fake_output !== undefined) $("#fixture-output").value = JSON.stringify(chosen.fake_output, null, 2);
});

function setValues(given) {
  if (state.raw) $("#raw-json").value = JSON.stringify(given, null, 2);
  else if (state.form) { state.form.set(given); checkValues(); }
}

$("#raw-toggle").addEventListener("click", () => {
  const error = $("#raw-error");
  if (!state.raw) {
    $("#raw-json").value = JSON.stringify(values(), null, 2);
    state.raw = true;
  } else {
    let parsed;
    try {
      parsed = JSON.parse($("#raw-json").value);
      if (!parsed || typeof parsed !== "object" || Array.isArray(parsed)) throw new Error('expected {"inputs": {…}, "context": {…}}');
    } catch (e) {
      error.textContent = `Not valid JSON: ${e.message}`;
      return;
    }
    error.textContent = "";
    state.raw = false;
    state.form?.set(parsed);
    checkValues();
  }
  $("#raw-toggle").setAttribute("aria-pressed", String(state.raw));
  $("#raw-box").hidden = !state.raw;
  $("#values-form").hidden = state.raw;
});

$("#raw-json").addEventListener("input", () => {
  try { JSON.parse($("#raw-json").value); $("#raw-error").textContent = ""; }
  catch (e) { $("#raw-error").textContent = `Not valid JSON: ${e.message}`; }
});

$("#load-values").addEventListener("change", async (event) => {
  const file = event.target.files[0];
  if (!file) return;
  try {
    const given = JSON.parse(await file.text());
    setValues({ inputs: given.inputs || {}, context: given.context || {} });
    status(`Loaded values from ${file.name}.`);
  } catch (e) {
    status(`${file.name} is not a JSON file of values: ${e.message}`);
  }
  event.target.value = "";
});

$("#save-values").addEventListener("click", () => {
  try { download(`${state.contract}-values.json`, JSON.stringify(values(), null, 2) + "\n"); }
  catch (e) { $("#raw-error").textContent = `Not valid JSON: ${e.message}`; }
});

function capabilities(forCompile) {
  const listed = $("#capabilities").value.split(",").map((x) => x.trim()).filter(Boolean);
  if (listed.length) return listed;
  return forCompile ? state.inspected?.capabilities || [] : undefined;
}

function fixtureOutput() {
  const text = $("#fixture-output").value.trim();
  $("#fixture-error").textContent = "";
  if (!text) return undefined;
  try { return JSON.parse(text); }
  catch (e) { $("#fixture-error").textContent = `Not valid JSON: ${e.message}`; throw e; }
}

// --- compile, run, copy as ------------------------------------------------------------------
$("#compile").addEventListener("click", async () => {
  const out = $("#compile-out");
  let given;
  try { given = values(); } catch (e) { fill(out, h("p", { class: "error" }, `The raw JSON is not valid: ${e.message}`)); return; }
  fill(out, h("p", { class: "muted" }, "Compiling…"));
  const { envelope } = await api.compile(state.package, state.contract, { render: given, capabilities: capabilities(true) });
  showCompiled(out, envelope);
});

const runner = new Runner(status);
$("#run").addEventListener("click", async () => {
  let body;
  try {
    const caps = capabilities(false);
    const output = fixtureOutput();
    body = { render: values(), stream: true };
    if (caps) body.capabilities = caps;
    if (output !== undefined) body.fixture_output = output;
  } catch { return; }
  await runner.run(state.package, state.contract, body);
});

function updateCopy() {
  if (!state.contract) return;
  try {
    const text = commands({ package: state.package, contract: state.contract, values: values(), capabilities: capabilities(false), fixtureOutput: fixtureOutput() });
    $("#copy-text").textContent = text[$("#copy-format").value];
  } catch {
    $("#copy-text").textContent = "Fix the values (or the fixture output) first.";
  }
}
$("#copy-format").addEventListener("change", updateCopy);
$("#fixture-output").addEventListener("input", debounce(updateCopy, 200));
$("#capabilities").addEventListener("input", debounce(updateCopy, 200));
$("#copy").addEventListener("click", async () => {
  updateCopy();
  try { await navigator.clipboard.writeText($("#copy-text").textContent); status("Copied."); }
  catch { getSelection().selectAllChildren($("#copy-text")); status("Selected: press Ctrl+C to copy."); }
});

// --- compare --------------------------------------------------------------------------------
function fillContracts(select, packageName, chosen) {
  const found = state.packages.find((p) => p.package === packageName);
  fill(select, (found?.contracts || []).map((c) => h("option", { value: c, selected: c === chosen }, c)));
}
$("#right-package").addEventListener("change", () => fillContracts($("#right-contract"), $("#right-package").value));
$("#compare").addEventListener("click", () =>
  compareContracts($("#compare-out"), { package: state.package, contract: state.contract }, { package: $("#right-package").value, contract: $("#right-contract").value }));
$("#compare-edit").addEventListener("click", () => compareEdit($("#compare-out"), state.saved, editor.text));

// --- evals ----------------------------------------------------------------------------------
const evals = new Evals(status);

// --- choosing a package and a contract --------------------------------------------------------
async function inspect(generation) {
  const { envelope } = await api.inspect(state.package, state.contract);
  if (generation !== state.generation) return;
  state.inspected = envelope.ok ? envelope.result : null;
  buildForm();
}

async function openContract(contract) {
  const generation = ++state.generation;
  state.contract = contract;
  location.hash = `${encodeURIComponent(state.package)}/${encodeURIComponent(contract)}`;
  sourceState("Loading…", "loading");
  const source = await api.source(state.package, contract);
  if (generation !== state.generation) return;
  if (source.text === undefined) {
    state.saved = "";
    state.token = null;
    editor.set("", source.envelope.diagnostics);
    sourceState("Cannot be read", "unreadable");
  } else {
    state.saved = source.text;
    state.token = source.token;
    editor.set(source.text);
    const checked = await api.validate(state.package, contract);
    if (generation !== state.generation) return;
    editor.showDiagnostics(checked.envelope.diagnostics);
    editor.reveal();
    const count = errors(checked.envelope).length;
    sourceState(count ? `Saved — ${count} error(s)` : "Saved — valid", "saved");
  }
  $("#save").disabled = true;
  $("#revert").disabled = true;
  state.inspected = null;
  // a contract that does not load has no form: inspect answers its diagnostics instead
  if (source.text !== undefined && !editor.diagnostics.some((d) => d.severity === "error")) await inspect(generation);
  else buildForm();
  fillContracts($("#right-contract"), $("#right-package").value, contract);
  updateCopy();
  status(`${state.package}/${contract}`);
}

async function openPackage(name, contract) {
  state.package = name;
  fillContracts($("#contract"), name, contract);
  $("#right-package").value = name;
  fillContracts($("#right-contract"), name);
  const chosen = $("#contract").value;
  await Promise.all([chosen ? openContract(chosen) : Promise.resolve(), evals.load(name)]);
}

$("#package").addEventListener("change", () => openPackage($("#package").value));
$("#contract").addEventListener("change", () => openContract($("#contract").value));

async function start() {
  status("Loading packages…");
  const { envelope } = await api.packages();
  if (!envelope.ok) {
    status(`The packages cannot be listed: ${envelope.diagnostics.map((d) => d.message).join("; ")}`);
    return;
  }
  state.packages = envelope.result;
  const names = state.packages.map((p) => p.package);
  fill($("#package"), names.map((n) => h("option", { value: n }, n)));
  fill($("#right-package"), names.map((n) => h("option", { value: n }, n)));
  if (!names.length) { status("No packages under the server's root."); return; }
  const [wantedPackage, wantedContract] = decodeURIComponent(location.hash.slice(1)).split("/");
  const chosen = names.includes(wantedPackage) ? wantedPackage : names[0];
  $("#package").value = chosen;
  await openPackage(chosen, wantedContract);
  document.body.dataset.ready = "true";
}

start().catch((error) => status(`The playground could not start: ${error.message}`));
