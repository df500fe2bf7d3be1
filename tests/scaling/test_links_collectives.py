"""Links in the database and the collective formulas, against hand arithmetic."""


import pytest

import hardware_db
from analyzer.scaling import collectives as C
from analyzer.scaling import fabric as FB
from hardware_db import links


def test_every_brief_link_is_sourced():
    ids = {l.id for l in links.list_links()}
    want = {"ib-fdr", "ib-edr", "ib-hdr", "ib-ndr", "pcie3", "pcie4", "pcie5", "nvlink2", "nvlink3",
            "nvlink4", "nvlink5", "eth-10g", "eth-25g", "eth-100g", "ici-v4", "ici-v5e", "ici-v5p",
            "ici-v6e"}
    assert want <= ids
    for l in links.list_links():
        assert l.sources["gbs_per_direction"]
        if l.latency_us is not None:
            assert l.sources["latency_us"]


@pytest.mark.parametrize("lid, gbs", [
    ("ib-fdr", 6.82),     # 4 x 14.0625 Gbit/s x 64/66 / 8 = 6.818
    ("ib-edr", 12.5),     # 100 Gbit/s / 8
    ("pcie3", 15.75),     # 8 GT/s x 16 x 128/130 / 8 = 15.754
    ("nvlink4", 450.0),   # 18 x 25
    ("eth-10g", 1.25),
])
def test_link_bandwidths(lid, gbs):
    assert links.get(lid).gbs_per_direction == gbs
    assert links.get(lid.upper()).id == lid


def test_unknown_link_names_the_known_ones():
    with pytest.raises(Exception, match="ib-fdr"):
        links.get("ib-xdr")


def test_paper_profiles():
    k80 = hardware_db.get("k80")
    assert k80.vector_tflops["fp32"] == 4.37 and k80.mem_gb == 12.0   # half of 8.74 TF / 24 GB
    assert k80.mem_bw_gbs == 240.0                                       # half of 480 GB/s
    assert "GK210" in k80.name
    assert hardware_db.get("titanx-pascal").vector_tflops["fp32"] == 11.0
    knl = hardware_db.get("knl")
    assert knl.kind == "cpu" and knl.vector_tflops["fp64"] == 3.046      # 68 x 1.4 x 2 x 8 x 2


def test_ring_allreduce_terms_are_separate():
    # 2(N-1)/N * bytes/B + 2(N-1) * a, N=4, 1e9 B over 1e10 B/s, a = 5 us
    c = C.ring_allreduce(1e9, 4, 1e10, 5e-6)
    assert c.bandwidth_s == pytest.approx(2 * 3 / 4 * 0.1)   # 0.15 s
    assert c.latency_s == pytest.approx(6 * 5e-6)            # 30 us
    assert c.total == pytest.approx(0.15003)
    assert C.ring_allreduce(1e9, 1, 1e10, 5e-6).total == 0.0


def test_allgather_reduce_scatter_and_tree():
    assert C.ring_allgather(8e6, 8, 1e9, 1e-6).total == pytest.approx(7 / 8 * 8e-3 + 7e-6)
    assert C.ring_reduce_scatter(8e6, 8, 1e9).total == pytest.approx(7e-3)
    # tree: 2 * ceil(log2 5) = 6 levels of the whole message
    assert C.tree_allreduce(1e6, 5, 1e9, 1e-6).total == pytest.approx(6 * (1e-3 + 1e-6))


def test_two_level_fabric():
    fast, slow = FB.Level(1e11, 0.0), FB.Level(1e10, 0.0)
    fab = FB.Fabric(inter=slow, intra=fast, per_node=4)
    # inside a node: ring over the fast link
    assert fab.allreduce(1e9, 4).total == pytest.approx(2 * 3 / 4 * 1e9 / 1e11)
    # 8 = 4 x 2 nodes: RS(4) fast + AR(2 nodes, 1e9/4 bytes, 1e10/4 B/s) + AG(4) fast
    rs = 3 / 4 * 1e9 / 1e11
    ar = 2 * 1 / 2 * (1e9 / 4) / (1e10 / 4)
    assert fab.allreduce(1e9, 8).total == pytest.approx(2 * rs + ar)
    with pytest.raises(ValueError):
        fab.allreduce(1e9, 6)


def test_seed001_gradient_exchange():
    """Seed 001 (Dettmers 2014): a 1000x1000 fp32 matrix = 4e6 B over a 40 Gbit/s NIC is 0.75 ms
    (his arithmetic uses 1 Gbit = 1024^3 bit: 0.745 ms), over PCIe 3.0 about 0.25 ms
    (4e6 / 15.75e9 = 0.254 ms); six GPUs in two nodes: each sends to the 3 GPUs of the other node
    through the one NIC, 3 senders x 3 x 0.75 ms = 6.75 ms (his '7.75' is an arithmetic slip);
    four nodes: 9 x 0.75 x 3 = 20.25 ms."""
    nic = links.make(40 * 1024**3 / 8 / 1e9)          # 40 Gbit/s in his units
    one = C.point_to_point(4e6, nic.bytes_per_s).total
    assert one == pytest.approx(0.745e-3, rel=1e-3)
    assert C.point_to_point(4e6, links.get("pcie3").bytes_per_s).total == pytest.approx(0.254e-3, rel=1e-2)
    # parameter-server style exchange: every GPU sends its gradient to every GPU of other nodes,
    # one NIC per node serialises the node's 3 GPUs
    def exchange(nodes, per_node=3):
        remote = (nodes - 1) * per_node
        return per_node * remote * one
    assert exchange(2) == pytest.approx(6.75e-3, rel=1e-2)
    assert exchange(4) == pytest.approx(20.25e-3, rel=1e-2)


@pytest.mark.parametrize("lid, us, adapter", [
    ("ib-fdr", 1.0, "ConnectX-3"),   # 'sub-microsecond'
    ("ib-edr", 0.6, "ConnectX-5"),   # 'sub-600ns'
    ("ib-hdr", 0.6, "ConnectX-6"),   # 'sub-600ns'
])
def test_infiniband_latencies_are_sourced(lid, us, adapter):
    l = links.get(lid)
    assert l.latency_us == us and adapter in l.sources["latency_us"]


@pytest.mark.parametrize("lid", ["ib-ndr", "eth-10g", "eth-25g", "eth-100g"])
def test_links_without_a_latency_say_why(lid):
    l = links.get(lid)
    assert l.latency_us is None and l.latency_s == 0.0
    assert l.sources["latency_not_on_record"]


def test_small_allreduce_over_four_hdr_nodes_is_latency_plus_bandwidth():
    """4 nodes, one device each, over ib-hdr (25e9 B/s per direction, 0.6 us per message),
    all-reduce of 4096 B:

    ring (closed form): bandwidth 2 x 3/4 x 4096 / 25e9 = 0.24576 us
                        latency   2 x 3 x 0.6 us       = 3.6 us      total 3.84576 us
    NCCL model between nodes: the less of that ring and the tree
                        2 x 4096 / 25e9 = 0.32768 us + 2 x ceil(log2 4) x 0.6 = 2.4 us,
                        total 2.72768 us (the tree), plus the per-call base once."""
    from analyzer.scaling import curve

    ring = curve.fabric("ib-hdr", algorithm="ring").allreduce(4096, 4)
    assert ring.bandwidth_s * 1e6 == pytest.approx(0.24576)
    assert ring.latency_s * 1e6 == pytest.approx(3.6)
    assert ring.total * 1e6 == pytest.approx(3.84576)
    f = curve.fabric("ib-hdr")          # the default: NCCL's model
    t = f.allreduce(4096, 4)
    assert t.bandwidth_s * 1e6 == pytest.approx(0.32768)
    assert t.latency_s * 1e6 == pytest.approx(2.4 + f.constants.base_s * 1e6)
    # the same message over ib-ndr, which has no latency on record, pays the bytes only
    assert curve.fabric("ib-ndr", algorithm="ring").allreduce(4096, 4).latency_s == 0.0


def test_scaling_notes_give_the_network_latency_and_its_source():
    import os

    import analyzer

    path = os.path.join(os.path.dirname(__file__), "..", "..", "samples", "mlp.onnx")
    notes = analyzer.scale(path, "a100", [1, 2], link="ib-hdr").scaling.notes
    note = [n for n in notes if n.startswith("ib-hdr: 0.6 µs per message")]
    assert note and "ConnectX-6" in note[0] and "2(k-1) steps" in note[0]
    notes = analyzer.scale(path, "a100", [1, 2], link="ib-ndr").scaling.notes
    assert "ib-ndr: no per-message latency on record (charged 0)" in notes
