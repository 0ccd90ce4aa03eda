#!/usr/bin/env python3
"""Regenerates the typed models and resources of the Python SDK from the OpenAPI document.

    npm run build --silent                       # builds @merx/contracts, the document's source
    python3 sdks/python/scripts/generate.py      # writes src/merx/{types,_resources,_operations}.py
    python3 sdks/python/scripts/generate.py --check   # fails (exit 1) if they are stale
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from generator.cli import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
