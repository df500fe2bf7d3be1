"""XLA CPU's split of a loop fusion over the calibrated threads (``prediction.cpu.xla_partition``):
XLA's task-count rule in closed form, a split kernel's time, and the fit taking a split row as one
part's."""

from __future__ import annotations

import numpy as np
import pytest

from analyzer.prediction.cpu import xla_partition as xp
from analyzer.prediction.efficiency import kernel_time as eff

KIB = 1024


def test_io_bound_kernels_take_a_task_per_256_kib_up_to_the_square_root_of_the_threads():
    # an add of 65,536 fp32: 2 reads + 1 write = 786,432 B (3 x 256 KiB), 1 flop per 12 B
    assert xp.tasks(786_432, 65_536, 0, 2) == 2
    # 16,384 of them: 196,608 B, under one task's 256 KiB: not split
    assert xp.tasks(196_608, 16_384, 0, 2) == 1
    # a multiply-add of 16,384 fp32 (3 reads + 1 write): exactly 256 KiB, one task
    assert xp.tasks(262_144, 32_768, 0, 2) == 1
    assert xp.tasks(2 * 262_144, 0, 0, 2) == 2
    # I/O bound: at most ceil(sqrt(threads)) tasks: 2 of 4 threads, 3 of 8, however large
    assert xp.tasks(64 * 1024 * KIB, 0, 0, 4) == 2
    assert xp.tasks(64 * 1024 * KIB, 0, 0, 8) == 3
    # one thread: never split
    assert xp.tasks(64 * 1024 * KIB, 0, 0, 1) == 1


def test_compute_bound_kernels_take_a_task_per_100k_cost_units_up_to_the_threads():
    # a GELU of 16,384 fp32 through erfc: 4 + 60 flops an element (EXPANDED_FLOPS), 196,608 B:
    # 1,048,576 flops / 196,608 B > 1: cost = 1,048,576 + 2 x 0 + 10 x 196,608 = 3,014,656,
    # // 100,000 = 30 tasks, capped at the threads
    flops = 16_384 * (4 + xp.EXPANDED_FLOPS["erfc"])
    assert flops / 196_608 > 1
    assert xp.tasks(196_608, flops, 0, 2) == 2
    assert xp.tasks(196_608, flops, 0, 8) == 8
    assert xp.tasks(196_608, flops, 0, 64) == 30
    # 1,024 of them: cost 188,416 // 100,000 = 1
    assert xp.tasks(12_288, 1_024 * 64, 0, 2) == 1


def _consts(e_bw=0.5, floor=1e-6):
    arrays = {p: np.zeros(len(eff.OP_CLASSES)) for p in eff.CLASS_PARAMS}
    arrays["e_compute"][:] = 1.0
    arrays["e_bw"][:] = e_bw
    arrays["floor_s"][:] = floor
    arrays["trans_weight"] = 1.0
    return arrays


def test_a_kernel_split_in_two_on_two_threads_takes_half_its_single_thread_work_term():
    ew = eff.CLASS_CODE["elementwise"]
    feats = {"op_class": np.array([ew, ew]), "mac_flops": np.zeros(2), "vec_flops": np.array([65_536.0, 16_384.0]),
             "trans_flops": np.zeros(2), "bytes": np.array([786_432.0, 196_608.0])}
    hw = {"matrix_peak": 1e11, "vector_peak": 1e11, "mem_bw": 1e10, "units": 0.0, "l2_bytes": 0.0}
    parts = np.array([2.0, 1.0])
    delta = xp.partition_s(parts, feats, hw, _consts())
    # memory-bound: 786,432 B at 10 GB/s x e_bw 0.5 = 157.2864 us on one thread; split in two
    # each part moves 393,216 B: 78.6432 us, the fixed cost paid once; the unsplit kernel: 0
    assert delta[0] == pytest.approx(-78.6432e-6, rel=1e-9)
    assert delta[1] == 0.0


def test_the_split_memory_term_streams_at_min_p_s_1_of_the_machines_bandwidth():
    # m = s / min(p s, 1): p = 2, s = 0.7: 0.7 / min(1.4, 1) = 0.7; s = 0.4 (<= 1/p): 0.4 / 0.8 =
    # 0.5 = 1/p; s = 1: 1 (one core streams at the machine's rate); unknown s: 1/p; p = 1: 1
    assert float(xp.memory_share(2, 0.7)) == pytest.approx(0.7)
    assert float(xp.memory_share(2, 0.4)) == pytest.approx(0.5)
    assert float(xp.memory_share(2, 1.0)) == 1.0
    assert float(xp.memory_share(2, None)) == 0.5
    assert float(xp.memory_share(4, 0.5)) == pytest.approx(0.5)    # 0.5 / min(2, 1)
    assert list(xp.memory_share(np.array([1.0, 3.0]), 0.25)) == pytest.approx([1.0, 0.25 / 0.75])
    ew = eff.CLASS_CODE["elementwise"]
    feats = {"op_class": np.array([ew]), "mac_flops": np.zeros(1), "vec_flops": np.array([65_536.0]),
             "trans_flops": np.zeros(1), "bytes": np.array([786_432.0])}
    hw = {"matrix_peak": 1e11, "vector_peak": 1e11, "mem_bw": 1e10, "units": 0.0, "l2_bytes": 0.0}
    # e_bw 0.5 = s e' (e' = 0.5 / 0.7 against one core's share 0.7 of 10 GB/s): unsplit
    # 786,432 B / (10 GB/s x e' x 0.7) = 157.2864 us; split in two: 786,432 B / (10 GB/s x e' x
    # min(1.4, 1)) = 110.10048 us (the machine's 10 GB/s x e'), 47.18592 us less
    e1 = 0.5 / 0.7
    unsplit, split = 786_432 / (1e10 * e1 * 0.7), 786_432 / (1e10 * e1 * min(1.4, 1.0))
    assert unsplit == pytest.approx(157.2864e-6) and split == pytest.approx(110.10048e-6)
    delta = xp.partition_s(np.array([2.0]), feats, hw, _consts(), 0.7)
    assert delta[0] == pytest.approx(split - unsplit, rel=1e-9)
    # a compute-bound kernel: its FLOPs over the parts whatever s (1e9 FLOPs at 100 GFLOP/s:
    # 10 ms whole, 5 ms a part)
    cb = {**feats, "vec_flops": np.array([1e9])}
    assert xp.partition_s(np.array([2.0]), cb, hw, _consts(), 0.7)[0] == pytest.approx(-5e-3, rel=1e-9)


def _profile(tmp_path, threads, share=None):
    from hardware_db.write import calibration_sources, write_profile
    from profile_docs import calibrated_doc

    doc = calibrated_doc(threads=threads)
    doc["id"] = f"calibrated-test-xla-{threads}t{'' if share is None else f'-s{share:g}'}"
    doc["default_runtime"] = "xla"
    cal = doc["calibration"]
    cal.update({"runtime": "xla", "trans_weight": 1.0, "run_overhead_us": 4.0})
    if share is not None:
        cal["core_bw_share"] = share
    cal["tables"] = {"elementwise": {"floor_us": 0.5, "e_c": 0.25, "e_bw": 0.5, "b_half_bytes": 0.0,
                                     "l2_gain": 0.0, "rows": 3, "fit_mape": 1.0}}
    doc["sources"] = {k: v for k, v in doc["sources"].items() if not k.startswith("calibration.")}
    doc["sources"].update(calibration_sources(cal, "test"))
    return write_profile(doc, tmp_path / f"xla{threads}{'' if share is None else f'_s{share:g}'}.toml")


def test_a_calibrated_xla_profile_splits_by_its_own_threads_not_the_machines(tmp_path):
    jax = pytest.importorskip("jax")
    from analyzer import analyze_jax

    def add(n, threads):
        s = jax.ShapeDtypeStruct((n,), np.float32)
        p = analyze_jax(lambda a, b: a + b, s, s, hw=_profile(tmp_path, threads)).predictions[0]
        return p.latency_s, p.launches

    bw = 12.5e9 * 0.5   # calibrated_doc's 12.5 GB/s at the table's e_bw
    # 65,536 fp32: 786,432 B, 125.83 us on one thread; 2 tasks on 2 threads: 62.91 us, one
    # 0.5 us floor and the 4 us run overhead either way, one launch either way
    one, k1 = add(65_536, 1)
    two, k2 = add(65_536, 2)
    assert one == pytest.approx(4.5e-6 + 786_432 / bw, rel=1e-5)
    assert two == pytest.approx(4.5e-6 + 786_432 / bw / 2, rel=1e-5)
    assert k1 == k2 == 1
    # 16,384: 196,608 B, under 256 KiB a task: the same on 1 and 2 threads
    assert add(16_384, 2)[0] == pytest.approx(add(16_384, 1)[0], rel=1e-9)


def test_a_profile_with_a_core_bw_share_prices_a_split_kernels_bytes_at_it(tmp_path):
    jax = pytest.importorskip("jax")
    from analyzer import analyze_jax

    def add(n, share):
        s = jax.ShapeDtypeStruct((n,), np.float32)
        return analyze_jax(lambda a, b: a + b, s, s, hw=_profile(tmp_path, 2, share)).predictions[0]

    bw = 12.5e9 * 0.5   # calibrated_doc's 12.5 GB/s at the table's e_bw (= s e')
    # 65,536 fp32, 786,432 B, 2 parts at s = 0.7: 786,432 x 0.7 / min(1.4, 1) B at 6.25 GB/s =
    # 88.08 us (125.83 us unsplit); s = 1: no faster than unsplit; s unknown: / 2 (62.91 us)
    p = add(65_536, 0.7)
    assert p.latency_s == pytest.approx(4.5e-6 + 786_432 * 0.7 / bw, rel=1e-5)
    assert any("core's share 0.7" in n for n in p.notes), p.notes
    assert add(65_536, 1.0).latency_s == pytest.approx(4.5e-6 + 786_432 / bw, rel=1e-5)
    q = add(65_536, None)
    assert q.latency_s == pytest.approx(4.5e-6 + 786_432 / bw / 2, rel=1e-5)
    assert any("no core_bw_share (unknown)" in n for n in q.notes), q.notes
    # unsplit (16,384: 196,608 B) kernels are priced the same with and without s
    assert add(16_384, 0.7).latency_s == pytest.approx(add(16_384, None).latency_s, rel=1e-12)


def test_the_fit_takes_a_split_rows_kernel_as_one_parts():
    from analyzer.measure.xla import fit as xla_fit

    k = {"op_class": "elementwise", "mac": 0.0, "vec": 65_536.0, "trans": 1_000.0, "bytes": 786_432.0,
         "view": [0.0] * 7}
    assert xla_fit._features(k, 2.0)[:2] == (67_536.0, 786_432.0)
    assert xla_fit._features({**k, "parts": 2}, 2.0)[:2] == (33_768.0, 393_216.0)
    # with a core_bw_share s: B x s / min(p s, 1): 786,432 x 0.7 = 550,502.4; s = 1: B
    assert xla_fit._features({**k, "parts": 2}, 2.0, 0.7)[:2] == pytest.approx((33_768.0, 550_502.4))
    assert xla_fit._features({**k, "parts": 2}, 2.0, 1.0)[:2] == (33_768.0, 786_432.0)
    assert xla_fit._features(k, 2.0, 0.7)[:2] == (67_536.0, 786_432.0)


def test_the_core_bw_share_is_fitted_over_1_over_threads_to_1_on_the_split_rows_classes(monkeypatch):
    from analyzer.measure.fit import worker as fit_worker
    from analyzer.measure.xla import fit as xla_fit

    assert xla_fit.core_bw_shares(2) == (0.5, 0.6, 0.7, 0.8, 0.9, 1.0)
    assert xla_fit.core_bw_shares(4)[0] == 0.25 and xla_fit.core_bw_shares(1) == ()
    k = {"op_class": "elementwise", "mac": 0.0, "vec": 1.0, "trans": 0.0, "bytes": 786_432.0, "view": [0.0] * 7}
    rows = [{"label": "add", "seconds": 1e-4, "kernels": [{**k, "parts": 2}]},
            {"label": "small", "seconds": 1e-5, "kernels": [{**k, "bytes": 1e3, "op_class": "gemm"}]}]

    def fake(jobs):   # each job's fit error: |B of its first row / 600,000 - 1| x 100, 1 row
        return {name: {"fit_mape": abs(args[1][0] / 6e5 - 1) * 100, "rows": 1} for name, (args, kw) in jobs.items()}
    monkeypatch.setattr(fit_worker, "fit_classes", fake)

    def job(cls, rs):
        return (None, [r[1] for r in rs]), {}
    share, fits, losses = xla_fit.fit_share({"cores": 2, "rows": rows, "run_overhead_s": 0.0,
                                             "chain_s": {"1": 1e-5, "200": 2e-5}}, 1.0, job)
    # B x s for s >= 1/2: 393,216 .. 786,432; nearest 600,000: s = 0.8 (629,145.6); only the
    # class with a split row (elementwise) is fitted over the shares
    assert share == 0.8 and set(fits) == {"elementwise"} and len(losses) == 6
    # no split row, or one core: no share (unknown)
    assert xla_fit.fit_share({"cores": 1, "rows": rows, "run_overhead_s": 0.0,
                              "chain_s": {"1": 1e-5, "200": 2e-5}}, 1.0, job)[0] is None


def test_a_pool_gradient_is_split_by_its_expansions_reduce_window():
    jax = pytest.importorskip("jax")
    import hardware_db
    from analyzer import analyze_jax
    from analyzer.prediction import lowering, runtimes
    from analyzer.prediction.kernel_rows import fusion_nodes

    def pool(x):
        return jax.lax.reduce_window(x, -np.inf, jax.lax.max, (1, 1, 2, 2), (1, 1, 2, 2), "VALID")

    def parts(shape):
        x = jax.ShapeDtypeStruct(shape, np.float32)
        g = jax.ShapeDtypeStruct(shape[:2] + (shape[2] // 2, shape[3] // 2), np.float32)
        nodes = list(analyze_jax(lambda x, g: jax.vjp(pool, x)[1](g)[0], x, g).nodes)
        low = lowering.lower(nodes, [hardware_db.get("epyc-9654")], None, runtimes.XLA_CPU)
        return list(xp.kernel_parts(nodes, fusion_nodes(nodes, None)[0], low.plan, low.feats, low.runs, 2))

    # XLA's reduce-window reads the operand and 4 int32 iotas of its shape and writes the
    # window's value and 4 indices: 4x24x16x16 (98,304 B): 5 x 98,304 + 5 x 24,576 = 614,400 B,
    # 2 tasks (XLA splits it); 1x16x32x32 (65,536 B): 409,600 B, 1 (XLA does not)
    assert max(parts((4, 24, 16, 16))) == 2
    assert max(parts((1, 16, 32, 32))) == 1


def test_explain_prints_the_split(tmp_path):
    jax = pytest.importorskip("jax")
    from analyzer import analyze_jax
    from analyzer.render.explain import render_explain

    s = jax.ShapeDtypeStruct((65_536,), np.float32)
    rep = analyze_jax(lambda a, b: a + b, s, s, hw=_profile(tmp_path, 2))
    e = rep.predictions[0].explain(0)
    # 786,432 B at 6.25 GB/s: 125.83 us whole, 62.91 us a part: the split takes 62.91 us off
    assert e.split_parts == 2.0 and e.split_s == pytest.approx(-786_432 / 6.25e9 / 2, rel=1e-5)
    text = render_explain(rep, 0, width=400)
    assert "of which split -62.9" in text and "2 part(s)" in text, text


def test_a_calibration_rows_kernels_carry_the_parts_of_the_cores_it_names():
    pytest.importorskip("jax")
    from analyzer.measure.xla import calibrate as cx
    from analyzer.measure.xla import rows as xr

    rows = {label: build for rs in xr.xla_rows().values() for label, build in rs}

    def parts(label, threads):
        fn, args = rows[label](cx._rng(label))
        return [k["parts"] for k in cx.row_kernels(fn, args, threads)]

    # XLA's optimized HLO on 2 cores splits the add of 65,536 (786,432 B) in 2, not that of 16,384
    assert parts("add 65536", 2) == [2] and parts("add 16384", 2) == [1]
    # the layer norm 512x768: its two [512, 768] loop fusions, not its YNNPACK sums nor the
    # [512] fusions between them (XLA's HLO: the same)
    assert sorted(parts("layer norm 512x768", 2)) == [1, 1, 1, 1, 2, 2]
    # on one core (the default) nothing is split
    assert parts("add 65536", 1) == [1]
