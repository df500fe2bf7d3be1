"""The NCCL collective model (closed forms beside the arithmetic), its fitted constants file and
the node designs (GPUs, NVLink/NVLS, NICs per node)."""

import json
import os
import statistics
from dataclasses import replace

import pytest

import analyzer
from analyzer.errors import HardwareError
from analyzer.scaling import collectives as C
from analyzer.scaling import fabric as FB
from hardware_db import collectives, links

K = C.NcclConstants(base_s=8e-6, step_s={"LL": 1e-6, "LL128": 2e-6, "Simple": 5e-6},
                    eff={"LL": 0.25, "LL128": 0.5, "Simple": 0.8},
                    coll_eff={"all_reduce": 1.0, "all_gather": 0.8, "reduce_scatter": 0.8},
                    nvls_step_s=10e-6)
BW = 450e9   # nvlink4 per direction


def test_ring_allreduce_small_message_takes_ll():
    # n = 8: 2(n-1) = 14 steps, F = 2 * 7/8 = 1.75; 4096 B
    # LL:     8 + 14 * 1 us + 1.75 * 4096 / (450e9 * 0.25) s = 22 us + 0.06372 us = 22.0637 us
    # LL128:  8 + 28 + 0.0319 = 36.03 us;  Simple: 8 + 70 + ... = 78.02 us
    c = C.nccl("all_reduce", 4096, 8, BW, K)
    assert (c.algorithm, c.protocol) == ("ring", "LL")
    assert c.comm.latency_s == pytest.approx(22e-6)
    assert c.comm.bandwidth_s == pytest.approx(1.75 * 4096 / (BW * 0.25))
    assert c.comm.total == pytest.approx(22.0637e-6, rel=1e-5)


def test_large_message_takes_simple_then_nvls():
    nb = 256 * 2**20   # 268,435,456 B; ring moves 1.75 x = 469,762,048 B
    # Simple: 8 + 70 us + 469762048 / (450e9 * 0.8) = 78 us + 1304.89 us = 1382.89 us
    # LL128:  36 us + 469762048 / 225e9 = 2123.8 us
    c = C.nccl("all_reduce", nb, 8, BW, K)
    assert (c.algorithm, c.protocol) == ("ring", "Simple")
    assert c.comm.total == pytest.approx(78e-6 + 469762048 / 360e9)
    # NVLS at efficiency 0.5: rate 450e9 * 0.5 = 225e9 B/s
    # 8 + 2 * 10 us + 268435456 / 225e9 = 28 us + 1193.05 us = 1221.05 us
    v = C.nccl("all_reduce", nb, 8, BW, K, nvls_efficiency=0.5)
    assert v.algorithm == "nvls"
    assert v.comm.total == pytest.approx(28e-6 + nb / 225e9)
    # efficiency 1: the link, 28 us + 596.5 us; outside [0, 1] refused
    assert C.nccl("all_reduce", nb, 8, BW, K, nvls_efficiency=1.0).comm.total == pytest.approx(28e-6 + nb / BW)
    with pytest.raises(ValueError, match="NVLS efficiency"):
        C.nccl("all_reduce", nb, 8, BW, K, nvls_efficiency=1.2)
    # all-gather: n-1 = 7 steps, F = 7/8, collective factor 0.8: 8 + 35 us + 7/8 nb / (450e9 * 0.8 * 0.8)
    g = C.nccl("all_gather", nb, 8, BW, K, nvls_efficiency=0.5)
    assert (g.algorithm, g.protocol) == ("ring", "Simple")
    assert g.comm.total == pytest.approx(43e-6 + 7 / 8 * nb / (BW * 0.64))


def test_output_share_adds_per_output_byte():
    """w = 0.5: each rank's output adds 0.5 x its bytes at the candidate's rate (module docstring)."""
    kw = replace(K, out_share=0.5)
    nb = 256 * 2**20   # 268,435,456 B
    # all-reduce, 8 GPUs, output = nb: ring Simple 78 us + (1.75 + 0.5) nb / 360e9 = 78 + 1677.72 us;
    # NVLS (efficiency 0.5, 225e9 B/s) 28 us + (1 + 0.5) nb / 225e9 = 28 + 1789.57 us: the ring wins
    c = C.nccl("all_reduce", nb, 8, BW, kw, nvls_efficiency=0.5)
    assert (c.algorithm, c.protocol) == ("ring", "Simple")
    assert c.comm.bandwidth_s == pytest.approx(2.25 * nb / 360e9)
    assert c.comm.total * 1e6 == pytest.approx(78 + 1677.72, abs=0.01)
    # reduce-scatter, output nb / 8: 8 + 7 x 5 us + (7/8 + 0.5/8) nb / (450e9 x 0.8 x 0.8)
    #   = 43 us + 0.9375 x 268435456 / 288e9 = 43 + 873.81 us
    r = C.nccl("reduce_scatter", nb, 8, BW, kw)
    assert r.comm.total * 1e6 == pytest.approx(43 + 873.81, abs=0.01)
    # inside a node (a 1e10 B/s intra level, 4 devices per node): point-to-point of 1e9 B,
    # (1 + 0.5) x 1e9 / (1e10 x 0.8) = 0.1875 s, latency base 8 + Simple step 5 us
    f = FB.Fabric(inter=FB.Level(1e9, 0.0), intra=FB.Level(1e10, 0.0), per_node=4,
                  algorithm="nccl", constants=kw)
    assert f.p2p(1e9, False) == pytest.approx((0.1875, 13e-6))
    # all-to-all of 1e9 B over the node's 4 devices: 3/4 of it to peers + the 0.5 output share,
    # (0.75 + 0.5) x 1e9 / 8e9 = 0.15625 s; latency 3 x 5 us + 8 us
    assert f.all_to_all(1e9, 4) == pytest.approx((0.15625, 23e-6))
    with pytest.raises(ValueError, match="output share"):
        replace(K, out_share=-0.1)


def test_no_nvls_for_two_gpus():
    """NCCL sets NVLS up only for more than 2 GPUs (src/transport/nvls.cc): 2 GPUs run the ring."""
    assert not any(a == "nvls" for a, *_ in C.candidates("all_reduce", 2, nvls=True))
    assert any(a == "nvls" for a, *_ in C.candidates("all_reduce", 4, nvls=True))
    assert C.nccl("all_reduce", 2**28, 2, BW, K, nvls_efficiency=0.85).algorithm == "ring"


def test_protocol_switches_with_message_size():
    """LL -> LL128 -> Simple as the message grows (made-up constants above, and the shipped ones:
    never back to a lower-latency protocol once a higher-bandwidth one wins)."""
    order = {"LL": 0, "LL128": 1, "Simple": 2}
    for k in (K, C.constants_from(collectives.nccl())):
        seq = [C.nccl("all_reduce", 2**e, 8, BW, k).protocol for e in range(9, 31)]
        assert [order[p] for p in seq] == sorted(order[p] for p in seq)
        assert seq[-1] == "Simple"
    seq = [C.nccl("all_reduce", 2**e, 8, BW, K).protocol for e in range(9, 31)]
    assert {"LL", "LL128", "Simple"} <= set(seq)


def test_between_nodes_the_unfitted_forms_tree_wins_on_latency():
    """``network``: no fitted step, efficiency or output share between nodes. 64 nodes, 8 B,
    1e10 B/s, alpha 1 us: ring 2 x 63 = 126 steps = 126 us + 2 x 63/64 x 8 / 1e10 s; NCCL's tree
    2 x log2(64) = 12 steps = 12 us + 2 x 8 / 1e10 s = 12.0016 us; + base 8 us."""
    c = C.network("all_reduce", 8, 64, 1e10, 1e-6, base_s=8e-6)
    assert (c.algorithm, c.protocol) == ("tree", "unfitted")
    assert c.comm == pytest.approx((1.6e-9, 20e-6))
    # 1 GB: ring 2 x 63/64 x 1e9 / 1e10 = 0.196875 s + 126 us, tree 0.2 s + 12 us: the ring
    big = C.network("all_reduce", 1e9, 64, 1e10, 1e-6)
    assert big.algorithm == "ring" and big.comm == pytest.approx((0.196875, 126e-6))
    # all-gather over 4 nodes: (3/4) x 1e9 / 1e10 = 0.075 s, 3 x 1 us
    assert C.network("all_gather", 1e9, 4, 1e10, 1e-6).comm == pytest.approx((0.075, 3e-6))


def test_two_node_allreduce_fits_inside_and_not_between():
    """16 devices = 2 nodes of 8, NVLink inside (450e9 B/s), one 50e9 B/s NIC per device
    (alpha 1 us), constants K with w = 0.5; all-reduce of 2**30 = 1,073,741,824 B:

    reduce-scatter inside (fitted, base included), Simple: 8 + 7 x 5 us + (7/8 + 0.5/8) x
        2**30 / (450e9 x 0.8 x 0.8) = 43 us + 0.9375 x 2**30 / 288e9 = 43 + 3495.2533 us
    all-reduce of 2**30 / 8 = 134,217,728 B between the 2 nodes (unfitted), ring:
        2 x 1/2 x 134217728 / 50e9 = 2684.3546 us + 2 x 1 us  (the tree: 2 x that + 2 us)
    all-gather inside (fitted, no base), Simple: 7 x 5 us + (7/8 + 0.5) x 2**30 / 288e9
        = 35 + 5126.3723 us
    total = 43 + 3495.2533 + 2686.3546 + 35 + 5126.3723 = 11385.9802 us."""
    kw = replace(K, out_share=0.5)
    f = FB.Fabric(inter=FB.Level(50e9, 1e-6), intra=FB.Level(BW, 0.0), per_node=8, nics=8,
                  algorithm="nccl", constants=kw)
    t = f.allreduce(2**30, 16)
    assert t.total * 1e6 == pytest.approx(11385.9802, abs=1e-3)
    assert t.latency_s == pytest.approx(43e-6 + 2e-6 + 35e-6)
    # the fitted form between nodes would have charged the Simple efficiency, step and w there:
    # (1 + 0.5) x 134217728 / (50e9 x 0.8) + 2 x 5 us = 5033.16 + 10 us, not 2684.35 + 2 us
    fitted_net = C.nccl("all_reduce", 2**27, 2, 50e9, kw, base=False).comm.total * 1e6
    assert fitted_net == pytest.approx(5043.16, abs=0.01)
    # one device per node (all network): the unfitted ring + the per-call base once,
    # 2 x 1/2 x 2**30 / 50e9 = 21474.8365 us + 2 x 1 us + 8 us
    g = FB.Fabric(inter=FB.Level(50e9, 1e-6), algorithm="nccl", constants=kw)
    assert g.allreduce(2**30, 2).total * 1e6 == pytest.approx(21474.8365 + 10, abs=1e-3)
    # point-to-point and all-to-all between nodes: unfitted, + base: 1e9 / 50e9 = 0.02 s, 1 + 8 us;
    # all-to-all over 4 single-device nodes: 3/4 x 1e9 / 50e9 = 0.015 s, 3 x 1 + 8 us
    assert g.p2p(1e9, True) == pytest.approx((0.02, 9e-6))
    assert g.all_to_all(1e9, 4) == pytest.approx((0.015, 11e-6))


def test_shipped_constants_have_provenance_and_no_h100():
    d = collectives.nccl()
    p = d["provenance"]
    for key in collectives.PROVENANCE:
        assert p[key]
    assert "aic_nccl.csv" in p["data"] and "fit_collectives.py" in p["command"]
    assert not any("h100" in s for s in p["fitted_on_systems"])
    held = {r["held_out"] for r in d["leave_one_system_out"]}
    assert set(p["fitted_on_systems"]) <= held
    for r in d["leave_one_system_out"]:
        assert r["held_out"] not in r["fitted_on"] and r["rows"] > 0
    # the per-call base is the run's: one per fitted system, the shipped one their median
    by = p["base_us_by_system"]
    assert set(by) == set(p["fitted_on_systems"])
    assert d["base_us"] == pytest.approx(statistics.median(by.values()), abs=1e-3)
    for r in d["leave_one_system_out"]:
        assert r["run_base_us"] > 0 and r["run_base_mape_pct"] >= 0
    bad = json.loads(json.dumps(d))
    del bad["provenance"]["command"]
    with pytest.raises(HardwareError, match="command"):
        collectives.validate(bad)
    bad = json.loads(json.dumps(d))
    bad["protocols"]["LL"]["efficiency"] = 1.5
    with pytest.raises(HardwareError, match=r"LL\.efficiency"):
        collectives.validate(bad)
    bad = json.loads(json.dumps(d))
    del bad["output_share"]
    with pytest.raises(HardwareError, match="output_share"):
        collectives.validate(bad)


@pytest.mark.parametrize("node, coll, n, nbytes, measured_us", [
    # nccl-tests medians from ../shared/measurements/gpu/aic_nccl.csv (in the fit's sample)
    ("dgx-a100", "all_reduce", 8, 512 * 2**20, 4225.9),
    ("dgx-b200", "all_reduce", 8, 512 * 2**20, 1340.3),
    ("dgx-a100", "all_gather", 8, 4096, 14.6),
    ("dgx-b200", "all_reduce", 2, 4096, 10.0),
])
def test_shipped_constants_against_recorded_nccl_tests(node, coll, n, nbytes, measured_us):
    nd = links.get_node(node)
    k = C.constants_from(collectives.nccl())
    t = C.nccl(coll, nbytes, n, nd.ring_gbs(n)[0] * 1e9, k,
               nvls_efficiency=nd.nvls_efficiency or 0.0).comm.total
    assert t * 1e6 == pytest.approx(measured_us, rel=0.15)


def test_nodes_are_sourced():
    h = links.get_node("DGX-H100")
    assert (h.gpus, h.intra_link, h.nvls, h.nics, h.nic_link) == (8, "nvlink4", True, 8, "ib-ndr")
    assert h.nic_gbs == 400.0            # 8 x 50 GB/s (400 Gbit/s) per direction
    assert links.get_node("dgx-a100").nvls is False
    assert links.get_node("gb200-tray").nvlink_domain == 72
    for n in links.list_nodes():
        assert n.sources["gpus"]
        if n.nvls:
            assert n.sources["nvls"]
        if n.nics is not None:
            assert n.sources["nics"]
    with pytest.raises(HardwareError, match="dgx-h100"):
        links.get_node("dgx-z900")


def test_nvls_channels_and_efficiency_are_nccls():
    # NCCL src/transport/nvls.cc: 16 channels on Hopper, 24 on Blackwell inside one NVLink domain;
    # NCCL's cost model (src/graph/tuning.cc nvlsEfficiency): Hopper 0.85, Blackwell 0.74
    assert links.get_node("dgx-h200").nvls_channels == 16
    assert links.get_node("dgx-b200").nvls_channels == 24
    assert links.get_node("dgx-a100").nvls_channels is None
    assert links.get_node("dgx-h200").nvls_efficiency == 0.85
    assert links.get_node("gb200-tray").nvls_efficiency == 0.74
    for n in links.list_nodes():
        assert (n.nvls_channels is not None) == n.nvls == (n.nvls_efficiency is not None)
        if n.nvls:
            assert "nvls.cc" in n.sources["nvls_channels"]
            assert "nvlsEfficiency" in n.sources["nvls_efficiency"]
    with pytest.raises(HardwareError, match="nvls_efficiency"):
        links.Node("t", "test", 8, "nvlink4", True, True, 8, sources={"gpus": "test"},
                   nvls_channels=16, nvls_efficiency=1.5)


def test_ring_bandwidth_is_the_bottleneck_link():
    """PCIe: pairs under one switch at the x16 link (31.5 GB/s), a ring across switches through
    the host path; without peer-to-peer every hop through it; topology not on record: the link,
    flagged."""
    def node(**kw):
        return links.Node("t", "test", 8, "pcie4", False, False, 1, sources={"gpus": "test"}, **kw)
    sw = node(gpus_per_pcie_switch=2, p2p=True, host_path_gbs=12.0)
    assert sw.ring_gbs(2) == (31.5, True)
    assert sw.ring_gbs(4) == (12.0, True) and sw.ring_gbs(8) == (12.0, True)
    assert node(p2p=False, host_path_gbs=10.0).ring_gbs(2) == (10.0, True)
    assert node(p2p=False, host_path_gbs=50.0).ring_gbs(8) == (31.5, True)   # min(link, host path)
    assert node().ring_gbs(4) == (31.5, False)
    assert links.get_node("dgx-h200").ring_gbs(8) == (450.0, True)
    l40s = links.get_node("l40s-pcie-8")
    assert l40s.ring_gbs(8) == (31.5, False) and "not on record" in l40s.sources["topology"]
    with pytest.raises(HardwareError, match="host_path_gbs"):
        node(host_path_gbs=-1.0)
    with pytest.raises(HardwareError, match="nvls_channels"):
        links.Node("t", "test", 8, "nvlink4", True, True, 8, sources={"gpus": "test"})


def test_fabric_takes_the_rings_bottleneck_inside_a_node():
    # a PCIe node: pairs at 31.5e9 B/s, a ring of 4 crosses a 10e9 B/s host path
    # ring all-reduce of 1e9 B: 2 GPUs 2 * 1/2 * 1e9 / 31.5e9 = 31.746 ms; 4 GPUs 2 * 3/4 * 1e9 / 10e9 = 150 ms
    pcie = FB.Level(31.5e9, 0.0, ring=((4, 10e9),))
    f = FB.Fabric(inter=FB.Level(1e10, 0.0), intra=pcie, per_node=4)
    assert f.allreduce(1e9, 2).total == pytest.approx(1e9 / 31.5e9)
    assert f.allreduce(1e9, 4).total == pytest.approx(0.15)
    assert f.allgather(1e9, 4).total == pytest.approx(3 / 4 * 1e9 / 10e9)


def test_one_nic_per_gpu_is_eight_times_the_network():
    """16 devices = 2 nodes of 8, ring, 1e9 B; between nodes an all-reduce of 1e9/8 B over 2 nodes:
    2 * 1/2 * 1.25e8 B / (1e10 B/s * nics / 8): 1 NIC 0.1 s, 8 NICs 0.0125 s."""
    fast, net = FB.Level(1e11, 0.0), FB.Level(1e10, 0.0)
    intra = 2 * 7 / 8 * 1e9 / 1e11          # reduce-scatter + all-gather inside the node
    one = FB.Fabric(inter=net, intra=fast, per_node=8).allreduce(1e9, 16).total
    eight = FB.Fabric(inter=net, intra=fast, per_node=8, nics=8).allreduce(1e9, 16).total
    assert one == pytest.approx(intra + 0.1)
    assert eight == pytest.approx(intra + 0.0125)


def test_scale_on_a_node_design():
    r = analyzer.scale("samples/mlp.onnx", "a100", [1, 8, 16], node="dgx-h100", batch=None,
                       inputs={"x": (64, 784)})
    s = r.scaling
    assert s.setup["per_node"] == 8 and s.setup["nics"] == 8 and s.setup["algorithm"] == "nccl"
    assert s.link == "ib-ndr"
    p8 = [p for p in s.points if p.devices == 8][0]
    assert p8.latency_s > 0      # NCCL's per-call cost is charged
    # 16 devices cross ib-ndr: the notes say which form prices the network
    assert any("between nodes none was fitted or scored" in n for n in s.notes)


def test_cli_lists_nodes():
    from click.testing import CliRunner
    from cli.main import main

    out = CliRunner().invoke(main, ["hw", "list", "--links", "--format", "json"])
    assert out.exit_code == 0
    nodes = [e for e in json.loads(out.output) if e["type"] == "node"]
    assert any(n["id"] == "dgx-h100" and n["nics"] == 8 for n in nodes)
    out = CliRunner().invoke(main, ["hw", "list", "--links"])
    assert out.exit_code == 0 and "8 x ib-ndr" in out.output


def test_seed002_crossover_with_the_nccl_default():
    """Seed 002's AlexNet (B=256, K80, FDR InfiniBand) with the default collective model: the
    crossover stays between 2 and 10 nodes (the tree variant is tests/scaling/test_training_scaling.py)."""
    import os

    import onnx

    alexnet = os.path.join(os.path.dirname(onnx.__file__), "backend/test/data/light",
                           "light_bvlc_alexnet.onnx")
    a = analyzer.scale(alexnet, "k80", [1, 2, 4, 8, 16, 32, 64], link="ib-fdr", batch=256).scaling
    assert a.setup["algorithm"] == "nccl"
    assert 2 <= a.crossover()["k80"] <= 10


def test_scaling_rows_in_csv_are_the_json_rows():
    # --devices with CSV: one row per profile and device count, the JSON entries' values exactly
    import csv
    import io

    import analyzer
    from analyzer.render.formats import render

    path = os.path.join(os.path.dirname(__file__), "..", "..", "samples", "mlp.onnx")
    r = analyzer.scale(path, ["a100", "h100"], [1, 8])
    text = render(r, "csv")
    rows = list(csv.DictReader(line for line in io.StringIO(text) if not line.startswith("#")))
    want = r.to_dict()["scaling"]
    assert len(rows) == len(want) == 4
    for got, exp in zip(rows, want):
        assert got["hardware"] == exp["hardware"] and int(got["devices"]) == exp["devices"]
        assert float(got["step_s"]) == exp["step_s"]        # repr round-trips a float exactly
        assert (got["serial_fraction"] == "") == (exp["serial_fraction"] is None)
    assert "# parallel: data" in text
