"""NCCL's own cost model for calls that span nodes (``collectives.across_nodes``; constants from
NCCL's src/graph/tuning.cc in hardware_db/collectives/nccl_tuning.json): the closed forms written
out, and the one-node path untouched by it."""

import math

import pytest

from analyzer.scaling import collectives as C
from analyzer.scaling import fabric as FB
from hardware_db import collectives

T = C.tuning_from(collectives.nccl_tuning())
GIB = float(1 << 30)
US = 1e-6


def test_two_node_ring_allreduce_one_gpu_each_is_nccls_formula():
    """2 nodes x 1 GPU, 400 Gbit/s NIC (50 GB/s): n = 2, steps 2(n-1) = 2, network steps
    min(2k, steps) = 2, no step inside a node. Simple: 8.4 + 2 x 14.0 us of latency and
    2(n-1)/n x S / B = S / B of bytes; the ring beats the tree (S / (0.92 B)) at 1 GiB."""
    b = 50e9
    got = C.across_nodes("all_reduce", GIB, 1, 2, b, 0.0, T)
    assert (got.algorithm, got.protocol) == ("ring", "Simple")
    assert got.comm.latency_s == pytest.approx((8.4 + 2 * 14.0) * US)
    assert got.comm.bandwidth_s == pytest.approx(GIB / b)


def test_two_node_ring_allreduce_eight_gpus_each_written_out():
    """2 nodes x 8 GPUs, 8 NICs of 50 GB/s (B = 400e9), NVLink 4 (V = 450e9): n = 16, 30 steps,
    4 over the network, 26 inside (each max(NVLink step, network overhead: 1 us, 3 us Simple))."""
    b, v = 400e9, 450e9
    ring = dict(C.ring_across_nodes("all_reduce", GIB, 8, 2, min(b, v), T, "nvlink"))
    f = 2 * 15 / 16
    assert ring["Simple"].latency_s == pytest.approx((8.4 + 26 * 3.4 + 4 * 14.0) * US)
    assert ring["LL"].latency_s == pytest.approx((6.6 + 26 * 1.0 + 4 * 2.7) * US)
    assert ring["LL128"].latency_s == pytest.approx((14.0 + 26 * 1.9 + 4 * 4.0) * US)
    assert ring["Simple"].bandwidth_s == pytest.approx(f * GIB / b)
    assert ring["LL"].bandwidth_s == pytest.approx(f * GIB / (b * 0.25))
    assert ring["LL128"].bandwidth_s == pytest.approx(f * GIB / (b * 0.92))


def test_two_node_allreduce_eight_gpus_takes_the_tree():
    """Same system: NCCL's tree between 2 nodes moves the message once each way per node
    (S / B, pipelined with the chain S / V inside), x 1/0.92; LL128 x 120/128, latency 14.0 +
    2 x (7 x 1.25 + 1 x 8.5) us. At 1 GiB it beats the ring's 2(n-1)/n x S / B and the tree's
    Simple (latency 2 x (7 + 1) x 28 us)."""
    b, v = 400e9, 450e9
    got = C.across_nodes("all_reduce", GIB, 8, 2, b, v, T)
    assert (got.algorithm, got.protocol) == ("tree", "LL128")
    assert got.comm.latency_s == pytest.approx((14.0 + 2 * (7 * 1.25 + 8.5)) * US)
    assert got.comm.bandwidth_s == pytest.approx(GIB / b / (0.92 * 120 / 128))
    ring = dict(C.ring_across_nodes("all_reduce", GIB, 8, 2, b, T, "nvlink"))
    assert got.comm.total < min(c.total for c in ring.values())


def test_tree_moves_twice_the_message_from_three_nodes_on():
    """k >= 3: a node is an interior with two children in one of the two trees (NCCL's ratio 0.5)."""
    b = 100e9
    two = dict(C.tree_across_nodes(GIB, 8, 2, b, 1e15, T, "nvlink"))["Simple"]
    three = dict(C.tree_across_nodes(GIB, 8, 3, b, 1e15, T, "nvlink"))["Simple"]
    assert three.bandwidth_s == pytest.approx(2 * two.bandwidth_s)
    assert three.latency_s == two.latency_s   # floor(log2 3) = floor(log2 2) = 1


def test_ring_is_limited_by_its_slowest_hop():
    """All-gather (ring only): bus bandwidth min(B, V); (n-1)/n x S over it; k - 1 network steps."""
    got = C.across_nodes("all_gather", 8 * GIB, 8, 2, 400e9, 300e9, T)
    assert got.algorithm == "ring"
    assert got.comm.bandwidth_s == pytest.approx(15 / 16 * 8 * GIB / 300e9)
    assert got.comm.latency_s == pytest.approx((8.4 + 14 * 3.4 + 1 * 14.0) * US)


def test_fabric_uses_it_only_across_nodes_and_only_when_the_constants_carry_it():
    k0 = C.constants_from(collectives.nccl())
    kt = C.constants_from(collectives.nccl(), collectives.nccl_tuning())
    net, nvl = FB.Level(50e9, 0.0, "posted"), FB.Level(450e9, 0.0, "nvlink4")
    f0 = FB.Fabric(net, nvl, per_node=8, algorithm="nccl", nics=8, constants=k0)
    ft = FB.Fabric(net, nvl, per_node=8, algorithm="nccl", nics=8, constants=kt)
    for kind in ("all_reduce", "all_gather", "reduce_scatter"):
        for nb in (512.0, 1e6, GIB):
            assert ft.collective(kind, nb, 8) == f0.collective(kind, nb, 8)   # one node: same
            want = C.across_nodes(kind, nb, 8, 2, 8 * 50e9, 450e9, kt.tuning).comm
            assert ft.collective(kind, nb, 16) == want
    assert k0.tuning is None and math.isclose(kt.tuning.base_s[("ring", "Simple")], 8.4e-6)


def test_pcie_nodes_take_nccls_pci_latencies():
    kt = C.constants_from(collectives.nccl(), collectives.nccl_tuning())
    f = FB.Fabric(FB.Level(25e9, 0.0), FB.Level(32e9, 0.0, "pcie4"), per_node=4, algorithm="nccl",
                  nics=1, constants=kt)
    want = C.across_nodes("all_gather", 1e6, 4, 2, 25e9, 32e9, kt.tuning, intra_hw="pci").comm
    assert f.allgather(1e6, 8) == want


def test_bad_arguments():
    with pytest.raises(ValueError):
        C.across_nodes("broadcast", 1.0, 8, 2, 1e9, 1e9, T)
    with pytest.raises(ValueError):
        C.across_nodes("all_reduce", 1.0, 8, 1, 1e9, 1e9, T)
