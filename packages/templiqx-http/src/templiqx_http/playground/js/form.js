// A form generated from a contract's inputs and context (each a JSON Schema): strings,
// numbers, integers, booleans, enums, required members, nested objects, arrays and formats
// (date, date-time, email, uri), checked as you type. What the form cannot represent (a
// schema with oneOf, say) is edited as JSON in place.

import { h } from "./dom.js";

let counter = 0;

const typeOf = (schema) => {
  if (!schema || typeof schema !== "object") return "json";
  if (Array.isArray(schema.enum)) return "enum";
  const type = Array.isArray(schema.type) ? schema.type.filter((t) => t !== "null")[0] : schema.type;
  if (["object", "array", "string", "integer", "number", "boolean"].includes(type)) return type;
  if (!type && schema.properties) return "object";
  return "json";
};

function fieldId(path) {
  return "f-" + path.map((p) => String(p).replace(/[^A-Za-z0-9_-]/g, "_")).join("-");
}

/** A parameter group ({name: {schema, required, description}}) as one object schema. */
export function groupSchema(parameters) {
  const properties = {};
  const required = [];
  for (const [name, parameter] of Object.entries(parameters || {})) {
    properties[name] = { ...parameter.schema, description: parameter.description ?? parameter.schema?.description };
    if (parameter.required) required.push(name);
  }
  return { type: "object", properties, required };
}

/** A control for `schema` at `path`: {element, get(), set(value), problems()}. */
export function control(schema, path, { label, required, onChange }) {
  const kind = typeOf(schema);
  const id = fieldId(path) + (path.length ? "" : `-${++counter}`);
  const hint = schema?.description ? h("span", { class: "hint", id: `${id}-hint` }, schema.description) : null;
  const problem = h("span", { class: "field-error", id: `${id}-error`, role: "alert" });
  const labelNode = h("label", { for: id }, label, required ? h("span", { class: "req", "aria-hidden": "true" }, " *") : null);
  const describedBy = [hint && `${id}-hint`, `${id}-error`].filter(Boolean).join(" ");

  if (kind === "object") return objectControl(schema, path, { label, required, onChange, hint });
  if (kind === "array") return arrayControl(schema, path, { label, required, onChange, hint });

  let input;
  if (kind === "enum") {
    input = h("select", { id, "aria-describedby": describedBy, "aria-required": required ? "true" : null },
      h("option", { value: "" }, required ? "— choose —" : "— none —"),
      schema.enum.map((v, i) => h("option", { value: String(i) }, typeof v === "string" ? v : JSON.stringify(v))));
  } else if (kind === "boolean") {
    input = required
      ? h("input", { id, type: "checkbox", "aria-describedby": describedBy })
      : h("select", { id, "aria-describedby": describedBy }, h("option", { value: "" }, "— none —"), h("option", { value: "true" }, "true"), h("option", { value: "false" }, "false"));
  } else if (kind === "json") {
    input = h("textarea", { id, rows: 3, spellcheck: "false", "aria-describedby": describedBy, placeholder: "any JSON value" });
  } else {
    const formats = { date: "date", email: "email", uri: "url" };
    const type = kind === "string" ? formats[schema.format] || "text" : "number";
    input = h("input", {
      id, type, "aria-describedby": describedBy, "aria-required": required ? "true" : null,
      step: kind === "integer" ? "1" : kind === "number" ? "any" : null,
      autocomplete: "off", spellcheck: "false",
      placeholder: schema.format === "date-time" ? "2026-09-01T09:00:00Z" : null,
    });
  }
  const read = () => {
    if (kind === "enum") return input.value === "" ? undefined : schema.enum[Number(input.value)];
    if (kind === "boolean") return required ? input.checked : input.value === "" ? undefined : input.value === "true";
    const raw = input.value;
    if (raw === "") return undefined;
    if (kind === "json") { try { return JSON.parse(raw); } catch { return { invalidJson: raw }; } }
    if (kind === "integer" || kind === "number") return input.validity.badInput ? NaN : Number(raw);
    return raw;
  };
  const problems = () => {
    const value = read();
    const found = check(schema, kind, value, required, input);
    problem.textContent = found || "";
    input.setAttribute("aria-invalid", found ? "true" : "false");
    return found ? [`${path.join(".")}: ${found}`] : [];
  };
  input.addEventListener("input", () => { problems(); onChange(); });
  input.addEventListener("change", () => { problems(); onChange(); });
  const element = h("div", { class: `field field-${kind}` }, kind === "boolean" && required ? [input, " ", labelNode] : [labelNode, input], hint, problem);
  return {
    element,
    get: read,
    set(value) {
      if (kind === "enum") { const i = schema.enum.findIndex((v) => JSON.stringify(v) === JSON.stringify(value)); input.value = i < 0 ? "" : String(i); }
      else if (kind === "boolean") { if (required) input.checked = value === true; else input.value = value === undefined ? "" : String(value); }
      else if (kind === "json") input.value = value === undefined ? "" : JSON.stringify(value, null, 2);
      else input.value = value === undefined || value === null ? "" : String(value);
      problem.textContent = "";
      input.removeAttribute("aria-invalid");
    },
    problems,
  };
}

function check(schema, kind, value, required, input) {
  if (value === undefined) return required ? "required" : null;
  if (kind === "json") return value && value.invalidJson !== undefined ? "not valid JSON" : null;
  if (kind === "integer" || kind === "number") {
    if (Number.isNaN(value)) return "not a number";
    if (kind === "integer" && !Number.isInteger(value)) return "must be a whole number";
    if (schema.minimum !== undefined && value < schema.minimum) return `at least ${schema.minimum}`;
    if (schema.maximum !== undefined && value > schema.maximum) return `at most ${schema.maximum}`;
    if (schema.exclusiveMinimum !== undefined && value <= schema.exclusiveMinimum) return `more than ${schema.exclusiveMinimum}`;
    if (schema.exclusiveMaximum !== undefined && value >= schema.exclusiveMaximum) return `less than ${schema.exclusiveMaximum}`;
  }
  if (kind === "string") {
    const length = [...value].length;
    if (schema.minLength !== undefined && length < schema.minLength) return schema.minLength === 1 ? "must not be empty" : `at least ${schema.minLength} characters`;
    if (schema.maxLength !== undefined && length > schema.maxLength) return `at most ${schema.maxLength} characters`;
    if (schema.pattern) { try { if (!new RegExp(schema.pattern, "u").test(value)) return `must match ${schema.pattern}`; } catch { /* a pattern JavaScript cannot read: the server checks it */ } }
    if (schema.format === "date" && !validDate(value)) return "a date, YYYY-MM-DD";
    if (schema.format === "date-time" && Number.isNaN(Date.parse(value))) return "a date and time, e.g. 2026-09-01T09:00:00Z";
    if ((schema.format === "email" || schema.format === "uri") && input && !input.validity.valid) return schema.format === "email" ? "an e-mail address" : "a URL";
  }
  return null;
}

function validDate(text) {
  const m = /^(\d{4})-(\d{2})-(\d{2})$/.exec(text);
  if (!m) return false;
  const date = new Date(Date.UTC(+m[1], +m[2] - 1, +m[3]));
  return date.getUTCFullYear() === +m[1] && date.getUTCMonth() === +m[2] - 1 && date.getUTCDate() === +m[3];
}

function objectControl(schema, path, { label, required, onChange, hint }) {
  const properties = schema.properties || {};
  const needed = new Set(schema.required || []);
  const children = Object.entries(properties).map(([name, child]) => [
    name,
    control(child, [...path, name], { label: name, required: needed.has(name), onChange }),
  ]);
  const legend = label ? h("legend", {}, label, required ? h("span", { class: "req", "aria-hidden": "true" }, " *") : null) : null;
  const element = h("fieldset", { class: "group" }, legend, hint, children.map(([, c]) => c.element));
  if (!children.length) element.append(h("p", { class: "muted" }, "No members."));
  return {
    element,
    get() {
      const value = {};
      for (const [name, child] of children) {
        const v = child.get();
        if (v !== undefined) value[name] = v;
      }
      return Object.keys(value).length || required || !path.length ? value : undefined;
    },
    set(value) {
      for (const [name, child] of children) child.set(value && typeof value === "object" ? value[name] : undefined);
    },
    problems: () => children.flatMap(([, c]) => c.problems()),
  };
}

function arrayControl(schema, path, { label, required, onChange, hint }) {
  const itemSchema = schema.items && !Array.isArray(schema.items) ? schema.items : {};
  const items = [];
  const list = h("ol", { class: "items" });
  const status = h("span", { class: "field-error", role: "alert" });
  const add = (value) => {
    const item = control(itemSchema, [...path, items.length], { label: `item ${items.length + 1}`, required: true, onChange });
    const row = h("li", {}, item.element);
    const remove = h("button", { type: "button", class: "small", "aria-label": `Remove ${label} item` }, "Remove");
    remove.addEventListener("click", () => {
      const at = items.indexOf(item);
      const values = items.map((x) => x.get());
      values.splice(at, 1);
      rebuild(values);
      onChange();
    });
    row.append(remove);
    list.append(row);
    items.push(item);
    if (value !== undefined) item.set(value);
  };
  const rebuild = (values) => {
    items.length = 0;
    list.replaceChildren();
    for (const v of values || []) add(v);
  };
  const adder = h("button", { type: "button", class: "small" }, `Add ${label} item`);
  adder.addEventListener("click", () => { add(); onChange(); items[items.length - 1].element.querySelector("input,select,textarea")?.focus(); });
  const element = h("fieldset", { class: "group array" }, h("legend", {}, label, required ? h("span", { class: "req", "aria-hidden": "true" }, " *") : null, h("span", { class: "muted" }, " (list)")), hint, list, adder, status);
  return {
    element,
    get() {
      const values = items.map((i) => i.get());
      return values.length || required ? values : undefined;
    },
    set(value) { rebuild(Array.isArray(value) ? value : []); },
    problems() {
      const found = items.flatMap((i) => i.problems());
      const count = items.length;
      let own = null;
      if (schema.minItems !== undefined && count < schema.minItems) own = `at least ${schema.minItems} item(s)`;
      if (schema.maxItems !== undefined && count > schema.maxItems) own = `at most ${schema.maxItems} item(s)`;
      status.textContent = own || "";
      return own ? [...found, `${path.join(".")}: ${own}`] : found;
    },
  };
}

/** The form of a contract: {element, get() -> {inputs, context}, set(values), problems()}. */
export function valuesForm(contract, onChange) {
  const inputs = control(groupSchema(contract.inputs), ["inputs"], { label: "Inputs", required: true, onChange });
  const context = control(groupSchema(contract.context), ["context"], { label: "Context", required: true, onChange });
  return {
    elements: [inputs.element, context.element],
    get: () => ({ inputs: inputs.get() || {}, context: context.get() || {} }),
    set(values) { inputs.set(values?.inputs || {}); context.set(values?.context || {}); },
    problems: () => [...inputs.problems(), ...context.problems()],
  };
}
