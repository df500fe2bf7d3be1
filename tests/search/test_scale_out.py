"""Sharded over several local devices (a subprocess with 4 host devices), and the Dask recipe."""

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import analyzer

from conftest import HW, SAMPLES

import search_space as ss

ROOT = os.path.dirname(SAMPLES)


def _candidates():
    rng = np.random.default_rng(11)
    return [ss.random_transformer(rng, 30).SerializeToString() for _ in range(6)]


@pytest.mark.machine
def test_sharded_over_four_devices_matches_one(tmp_path):
    cands = _candidates()
    for i, c in enumerate(cands):
        (tmp_path / f"c{i}.onnx").write_bytes(c)
    ref = analyzer.CostModel(HW).score(cands)
    code = textwrap.dedent(f"""
        import glob, numpy as np, jax, analyzer
        from analyzer.search import batched_kernels as batch
        assert jax.local_device_count() == 4, jax.local_device_count()
        paths = sorted(glob.glob({str(tmp_path)!r} + "/c*.onnx"))
        lat = analyzer.CostModel({HW!r}).score(paths)
        np.save({str(tmp_path / "out.npy")!r}, lat)
        x = batch.shard(np.zeros((8, 4), np.float32), 4)
        assert len(x.sharding.device_set) == 4
    """)
    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=4",
               PYTHONPATH=ROOT, JAX_PLATFORMS="cpu")
    subprocess.run([sys.executable, "-c", code], check=True, env=env, cwd=ROOT, timeout=300)
    got = np.load(tmp_path / "out.npy")
    np.testing.assert_allclose(got, ref, rtol=1e-6)


def test_dask_recipe_returns_the_same_scores():
    distributed = pytest.importorskip("dask.distributed")
    from analyzer.search.distributed import score_on_cluster

    cm = analyzer.CostModel(HW)
    cands = _candidates()
    with distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=False,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        lat = score_on_cluster(client, cm, cands, chunk=2)
    np.testing.assert_allclose(lat, cm.score(cands), rtol=1e-12)
