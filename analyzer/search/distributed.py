"""A large sweep spread over a Dask cluster: the candidates in chunks, one ``CostModel`` per
worker process (built on first use from the model's ``spec()``, then reused), the scores
gathered in order.

    from dask.distributed import Client
    from analyzer.search.distributed import score_on_cluster
    client = Client("tcp://scheduler:8786")          # or Client(LocalCluster(...))
    lat = score_on_cluster(client, cm, candidates, chunk=512)   # == cm.score(candidates)

Candidates travel to the workers as they are given: pass bytes or paths visible to every
worker (a shared file system) rather than ``ModelProto``s, which pickle larger.  Needs the
``distributed`` extra (``pip install 'opcost[distributed]'``).
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

_MODELS: dict[str, Any] = {}


def _score_chunk(spec: dict, chunk: Sequence[Any]) -> np.ndarray:
    import pickle

    from analyzer.search.cost_model import CostModel

    key = pickle.dumps(spec)
    cm = _MODELS.get(key)
    if cm is None:
        cm = _MODELS[key] = CostModel(**spec)
    return cm.score(chunk)


def score_on_cluster(client, cm, candidates: Sequence[Any], chunk: int = 256) -> np.ndarray:
    """``cm.score(candidates)`` computed on the workers of ``client`` (a
    ``dask.distributed.Client``), ``chunk`` candidates per task."""
    spec = cm.spec()
    chunks = [list(candidates[i:i + chunk]) for i in range(0, len(candidates), chunk)]
    if not chunks:
        return np.zeros((0, len(cm.hw)))
    spec_f = client.scatter(spec, broadcast=True)
    futures = [client.submit(_score_chunk, spec_f, c, pure=False) for c in chunks]
    return np.concatenate(client.gather(futures), axis=0)
