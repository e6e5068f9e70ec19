"""``python -m templiqx_cli`` runs the ``templiqx`` command."""

import sys

from templiqx_cli.entry import main

sys.exit(main())
