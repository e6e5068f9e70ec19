"""``python -m templiqx_mcp [OPTIONS] [ROOT [WORKSPACE]]`` runs the stdio server."""

import sys

from templiqx_mcp.cli import main

sys.exit(main())
