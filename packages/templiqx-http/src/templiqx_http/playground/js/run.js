// A run: the execution streamed live (Server-Sent Events): deltas as they come, the partial
// answer growing in a tree, tool calls as their arguments assemble, Failed with its code,
// message and help, Cancel, and the final envelope (shown, and offered as a download).

import { $, h, fill, download, diagnosticItem, fingerprintList } from "./dom.js";
import { path, request } from "./api.js";
import { sseEvents, applyChanges } from "./stream.js";
import { JsonTree } from "./tree.js";

export const CANCELLED = "TQX_RUNTIME_CANCELLED";

export class Runner {
  constructor(setStatus) {
    this.setStatus = setStatus;
    this.tree = new JsonTree($("#partial"), "answer");
    this.controller = null;
    this.envelope = null;
    $("#cancel").addEventListener("click", () => this.cancel());
    $("#download").addEventListener("click", () => {
      if (this.envelope) download(`${this.envelope.operation}-envelope.json`, JSON.stringify(this.envelope, null, 2) + "\n");
    });
  }

  state(text, kind) {
    const node = $("#run-state");
    node.textContent = text;
    node.dataset.state = kind;
  }

  reset() {
    fill($("#deltas"));
    fill($("#tools"));
    $("#tools-box").hidden = true;
    $("#failure").hidden = true;
    $("#envelope-box").hidden = true;
    $("#download").disabled = true;
    this.envelope = null;
    this.tree.show(undefined);
  }

  failure(code, message, help) {
    const box = $("#failure");
    fill(box, h("h3", {}, "Failed"), h("p", {}, h("code", { class: "code" }, code)), h("p", { class: "message" }, message), help ? h("p", { class: "help" }, h("strong", {}, "Help: "), help) : null);
    box.dataset.code = code;
    box.hidden = false;
  }

  cancel() {
    if (this.controller) this.controller.abort();
  }

  async run(p, c, body) {
    this.reset();
    const controller = new AbortController();
    this.controller = controller;
    $("#run").disabled = true;
    $("#cancel").disabled = false;
    this.state("Starting…", "starting");
    const events = [];
    let answer;
    let partials = 0;
    let tool = null;
    try {
      const response = await request("POST", path("packages", p, "contracts", c, "execute"), {
        json: body,
        accept: "text/event-stream",
        signal: controller.signal,
      });
      if (!(response.headers.get("content-type") || "").startsWith("text/event-stream")) {
        // refused before any model call: an ordinary JSON answer
        this.finish(await response.json(), events);
        this.state(`Refused (${response.status})`, "refused");
        return;
      }
      this.state("Streaming…", "streaming");
      for await (const { event, data } of sseEvents(response)) {
        const payload = JSON.parse(data);
        if (event === "partial") {
          answer = applyChanges(answer, payload);
          partials += 1;
          this.tree.show(answer);
          $("#partial").dataset.states = String(partials);
        } else if (event === "envelope") {
          this.finish({ ...payload, stream_events: events }, events);
        } else {
          events.push(payload);
          if (event === "Delta") {
            $("#deltas").append(payload.text);
            tool = null;
          } else if (event === "ToolCallDelta") {
            if (!tool || tool.name !== payload.name) {
              tool = { name: payload.name, args: h("pre", { class: "args" }) };
              $("#tools").append(h("li", {}, h("code", { class: "tool-name" }, payload.name), tool.args));
              $("#tools-box").hidden = false;
            }
            tool.args.append(payload.arguments_fragment);
          } else if (event === "Failed") {
            this.failure(payload.code, payload.message);
          } else if (event === "Complete") {
            this.state("Model answered; checking…", "complete");
          }
        }
      }
      if (!this.envelope) this.state("The stream ended without its envelope", "broken");
    } catch (error) {
      if (controller.signal.aborted) {
        // Closing the stream is how the API cancels: the server cancels the model call.
        this.failure(CANCELLED, "You cancelled the run: the stream was closed, and the server cancelled the model call.", "Run again to start a new call.");
        this.state("Cancelled", "cancelled");
      } else {
        this.failure("TQX_HTTP_TRANSPORT", `The stream broke: ${error.message}`, "Check that the server is still running, then run again.");
        this.state("Broken", "broken");
      }
    } finally {
      this.controller = null;
      $("#run").disabled = false;
      $("#cancel").disabled = true;
    }
  }

  finish(envelope, events) {
    const ordered = { api_version: envelope.api_version, operation: envelope.operation, ok: envelope.ok };
    if ("result" in envelope) ordered.result = envelope.result;
    ordered.diagnostics = envelope.diagnostics;
    ordered.fingerprints = envelope.fingerprints;
    if (events.length) ordered.stream_events = events;
    if (envelope.usage) ordered.usage = envelope.usage;
    this.envelope = ordered;
    const failed = events.find((e) => e.kind === "Failed");
    const errors = envelope.diagnostics.filter((d) => d.severity === "error");
    if (failed) {
      const match = envelope.diagnostics.find((d) => d.code === failed.code);
      this.failure(failed.code, failed.message, match?.help);
    } else if (!envelope.ok && errors.length) {
      this.failure(errors[0].code, errors[0].message, errors[0].help);
    }
    if (envelope.result && envelope.result.output !== undefined) this.tree.show(envelope.result.output);
    const usage = envelope.usage;
    fill(
      $("#envelope"),
      h("p", { class: envelope.ok ? "ok" : "error" }, envelope.ok ? "ok: true — the answer passed every check." : "ok: false"),
      h("h4", {}, "Fingerprints"),
      fingerprintList(envelope.fingerprints),
      h("h4", {}, "Usage"),
      usage ? h("p", {}, `${usage.prompt_tokens} prompt + ${usage.completion_tokens} completion = ${usage.total_tokens} tokens`) : h("p", { class: "muted" }, "Not reported by the runtime."),
      h("h4", {}, "Diagnostics"),
      envelope.diagnostics.length ? h("ul", { class: "diagnostics" }, envelope.diagnostics.map((d) => diagnosticItem(d))) : h("p", { class: "muted" }, "None."),
      envelope.result?.adapter ? h("p", { class: "muted" }, `Runtime: ${envelope.result.adapter.id} ${envelope.result.adapter.version}`) : null,
    );
    $("#envelope-box").hidden = false;
    $("#download").disabled = false;
    this.state(envelope.ok ? "Done: ok" : "Done: not ok", envelope.ok ? "ok" : "not-ok");
    this.setStatus(envelope.ok ? "Run finished: ok." : "Run finished: not ok.");
  }
}
