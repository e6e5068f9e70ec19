"""templiqx-http-server: the ``templiqx-http-server`` command (uvicorn) serving templiqx-http.

Configured as the reference's server is (``TEMPLIQX_HTTP_ADDR``, ``TEMPLIQX_ROOT``,
``TEMPLIQX_WORKSPACE``, ``TEMPLIQX_RUNTIME_MODE``), with flags for everything, ``--check``,
``--healthcheck``, safe defaults (loopback, token required elsewhere), JSON log lines and a
SIGTERM drain. See ``templiqx-http-server --help``.
"""

from templiqx_http_server.cli import main
from templiqx_http_server.config import ConfigError, ServerConfig

__version__ = "0.2.0"

__all__ = ["ConfigError", "ServerConfig", "__version__", "main"]
