"""templiqx-http-server installed alone: ``--check``, then a real server on loopback."""

import http.client
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

SERVER = str(Path(sys.executable).parent / "templiqx-http-server")


def check(condition: bool, what: str) -> None:
    if not condition:
        raise SystemExit(f"smoke check failed: {what}")


shutil.copytree(Path(os.environ["SMOKE_FIXTURES"]) / "welcome", Path("packages") / "welcome")
checked = subprocess.run(
    [SERVER, "--check", "--root", "packages", "--addr", "127.0.0.1:0"],
    capture_output=True,
    text=True,
    timeout=60,
    check=False,
)
check(checked.returncode == 0, f"--check: {checked.stderr}")
server = subprocess.Popen(
    [SERVER, "--root", "packages", "--addr", "127.0.0.1:0"],
    stdout=subprocess.PIPE,
    stderr=subprocess.PIPE,
    text=True,
)
try:
    assert server.stdout is not None
    port = 0
    deadline = time.monotonic() + 60
    while not port and time.monotonic() < deadline:
        line = json.loads(server.stdout.readline())
        port = line.get("port", 0) if line.get("event") == "listening" else 0
    check(port > 0, "the server announced its port")
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    connection.request("POST", "/operations/v1/packages/welcome/validate")
    answer = connection.getresponse()
    envelope = json.loads(answer.read())
    check(answer.status == 200 and envelope["ok"], f"validate: {envelope}")
    connection.close()
    server.send_signal(signal.SIGTERM)
    check(server.wait(30) == 0, "a drained shutdown exits 0")
finally:
    if server.poll() is None:
        server.kill()
print("ok")
