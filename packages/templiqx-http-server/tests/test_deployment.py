"""The reference's deployment, as its Compose file and Helm chart configure the server.

Both set ``TEMPLIQX_HTTP_ADDR=0.0.0.0:8080``, ``TEMPLIQX_ROOT=/packages``,
``TEMPLIQX_WORKSPACE=/workspace`` and ``TEMPLIQX_RUNTIME_MODE=deterministic-fake``, probe
``/readyz`` and ``/healthz``, and (Compose) run ``templiqx-http-server --healthcheck`` inside
the container. Here that environment is refused as it stands — a public bind needs a token
(DECISIONS 28) — with one line that names the variable to add; with the token added it serves,
its probes answer as the reference's do and ``--healthcheck`` passes. (The tests never bind a
public address: the served run keeps the reference's environment and moves the bind to
loopback with ``--addr``, which wins over it.)
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

TOKEN = "deploy-token-5d1e"


def _compose_env(packages: Path, workspace: Path) -> dict[str, str]:
    return {
        "TEMPLIQX_HTTP_ADDR": "0.0.0.0:8080",
        "TEMPLIQX_ROOT": str(packages),
        "TEMPLIQX_WORKSPACE": str(workspace),
        "TEMPLIQX_RUNTIME_MODE": "deterministic-fake",
    }


def test_the_references_compose_environment_needs_only_a_token(
    harness: Any, packages: Path, tmp_path: Path
) -> None:
    env = _compose_env(packages, tmp_path / "workspace")
    refused = subprocess.run(
        [sys.executable, "-m", "templiqx_http_server"],
        capture_output=True,
        text=True,
        env=harness.clean_env(env),
        timeout=60,
        check=False,
    )
    assert refused.returncode == 1
    assert refused.stderr.count("\n") == 1, refused.stderr
    assert "TEMPLIQX_HTTP_TOKEN" in refused.stderr
    assert "--allow-unauthenticated" in refused.stderr

    env["TEMPLIQX_HTTP_TOKEN"] = TOKEN
    with harness.serving(env=env) as server:
        start = server.wait_for("start")
        assert start["root"] == str(packages)
        assert start["workspace"] == str(tmp_path / "workspace")
        assert (start["runtime_mode"], start["readiness_class"]) == (
            "deterministic-fake",
            "local-demo-deterministic-fake",
        )
        assert start["auth"] == "bearer"
        for path, body in (
            ("/readyz", {"status": "ready", "api_version": "templiqx/v1alpha1"}),
            ("/healthz", {"status": "ok", "api_version": "templiqx/v1alpha1"}),
        ):
            status, _, raw = server.request("GET", path)  # probes carry no token
            assert (status, json.loads(raw)) == (200, body)
        probe = subprocess.run(
            [sys.executable, "-m", "templiqx_http_server", "--healthcheck"],
            capture_output=True,
            text=True,
            env=harness.clean_env({**env, "TEMPLIQX_HTTP_ADDR": f"0.0.0.0:{server.port}"}),
            timeout=60,
            check=False,
        )
        assert probe.returncode == 0, probe.stderr  # the container's probe reaches loopback
        validate = "/operations/v1/packages/welcome/validate"
        assert server.request("POST", validate)[0] == 401
        auth = {"Authorization": f"Bearer {TOKEN}"}
        status, _, raw = server.request("POST", validate, headers=auth)
        assert status == 200, raw
        assert json.loads(raw)["ok"] is True
    assert TOKEN not in "\n".join(server.stdout + server.stderr)
