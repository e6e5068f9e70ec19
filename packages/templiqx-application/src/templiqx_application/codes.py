"""Every diagnostic code the application emits or relays from a port, with a fix hint.

The table is the single source for the diagnostic reference in the documentation and for the
test that checks every code is produced somewhere. Codes emitted by the core (parse, validate,
compile) are relayed unchanged and documented by the core (``templiqx_core.CORE_CODES``).
Every envelope the service returns gives each diagnostic that has no ``help`` its code's hint
from these tables (:func:`fix_hint`), so every diagnostic says how to fix it.
"""

from __future__ import annotations

from templiqx_application.batch_codes import BATCH_CODES
from templiqx_core import CORE_CODES

__all__ = ["APPLICATION_CODES", "BATCH_CODES", "PORT_CODES", "fix_hint"]

APPLICATION_CODES: dict[str, str] = {
    # --- calling the service ---------------------------------------------------------------
    "TQX_UNKNOWN_OPERATION": "Call `catalog` for the operations this service offers.",
    "TQX_ARGUMENT_UNKNOWN": "Remove the argument; the catalog lists each operation's parameters.",
    "TQX_ARGUMENT_MISSING": "Pass the required argument named by the pointer.",
    "TQX_ARGUMENT_INVALID": "Pass a value of the parameter's catalog type (string, boolean, "
    "string list, JSON object or JSON value; numbers must be finite), at most "
    "MAX_ARGUMENT_BYTES (8 MiB) of JSON holding at most MAX_ARGUMENT_NODES (200,000) values and "
    "keys, nested at most MAX_ARGUMENT_DEPTH (256) levels.",
    "TQX_INTERNAL": "An unexpected error inside the service or an adapter; report it with the "
    "operation and arguments that caused it.",
    # --- packages --------------------------------------------------------------------------
    "TQX_PACKAGE_UPDATE_EMPTY": "Provide `version`, `description` or both.",
    "TQX_MANIFEST_VERSION_INVALID": "Use a Semantic Versioning 2.0 version such as 1.2.3.",
    "TQX_MANIFEST_API_VERSION": "Set `api_version: templiqx/v1alpha1` in templiqx.yaml.",
    "TQX_MANIFEST_PACKAGE": "Make `package:` in templiqx.yaml equal the package directory name.",
    "TQX_INVENTORY_DUPLICATE": "List each artifact path once across the manifest inventory.",
    "TQX_CONTRACT_INVENTORY_ID": "Make the contract's `id` equal its file name and inventory id.",
    "TQX_LOCK_INVALID": "Fix templiqx.lock: `dependencies: {name: {path, fingerprint}}`.",
    "TQX_LOCK_MISSING": "Add a templiqx.lock pinning every declared dependency.",
    "TQX_LOCK_DRIFT": "Make templiqx.lock and the manifest's `dependencies` pin the same "
    "packages with the same fingerprints.",
    "TQX_DEPENDENCY_ROOT_MISSING": "Place the dependency package beside this one under the "
    "same root.",
    # --- signatures ------------------------------------------------------------------------
    "TQX_PACKAGE_SIGNING_KEY_MISSING": "Set TEMPLIQX_PACKAGE_SIGNING_KEY in the environment of "
    "the process that signs.",
    "TQX_PACKAGE_UNSIGNED": "Sign the package with `sign_package` before strict publication.",
    "TQX_PACKAGE_SIGNATURE_ALGORITHM_UNSUPPORTED": "Re-sign with `sign_package` (algorithm "
    "sha256-keyed).",
    "TQX_PACKAGE_SIGNATURE_DUPLICATE": "Keep one signature per key id and algorithm.",
    "TQX_PACKAGE_SIGNATURE_UNVERIFIED": "Set TEMPLIQX_PACKAGE_SIGNING_KEY to verify signatures.",
    "TQX_PACKAGE_SIGNATURE_INVALID": "The package changed after signing, or the key differs: "
    "re-sign with `sign_package`.",
    "TQX_PACKAGE_FILE_UNLISTED": "List the file in the manifest (partials under `components`) "
    "and sign the package again, or stop including it; strict mode refuses files no "
    "signature covers.",
    "TQX_PACKAGE_DEPENDENCY_UNPINNED": "Pin the dependency under `dependencies` (and in "
    "templiqx.lock) at its current identity fingerprint and sign again.",
    # --- loading contracts -----------------------------------------------------------------
    "TQX_INCLUDE_CYCLE": "Break the cycle: a partial must not include itself, directly or not.",
    "TQX_INCLUDE_UNRESOLVED": "Point the include at an existing, package-relative file "
    "(no `..`, no symlinks) in an existing package.",
    "TQX_INCLUDE_INVALID": "Make the partial a YAML list of content nodes.",
    "TQX_TRANSLATION_INVALID": "Make translations/<locale>.yaml a flat map of keys to strings.",
    # --- execution and evals ---------------------------------------------------------------
    "TQX_RUNTIME_CAPABILITY_UNSUPPORTED": "Compose a runtime that offers the capability, or "
    "remove it from the contract.",
    "TQX_OUTPUT_SCHEMA": "The runtime output does not satisfy the contract's output_schema; "
    "fix the fixture output or the schema.",
    "TQX_TEST_FAILED": "Inspect each failed case's diagnostics.",
    "TQX_STREAM_SINK_FAILED": "The code consuming the stream (a sink or a loop body) raised; "
    "it got no further events and the runtime call was cancelled. Fix that code.",
    "TQX_STREAM_EVENTS_TRUNCATED": "The stream was longer than the service keeps: the envelope "
    "holds its first events and the terminal one, the receipt is whole. Raise the service's "
    "stream_limits to keep more.",
    "TQX_SERIALIZE": "A value cannot be written as canonical JSON (NaN, infinity or an "
    "integer outside the 64-bit range).",
    # --- authorized merge context ----------------------------------------------------------
    "TQX_AUTHORIZED_CONTEXT_REQUIREMENT_INVALID": "Set provenance.requires_authorized_context "
    "to the string 'true' or 'false'.",
    "TQX_AUTHORIZED_CONTEXT_MISSING": "Pass the host-issued context in "
    "context._templiqx_authorized_merge.",
    "TQX_AUTHORIZED_CONTEXT_INVALID": "Pass the seven string fields with RFC 3339 timestamps, "
    "issued before now and before expiry.",
    "TQX_AUTHORIZED_CONTEXT_REDACTED": "Pass a non-blank scope_id.",
    "TQX_AUTHORIZED_CONTEXT_EXPIRED": "Obtain a fresh authorized context from the host.",
    "TQX_AUTHORIZED_CONTEXT_MISMATCH": "The fingerprint must be the host's signature (HMAC-SHA256 "
    "under TEMPLIQX_AUTHORIZATION_KEY) of the six other fields; obtain the context from the "
    "host unchanged.",
    "TQX_AUTHORIZED_CONTEXT_UNVERIFIED": "Set TEMPLIQX_AUTHORIZATION_KEY on the host that serves "
    "the package, and issue contexts signed with it (sign_authorized_context).",
    "TQX_CONTEXT_RESERVED": "Remove the `_templiqx_*` key from the context: templiqx fills those "
    "itself (translation bundles from the package); only `_templiqx_authorized_merge`, signed "
    "by the host, comes from a caller.",
}

PORT_CODES: dict[str, str] = {
    "TQX_NOT_FOUND": "Check the package, contract, fixture or artifact name.",
    "TQX_CAS_CONFLICT": "Read the current fingerprint again and retry with it.",
    "TQX_BUSY": "Another writer held the package's or workspace's lock past the wait limit; "
    "retry in a moment.",
    "TQX_PATH_INVALID": "Use a package-relative path with `/` separators, no `..`, no "
    "backslash and no symlinks.",
    "TQX_UNSUPPORTED": "The composed adapter cannot do this.",
    "TQX_IO": "An operating-system I/O error; check permissions and disk space.",
    "TQX_DATA_INVALID": "Stored or supplied data does not decode; fix the named file or value.",
    "TQX_RUNTIME_TIMEOUT": "The model runtime timed out; retry later.",
    "TQX_RUNTIME_RATE_LIMITED": "The model runtime is rate limited; retry after retry_after_ms.",
    "TQX_RUNTIME_UNAVAILABLE": "The model runtime is unavailable; retry later.",
    "TQX_RUNTIME_INVALID_RESPONSE": "The model's response was unusable; do not retry unchanged.",
    "TQX_RUNTIME_PERMANENT": "The model runtime refused the request; do not retry unchanged.",
    "TQX_RUNTIME_CANCELLED": "The execution was cancelled by the caller.",
    "TQX_HOST_RETRY_EXHAUSTED": "The host gave up after retrying.",
}


def fix_hint(code: str) -> str | None:
    """The fix hint of any code the service can report (application, port or core), or
    ``None`` for a code nothing here knows (a third-party adapter's own)."""
    return (
        APPLICATION_CODES.get(code)
        or PORT_CODES.get(code)
        or CORE_CODES.get(code)
        or BATCH_CODES.get(code)
    )
