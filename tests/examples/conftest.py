"""The example bots import each other by module name, as when run from their folder."""

from __future__ import annotations

import sys
from pathlib import Path

BOTS = Path(__file__).resolve().parents[2] / "examples" / "host-bots"
sys.path.insert(0, str(BOTS))
