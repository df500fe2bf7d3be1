"""A JAX program that already runs over a device mesh (``shard_map`` over an AbstractMesh,
traced without devices): ``analyzer.scale(fn, hw, [N], args=...)`` and ``analyze
PROGRAM.py:fn --devices N`` with N the mesh's size. Each collective's bytes and time against the
collectives model's closed form written beside it; the per-device compute against the program's
own prediction."""

import csv
import io
import json

import pytest

import analyzer
from analyzer.errors import InputSpecError
from analyzer.scaling import fabric as FB
from hardware_db import links

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402
from jax.sharding import AbstractMesh, PartitionSpec as P  # noqa: E402

from samples import jax_mesh  # noqa: E402

S = jax.ShapeDtypeStruct
MESH = AbstractMesh((2, 4), ("data", "model"))


def psum_matmul(w, x):
    """x [32, 64] split by columns over ``model`` (4), w [64, 128] by rows: per device
    [32, 16] @ [16, 128], the partial [32, 128] psum'd over ``model``; replicated over ``data``."""
    return jax.shard_map(lambda w_, x_: jax.lax.psum(x_ @ w_, "model"), mesh=MESH,
                         in_specs=(P("model", None), P(None, "model")), out_specs=P())(w, x)


def gather_data(x):
    """x [32, 64] split by rows over ``data`` (2): each device all-gathers its [16, 64] over
    ``data``, then its row block over ``model`` too (a group of 4)."""
    def body(a):
        g = jax.lax.all_gather(a, "data", tiled=True)            # [32, 64] per device
        return jax.lax.all_gather(g, "model", axis=1, tiled=True)  # [32, 64] -> [32, 256]
    return jax.shard_map(body, mesh=MESH, in_specs=P("data", "model"), out_specs=P(),
                         check_vma=False)(x)


def shifted(x):
    """``ppermute`` of each device's [8, 64] block to the next along ``data``, then an
    ``all_to_all`` over ``model``."""
    def body(a):
        b = jax.lax.ppermute(a, "data", perm=[(0, 1), (1, 0)])
        return jax.lax.all_to_all(b, "model", 0, 1, tiled=True)
    return jax.shard_map(body, mesh=MESH, in_specs=P("data", "model"),
                         out_specs=P("data", "model"), check_vma=False)(x)


def _ib(lid="ib-hdr"):
    link = links.get(lid)
    return link.bytes_per_s, link.latency_s


def test_psum_over_an_axis_of_4_closed_form():
    args = (S((64, 128), jnp.float32), S((32, 64), jnp.float32))
    r = analyzer.scale(psum_matmul, "h100", [8], args=args, link="ib-hdr", algorithm="ring")
    d = r.to_dict()
    setup = d["scaling_setup"]
    assert setup["mesh"] == {"data": 2, "model": 4} and setup["devices"] == [8]
    (c,) = setup["collectives"]
    # the psum's operand per device: [32, 128] fp32 = 32 * 128 * 4 = 16384 bytes; group: model = 4
    assert (c["kind"], c["bytes"], c["group"], c["axes"]) == ("all_reduce", 16384, 4, ["model"])
    bw, alpha = _ib()
    # ring all-reduce, one device per node: 2(4-1)/4 * 16384 / bw + 2(4-1) * alpha
    t = 2 * 3 / 4 * 16384 / bw + 6 * alpha
    assert c["time_s"] == pytest.approx(t, rel=1e-12)
    (pt,) = r.scaling.points
    assert pt.devices == 8 and pt.communication_s == pytest.approx(t, rel=1e-12)
    assert pt.comm_kinds["all_reduce"] == pytest.approx(t, rel=1e-12)
    assert pt.comm_kinds["all_gather"] == 0.0 and pt.speedup is None
    # per device: [32, 16] @ [16, 128] = 2 * 32 * 16 * 128 = 131072 MAC FLOPs (not the global
    # 2 * 32 * 64 * 128)
    dot = next(n for n in r.nodes if n.op == "dot_general")
    assert dot.cost.mac_flops == 131072
    assert [s.shape for s in dot.in_specs] == [(32, 16), (16, 128)]
    # compute: the program's prediction less the psum row the one-device prediction prices as a
    # copy; step = compute + the all-reduce, serial
    pred = r.predictions[0]
    psum_row = next(x.time_s for x in pred.nodes if r.nodes[x.index].op == "psum_invariant")
    assert pt.compute_s == pytest.approx(pred.latency_s - psum_row, rel=1e-12)
    assert pt.step_s == pytest.approx(pt.compute_s + t, rel=1e-12)


def test_all_gather_groups_on_a_2x4_mesh_and_nodes():
    r = analyzer.scale(gather_data, "h100", [8], args=(S((32, 256), jnp.float32),),
                       link="ib-hdr", algorithm="ring", per_node=2, intra_link="nvlink4")
    a, b = r.to_dict()["scaling_setup"]["collectives"]
    # over data (2): the gathered output [32, 64] fp32 = 8192 B per device; over model (4):
    # [32, 256] = 32768 B
    assert (a["group"], a["bytes"], b["group"], b["bytes"]) == (2, 8192, 4, 32768)
    bw, alpha = _ib()
    nv = links.get("nvlink4")
    # devices row-major (model fastest), 2 per node: data's pair {0, 4} spans two nodes, one
    # device in each, each with half the node's NIC: (2-1)/2 * 8192 / (bw/2) + alpha
    assert a["group_per_node"] == 1
    assert a["time_s"] == pytest.approx(1 / 2 * 8192 / (bw / 2) + alpha, rel=1e-12)
    # model's 4 {0..3}: 2 per node, 2 nodes: all-gather of each device's 32768/2 share between
    # the nodes on its half NIC, then of the whole 32768 inside the node (nvlink4)
    between = 1 / 2 * 16384 / (bw / 2) + alpha
    inside = 1 / 2 * 32768 / nv.bytes_per_s + nv.latency_s
    assert b["group_per_node"] == 2
    assert b["time_s"] == pytest.approx(inside + between, rel=1e-12)
    (pt,) = r.scaling.points
    assert pt.comm_kinds["all_gather"] == pytest.approx(a["time_s"] + b["time_s"], rel=1e-12)


def test_ppermute_and_all_to_all():
    r = analyzer.scale(shifted, "h100", [8], args=(S((16, 256), jnp.float32),),
                       link="ib-hdr", algorithm="ring", per_node=4, intra_link="nvlink4")
    p, a = r.to_dict()["scaling_setup"]["collectives"]
    bw, alpha = _ib()
    nv = links.get("nvlink4")
    # per device [8, 64] fp32 = 2048 B; data's pairs are 4 devices apart: another node
    assert (p["kind"], p["bytes"], p["group"]) == ("p2p", 2048, 2)
    assert p["time_s"] == pytest.approx(2048 / bw + alpha, rel=1e-12)
    # all-to-all over model (4 devices, one node): (4-1)/4 * 2048 / nvlink + 3 * its latency
    assert (a["kind"], a["bytes"], a["group"]) == ("all_to_all", 2048, 4)
    assert a["time_s"] == pytest.approx(3 / 4 * 2048 / nv.bytes_per_s + 3 * nv.latency_s,
                                        rel=1e-12)


def test_two_level_all_to_all_closed_form():
    fast, slow = FB.Level(1e11, 1e-6), FB.Level(1e10, 5e-6)
    fab = FB.Fabric(inter=slow, intra=fast, per_node=4)
    # 8 = 4 x 2: 3/8 of the input to node peers over the fast link, 4/8 to the others over
    # the NIC shared by 4 (1e10/4 B/s): 3/8 * 1e6 / 1e11 + 3e-6 + 4/8 * 1e6 / 2.5e9 + 4 * 5e-6
    want = 3 / 8 * 1e6 / 1e11 + 3e-6 + 4 / 8 * 1e6 / 2.5e9 + 20e-6
    assert fab.all_to_all(1e6, 8).total == pytest.approx(want)
    assert fab.all_to_all(1e6, 1).total == 0.0


def test_device_counts_other_than_the_mesh_are_refused():
    args = (S((64, 128), jnp.float32), S((32, 64), jnp.float32))
    for devs in ([1, 8], [4]):
        with pytest.raises(InputSpecError, match=r"mesh of 8 devices .*only device count it "
                                                 r"runs on is 8; got " + ", ".join(map(str, devs))):
            analyzer.scale(psum_matmul, "h100", devs, args=args)
    with pytest.raises(InputSpecError, match="overlap do not apply"):
        analyzer.scale(psum_matmul, "h100", [8], args=args, overlap=True)


def _cli(*args):
    from click.testing import CliRunner

    from cli.main import main

    return CliRunner().invoke(main, [*args])


SAMPLE = ["samples/jax_mesh.py:row_parallel_matmul", "--input", "w=f32[256,512]",
          "--input", "x=f32[64,256]", "--hw", "h100"]


def test_cli_mesh_program_json_csv_and_mismatch():
    out = _cli(*SAMPLE, "--devices", "1,4")
    assert out.exit_code == 2, out.output
    assert "mesh of 4 devices" in out.output and "got 1, 4" in out.output
    assert "--devices 4" in out.output
    out = _cli(*SAMPLE, "--devices", "4", "--link", "ib-hdr", "--collective", "ring",
               "--format", "json")
    assert out.exit_code == 0, out.output
    d = json.loads(out.output)
    (c,) = d["scaling_setup"]["collectives"]
    # psum of the per-device [64, 512] fp32 output = 131072 B over model (4)
    assert (c["bytes"], c["group"], c["op"]) == (131072, 4, "psum_invariant")
    bw, alpha = _ib()
    assert d["scaling"][0]["comm_all_reduce_s"] == pytest.approx(
        2 * 3 / 4 * 131072 / bw + 6 * alpha, rel=1e-12)
    out = _cli(*SAMPLE, "--devices", "4", "--link", "ib-hdr", "--format", "csv")
    assert out.exit_code == 0, out.output
    rows = list(csv.DictReader(io.StringIO("\n".join(
        line for line in out.output.splitlines() if not line.startswith("#")))))
    assert [int(x["devices"]) for x in rows] == [4]
    assert float(rows[0]["comm_all_reduce_s"]) > 0 and rows[0]["speedup"] == ""
    out = _cli(*SAMPLE, "--devices", "4")
    assert out.exit_code == 0, out.output
    assert "all_reduce over model, 131,072 B, group 4" in out.output


def test_sample_mlp_runs_on_its_mesh():
    r = analyzer.scale(jax_mesh.tensor_parallel_mlp, "h100", [8],
                       args=(S((1024, 4096), jnp.float32), S((4096, 1024), jnp.float32),
                             S((64, 1024), jnp.float32)))
    kinds = [c["kind"] for c in r.to_dict()["scaling_setup"]["collectives"]]
    assert kinds == ["all_gather", "reduce_scatter"]
    # per device: [32, 1024] @ [1024, 1024] and [32, 1024] @ [1024, 1024]:
    # 2 * 2 * 32 * 1024 * 1024 = 134217728 MAC FLOPs
    assert r.totals.mac_flops == 134217728


def test_a_collective_in_a_loop_runs_once_per_trip():
    def loop(w, x):
        def step(c, _):
            return jax.shard_map(lambda w_, a: jax.lax.psum(a @ w_, "model"), mesh=MESH,
                                 in_specs=(P("model", None), P(None, "model")),
                                 out_specs=P())(w, c), None
        return jax.lax.scan(step, x, None, length=3)[0]

    r = analyzer.scale(loop, "h100", [8], args=(S((64, 64), jnp.float32),) * 2,
                       link="ib-hdr", algorithm="ring")
    (c,) = r.to_dict()["scaling_setup"]["collectives"]
    bw, alpha = _ib()
    # the [64, 64] fp32 partial (16384 B) all-reduced over model (4), 3 trips:
    # 3 * (2 * 3/4 * 16384 / bw + 6 * alpha)
    assert (c["runs"], c["bytes"], c["group"]) == (3, 16384, 4)
    assert c["time_s"] == pytest.approx(3 * (1.5 * 16384 / bw + 6 * alpha), rel=1e-12)
    assert r.scaling.points[0].collective_calls == 3


def test_a_collective_without_a_model_is_refused_by_name():
    def bcast(x):
        return jax.shard_map(lambda a: jax.lax.pbroadcast(a, ("model",), 0), mesh=MESH,
                             in_specs=P("data", "model"), out_specs=P("data", "model"),
                             check_vma=False)(x)

    with pytest.raises(InputSpecError, match=r"shard_map/pbroadcast \(pbroadcast\) is not "
                                             r"modelled"):
        analyzer.scale(bcast, "h100", [8], args=(S((16, 64), jnp.float32),))
