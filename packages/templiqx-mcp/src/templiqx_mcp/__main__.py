"""``python -m templiqx_mcp [ROOT [WORKSPACE]]`` runs the stdio server."""

import sys

from templiqx_mcp.server import main

sys.exit(main())
