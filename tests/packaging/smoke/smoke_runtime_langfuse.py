"""templiqx-runtime-langfuse installed alone: the entry point and settings from the environment."""

import os
from importlib.metadata import entry_points

from templiqx_ports import PortError
from templiqx_runtime_langfuse import LangfuseRuntime


def check(condition: bool, what: str) -> None:
    if not condition:
        raise SystemExit(f"smoke check failed: {what}")


factories = {e.name: e for e in entry_points(group="templiqx.runtimes")}
check({"langfuse", "openai"} == set(factories), f"runtimes: {sorted(factories)}")
create = factories["langfuse"].load()
os.environ.update(
    MODEL_BASE_URL="http://127.0.0.1:9/v1", MODEL_API_KEY="sk-smoke", MODEL_ID="smoke-model"
)
for name in ("LANGFUSE_HOST", "LANGFUSE_PUBLIC_KEY", "LANGFUSE_SECRET_KEY"):
    os.environ.pop(name, None)
unconfigured = create()  # settings are read when a model is called, not by the factory
try:
    _ = unconfigured.langfuse_settings
    raise SystemExit("smoke check failed: reading the settings must fail without them")
except PortError as error:
    check("LANGFUSE_HOST" in str(error), f"the error names the variable: {error}")
os.environ.update(
    LANGFUSE_HOST="http://127.0.0.1:9",
    LANGFUSE_PUBLIC_KEY="pk-lf-smoke",
    LANGFUSE_SECRET_KEY="sk-lf-smoke",
)
check(isinstance(create(), LangfuseRuntime), "the factory builds the adapter")
print("ok")
