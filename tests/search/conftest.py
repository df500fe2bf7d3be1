import os
import sys

import pytest

SAMPLES = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                       "samples")
if SAMPLES not in sys.path:
    sys.path.insert(0, SAMPLES)

HW = ["a100", "tpu-v5e"]


@pytest.fixture(scope="module")
def cm():
    import analyzer

    return analyzer.CostModel(HW)


def reference(model, hw=HW, **kw):
    import numpy as np

    import analyzer

    r = analyzer.analyze(model, hw=hw, **kw)
    return np.array([p.latency_s for p in r.predictions])
