"""The bench tests import bench scripts as modules: ``bench/`` and ``bench/gpu/`` of this
checkout go on ``sys.path`` before any test module here is collected."""

from __future__ import annotations

import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
for folder in (os.path.join(ROOT, "bench", "gpu"), os.path.join(ROOT, "bench")):
    if folder not in sys.path:
        sys.path.insert(0, folder)
