"""``python -m templiqx_http_server``: the same as the ``templiqx-http-server`` command."""

import sys

from templiqx_http_server.cli import main

sys.exit(main())
