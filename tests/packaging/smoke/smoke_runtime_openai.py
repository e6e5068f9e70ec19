"""templiqx-runtime-openai installed alone: the entry point and settings from the environment."""

import os
from importlib.metadata import entry_points

from templiqx_ports import PortError
from templiqx_runtime_openai import ADAPTER_ID, OpenAIRuntime


def check(condition: bool, what: str) -> None:
    if not condition:
        raise SystemExit(f"smoke check failed: {what}")


factories = {e.name: e for e in entry_points(group="templiqx.runtimes")}
check(set(factories) == {"openai"}, f"only the openai runtime is registered: {sorted(factories)}")
create = factories["openai"].load()
for name in ("MODEL_BASE_URL", "MODEL_API_KEY", "MODEL_ID", "MODEL_TIMEOUT_MS"):
    os.environ.pop(name, None)
for name in ("OPENAI_BASE_URL", "OPENAI_API_KEY"):
    os.environ.pop(name, None)
unconfigured = create()  # settings are read when a model is called, not by the factory
check(unconfigured.descriptor().id == ADAPTER_ID, "the descriptor needs no settings")
try:
    _ = unconfigured.settings
    raise SystemExit("smoke check failed: reading the settings must fail without them")
except PortError as error:
    check("MODEL_BASE_URL" in str(error), f"the error names the variable: {error}")
os.environ.update(
    MODEL_BASE_URL="http://127.0.0.1:9/v1", MODEL_API_KEY="sk-smoke", MODEL_ID="smoke-model"
)
runtime = create()
check(isinstance(runtime, OpenAIRuntime), "the factory builds the adapter")
check(runtime.descriptor().id == ADAPTER_ID, "the adapter id")
print("ok")
