"""The contract playground, in a real headless Chromium (issue #30).

Every test drives the page as a person would — pick, type, click — against a real server
(see conftest.py), and fails on any console error or uncaught exception of the page.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from playwright.sync_api import expect

TOKEN = "playground-test-token"  # conftest.TOKEN
DELTAS = 18  # the deltas of scenarios/stream-vip
PLANTED_LINE = 25  # account-digest.yaml: `filters: [trim, upper]`
ASSET_BUDGET = 150_000  # bytes: every file the page loads, uncompressed


def wait_until(check: Callable[[], bool], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "the condition did not become true in time"
        time.sleep(0.02)


def open_playground(page: Any, url: str, where: str = "") -> None:
    page.goto(url + "/playground/" + where)
    expect(page.locator("body")).to_have_attribute("data-ready", "true")


@contextmanager
def planted(root: Path) -> Iterator[Path]:
    """account-digest.yaml with an unknown filter at line 25 (restored afterwards)."""
    digest = root / "welcome" / "contracts" / "account-digest.yaml"
    original = digest.read_text(encoding="utf-8")
    lines = original.split("\n")
    assert lines[PLANTED_LINE - 1].strip() == "filters: [trim, upper]"
    lines[PLANTED_LINE - 1] = lines[PLANTED_LINE - 1].replace("upper", "uper")
    digest.write_text("\n".join(lines), encoding="utf-8")
    try:
        yield digest
    finally:
        digest.write_text(original, encoding="utf-8")


def fill_onboarding_form(page: Any) -> None:
    page.fill("#f-inputs-customer-name", "Anouk de Vries")
    page.select_option("#f-inputs-customer-plan", label="business")
    page.fill("#f-inputs-customer-seats", "12")
    page.fill("#f-inputs-customer-start_date", "2026-09-01")
    page.fill("#f-inputs-customer-monthly_fee", "1249.5")
    for index, addon in enumerate(("SSO", "Audit-Log")):
        page.get_by_role("button", name="Add addons item").click()
        page.fill(f"#f-inputs-customer-addons-{index}", addon)
    page.fill("#f-context-locale", "nl-NL")
    page.check("#f-context-vip")


def test_the_home_page_links_to_the_playground(page: Any, server: Any) -> None:
    page.goto(server.url + "/")
    page.get_by_role("link", name="Contract playground").click()
    expect(page.locator("body")).to_have_attribute("data-ready", "true")
    expect(page).to_have_url(server.url + "/playground/#welcome/onboarding-summary")
    expect(page.get_by_role("combobox", name="Package")).to_have_value("welcome")
    expect(page.get_by_role("combobox", name="Contract", exact=True)).to_have_value(
        "onboarding-summary"
    )
    expect(page.locator("#source-state")).to_contain_text("valid")


def test_a_planted_diagnostic_shows_at_its_line_and_an_edit_fixes_it(
    page: Any, server: Any, console: Any, shots: Path
) -> None:
    with planted(server.root) as digest:
        open_playground(page, server.url)
        page.get_by_role("combobox", name="Package").select_option("welcome")
        page.get_by_role("combobox", name="Contract", exact=True).select_option("account-digest")
        gutter = page.locator(f'#gutter [data-line="{PLANTED_LINE}"]')
        expect(gutter).to_have_class("has-error")
        expect(page.locator("#gutter .has-error")).to_have_count(1)
        item = page.locator("#diagnostics li.diagnostic")
        expect(item).to_have_count(1)
        expect(item).to_have_attribute("data-code", "TQX_PARSE_UNKNOWN_FILTER")
        expect(item).to_contain_text(f"line {PLANTED_LINE}, column 25")
        expect(item).to_contain_text("Did you mean upper?")
        expect(item.locator(".help")).to_contain_text("Use a filter the message lists")
        underlined = page.locator("#highlight mark.diag.sev-error")
        expect(underlined).to_have_text("uper")
        expect(page.locator("#values-form")).to_contain_text("does not load")
        page.screenshot(path=str(shots / "playground-diagnostic.png"))

        # an edit is validated through the API as you type; nothing is written
        page.get_by_role("button", name="Use “upper”").click()
        expect(page.locator("#diagnostics")).to_contain_text("No problems.")
        expect(page.locator("#source-state")).to_contain_text("Edited, not saved — valid")
        assert "uper]" in digest.read_text(encoding="utf-8")

        # saving is explicit and uses the contract's CAS token
        page.get_by_role("button", name="Save", exact=True).click()
        expect(page.locator("#source-state")).to_have_text("Saved")
        assert "[trim, upper]" in digest.read_text(encoding="utf-8")

        # a contract changed behind the page's back is not overwritten
        digest.write_text(
            digest.read_text(encoding="utf-8").replace("0.3.0", "0.3.9"), encoding="utf-8"
        )
        page.locator("#source").press("End")
        page.locator("#source").type("\n# an edit")
        expect(page.locator("#save")).to_be_enabled()
        page.keyboard.press("Control+s")
        expect(page.locator("#source-state")).to_contain_text("changed on the server")
        assert "0.3.9" in digest.read_text(encoding="utf-8")
        assert "# an edit" not in digest.read_text(encoding="utf-8")
    # the API answers a contract that is not valid with 422 (validate) and a stale token 409
    assert console.http_statuses
    assert all(" 422 " in s or " 409 " in s for s in console.http_statuses), console.http_statuses


def test_the_form_compile_and_a_live_run(page: Any, server: Any, shots: Path) -> None:
    open_playground(page, server.url, "#welcome/onboarding-summary")
    expect(page.locator("#values-state")).to_contain_text("problem")  # required, empty
    expect(page.locator("#f-inputs-customer-name")).to_have_attribute("aria-invalid", "true")
    fill_onboarding_form(page)
    page.fill("#f-inputs-customer-seats", "0")
    expect(page.locator("#f-inputs-customer-seats")).to_have_attribute("aria-invalid", "true")
    expect(page.locator("#values-state")).to_contain_text("at least 1")
    page.fill("#f-inputs-customer-seats", "12")
    expect(page.locator("#values-state")).to_have_text("The values fit the contract's schemas.")

    # the raw JSON toggle shows the same values, and takes edits back to the form
    page.get_by_role("button", name="Raw JSON").click()
    raw = json.loads(page.locator("#raw-json").input_value())
    assert raw == {
        "inputs": {
            "customer": {
                "name": "Anouk de Vries",
                "plan": "business",
                "seats": 12,
                "start_date": "2026-09-01",
                "monthly_fee": 1249.5,
                "addons": ["SSO", "Audit-Log"],
            }
        },
        "context": {"locale": "nl-NL", "vip": True},
    }
    raw["inputs"]["customer"]["name"] = "  Anouk de Vries "
    page.fill("#raw-json", json.dumps(raw))
    page.get_by_role("button", name="Raw JSON").click()
    expect(page.locator("#f-inputs-customer-name")).to_have_value("  Anouk de Vries ")
    page.screenshot(path=str(shots / "playground-form.png"))

    page.get_by_role("tab", name="Compile").click()
    page.get_by_role("button", name="Compile", exact=True).click()
    out = page.locator("#compile-out")
    expect(out).to_contain_text("compiled_interaction")
    expect(out.locator("article.role-system h4")).to_have_text("system")
    expect(out.locator("article.role-user pre")).to_contain_text("Plan: BUSINESS for 12 seats")
    expect(out).to_contain_text("structured_output")
    page.screenshot(path=str(shots / "playground-compile.png"))

    page.get_by_role("tab", name="Run").click()
    page.evaluate(
        """() => {
        window.__states = [];
        const box = document.querySelector('#partial');
        new MutationObserver(() => {
          const done = !document.querySelector('#envelope-box').hidden;
          window.__states.push({ text: box.textContent, done });
        }).observe(box, { childList: true, subtree: true, characterData: true });
      }"""
    )
    page.get_by_role("button", name="Run", exact=True).click()
    expect(page.locator("#run-state")).to_have_attribute("data-state", "ok", timeout=15_000)
    states = page.evaluate("window.__states")
    intermediate = {s["text"] for s in states if not s["done"]}
    final = page.locator("#partial").text_content()
    assert len(intermediate - {final}) >= 3, states
    assert int(page.locator("#partial").get_attribute("data-states")) >= 3
    expect(page.locator("#deltas")).to_contain_text("Anouk de Vries start op 1 september")
    envelope = page.locator("#envelope")
    expect(envelope).to_contain_text("ok: true")
    expect(envelope).to_contain_text("request")
    expect(envelope).to_contain_text("UsageNot reported by the runtime.")  # the mock has none
    expect(envelope).to_contain_text("Runtime: templiqx-scripted-runtime")
    with page.expect_download() as download:
        page.get_by_role("button", name="Download envelope").click()
    saved = json.loads(Path(download.value.path()).read_text(encoding="utf-8"))
    assert saved["ok"] is True
    assert [e["kind"] for e in saved["stream_events"]] == ["Delta"] * DELTAS + ["Complete"]
    assert saved["result"]["output"]["tone"] == "warm"
    page.locator("summary", has_text="Copy as").click()
    expect(page.locator("#copy-text")).to_contain_text("curl -N -X POST")
    expect(page.locator("#copy-text")).to_contain_text("Accept: text/event-stream")
    page.select_option("#copy-format", "python")
    expect(page.locator("#copy-text")).to_contain_text("service.stream_contract(")
    page.select_option("#copy-format", "cli")
    expect(page.locator("#copy-text")).to_contain_text("execute 'welcome' 'onboarding-summary'")
    page.screenshot(path=str(shots / "playground-run.png"), full_page=True)


def test_values_are_saved_to_and_loaded_from_a_file(page: Any, server: Any) -> None:
    open_playground(page, server.url, "#welcome/onboarding-summary")
    page.get_by_role("combobox", name="Start from").select_option(label="eval starter-en")
    expect(page.locator("#f-inputs-customer-name")).to_have_value("Sam Lee")
    with page.expect_download() as download:
        page.get_by_role("button", name="Save to file").click()
    assert download.value.suggested_filename == "onboarding-summary-values.json"
    saved = json.loads(Path(download.value.path()).read_text(encoding="utf-8"))
    assert saved["inputs"]["customer"]["plan"] == "starter"
    assert saved["inputs"]["customer"]["addons"] == []
    assert saved["context"] == {"locale": "en-US", "vip": True}
    saved["inputs"]["customer"]["name"] = "Ada Lovelace"
    saved["inputs"]["customer"]["addons"] = ["SSO"]
    page.set_input_files(
        "#load-values",
        files=[
            {
                "name": "values.json",
                "mimeType": "application/json",
                "buffer": json.dumps(saved).encode(),
            }
        ],
    )
    expect(page.locator("#f-inputs-customer-name")).to_have_value("Ada Lovelace")
    expect(page.locator("#f-inputs-customer-addons-0")).to_have_value("SSO")
    expect(page.locator("#status")).to_have_text("Loaded values from values.json.")


def test_cancel_stops_the_model_call(page: Any, server: Any) -> None:
    open_playground(page, server.url, "#welcome/onboarding-summary")
    page.get_by_role("combobox", name="Start from").select_option(label="eval vip-business-nl")
    page.get_by_role("tab", name="Run").click()
    before = len(server.runtime.stopped_early)
    page.get_by_role("button", name="Run", exact=True).click()
    expect(page.locator("#partial")).to_have_attribute("data-states", "2")
    page.get_by_role("button", name="Cancel").click()
    failure = page.locator("#failure")
    expect(failure).to_be_visible()
    expect(failure).to_have_attribute("data-code", "TQX_RUNTIME_CANCELLED")
    expect(failure).to_contain_text("TQX_RUNTIME_CANCELLED")
    expect(page.locator("#run-state")).to_have_attribute("data-state", "cancelled")
    # the server stopped the runtime's stream before its end: the model call was cancelled
    wait_until(lambda: len(server.runtime.stopped_early) > before)
    assert server.runtime.stopped_early[-1] < DELTAS
    expect(page.locator("#envelope-box")).to_be_hidden()
    expect(page.get_by_role("button", name="Run", exact=True)).to_be_enabled()


def test_evals_run_with_expected_against_actual(page: Any, server: Any, shots: Path) -> None:
    open_playground(page, server.url, "#welcome/onboarding-summary")
    page.get_by_role("tab", name="Evals").click()
    expect(page.locator("#evals tr")).to_have_count(3)
    page.get_by_role("button", name="Run all").click()
    expect(page.locator("#evals-state")).to_have_text("3 of 3 case(s) passed.", timeout=15_000)
    for case in ("onboarding-summary/vip-business-nl", "onboarding-summary/starter-en"):
        expect(page.locator(f'#evals tr[data-case="{case}"]')).to_have_attribute(
            "data-verdict", "pass"
        )
    page.get_by_role("button", name="Run onboarding-summary starter-en").click()
    detail = page.locator("#eval-detail")
    expect(detail).to_contain_text("Expected vs actual (templiqx-scripted-runtime")
    # the mock answers the scenario's output, not this case's: the diff names each difference
    expect(detail.locator(".diff-table tbody tr")).to_have_count(4)
    expect(detail.locator(".diff-table")).to_contain_text("/summary")
    expect(detail.locator(".diff-table")).to_contain_text("Sam Lee starts on October 15")
    page.screenshot(path=str(shots / "playground-evals.png"))


def test_compare_two_contracts_side_by_side(page: Any, server: Any) -> None:
    open_playground(page, server.url, "#welcome/onboarding-summary")
    page.get_by_role("tab", name="Compare").click()
    page.get_by_role("combobox", name="Other contract").select_option("account-digest")
    page.get_by_role("button", name="Compare", exact=True).click()
    out = page.locator("#compare-out")
    expect(out.locator("#compare-verdict")).to_have_text("The contracts differ.")
    expect(out.locator(".changes")).to_contain_text("output_schema")
    expect(out.locator(".side-by-side tr.changed").first).to_be_visible()
    page.get_by_role("combobox", name="Other contract").select_option("onboarding-summary")
    page.get_by_role("button", name="Compare", exact=True).click()
    expect(out.locator("#compare-verdict")).to_have_text("The contracts are equal.")


def test_phone_width_and_dark_mode(new_page: Any, server: Any, shots: Path) -> None:
    phone = new_page(viewport={"width": 390, "height": 844}, color_scheme="dark")
    open_playground(phone, server.url, "#welcome/onboarding-summary")
    expect(phone.locator("html")).to_have_attribute("data-theme", "dark")
    assert phone.evaluate("document.documentElement.scrollWidth") <= 390
    background = phone.evaluate("getComputedStyle(document.body).backgroundColor")
    assert background == "rgb(15, 18, 22)", background
    phone.screenshot(path=str(shots / "playground-phone-dark.png"))
    # the theme button switches to light, and keyboard alone reaches every view
    phone.get_by_role("button", name="Dark theme").click()
    expect(phone.locator("html")).to_have_attribute("data-theme", "light")
    phone.get_by_role("tab", name="Inputs").focus()
    phone.keyboard.press("ArrowRight")
    expect(phone.get_by_role("tab", name="Compile")).to_be_focused()
    expect(phone.locator("#panel-compile")).to_be_visible()
    phone.keyboard.press("End")
    expect(phone.locator("#panel-evals")).to_be_visible()


def test_every_control_is_labelled_and_the_page_is_small(page: Any, server: Any) -> None:
    sizes: list[int] = []
    page.on("response", lambda r: sizes.append(len(r.body())) if "/playground/" in r.url else None)
    open_playground(page, server.url, "#welcome/onboarding-summary")
    unlabelled = page.evaluate(
        """() => [...document.querySelectorAll('input, select, textarea, button')]
          .filter((e) => !e.closest('[hidden]') && e.type !== 'file')
          .filter((e) => !(e.labels && e.labels.length) && !e.getAttribute('aria-label')
                         && !e.getAttribute('aria-labelledby') && !(e.textContent || '').trim())
          .map((e) => e.outerHTML.slice(0, 80))"""
    )
    assert unlabelled == []
    loaded = page.evaluate(
        "performance.getEntriesByType('resource').filter((e) => e.name.includes('/playground/'))"
        ".map((e) => e.name.split('/playground/')[1])"
    )
    assert all(not name.startswith("http") for name in loaded)  # nothing from elsewhere
    assert 0 < sum(sizes) < ASSET_BUDGET, sum(sizes)


def test_a_token_is_asked_once_and_kept_in_memory(new_page: Any, token_server: Any) -> None:
    page = new_page(viewport={"width": 1280, "height": 800})
    page.goto(token_server.url + "/playground/")
    dialog = page.get_by_role("dialog", name="This server needs a token")
    expect(dialog).to_be_visible()
    page.get_by_role("textbox", name="Token").fill(TOKEN)
    page.get_by_role("button", name="Use this token").click()
    expect(page.locator("body")).to_have_attribute("data-ready", "true")
    expect(page.locator("#source-state")).to_contain_text("valid")
    page.get_by_role("tab", name="Evals").click()
    page.get_by_role("button", name="Run all").click()
    expect(page.locator("#evals-state")).to_have_text("3 of 3 case(s) passed.", timeout=15_000)
    expect(dialog).to_be_hidden()  # asked once
    stored = page.evaluate(
        "JSON.stringify([Object.entries(localStorage), Object.entries(sessionStorage),"
        " document.cookie])"
    )
    assert TOKEN not in stored
    page.reload()
    expect(dialog).to_be_visible()  # memory only: a new page asks again


def test_tool_calls_show_as_their_arguments_assemble(
    page: Any, tools_server: Any, shots: Path
) -> None:
    open_playground(page, tools_server.url, "#support-desk/support-triage")
    page.get_by_role("button", name="Raw JSON").click()
    values = {"inputs": {"customer_email": "ada@example.com", "message": "Charged twice."}}
    page.fill("#raw-json", json.dumps(values))
    page.get_by_role("tab", name="Run").click()
    page.fill("#fixture-output", "")
    page.evaluate(
        """() => {
        window.__tools = [];
        const box = document.querySelector('#tools');
        new MutationObserver(() => window.__tools.push(box.textContent))
          .observe(box, { childList: true, subtree: true, characterData: true });
      }"""
    )
    page.get_by_role("button", name="Run", exact=True).click()
    expect(page.locator("#run-state")).to_have_attribute("data-state", "ok", timeout=15_000)
    calls = page.locator("#tools > li")
    expect(calls).to_have_count(2)
    expect(calls.nth(0).locator(".tool-name")).to_have_text("lookup_account")
    expect(calls.nth(1).locator(".tool-name")).to_have_text("open_ticket")
    first = json.loads(calls.nth(0).locator(".args").text_content())
    assert first == {"email": "ada@example.com"}
    grown = page.evaluate("window.__tools")
    assert len(set(grown)) >= 5, grown  # the arguments arrived piece by piece
    page.locator("#panel-run").screenshot(path=str(shots / "playground-tools.png"))


def test_a_failed_run_shows_code_message_and_help(page: Any, failing_server: Any) -> None:
    open_playground(page, failing_server.url, "#welcome/onboarding-summary")
    page.get_by_role("combobox", name="Start from").select_option(label="eval vip-business-nl")
    page.get_by_role("tab", name="Run").click()
    page.get_by_role("button", name="Run", exact=True).click()
    failure = page.locator("#failure")
    expect(failure).to_have_attribute("data-code", "TQX_RUNTIME_RATE_LIMITED")
    expect(failure.locator(".message")).not_to_be_empty()
    expect(failure.locator(".help")).to_contain_text("Help:")
    expect(page.locator("#run-state")).to_have_attribute("data-state", "not-ok")
    expect(page.locator("#envelope")).to_contain_text("ok: false")
