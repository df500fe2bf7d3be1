"""``calibrate``: measure this machine with onnxruntime and fit the CPU kernel-time model.

Only synthetic single-op models built with ``onnx.helper`` are run (never a user's model). Each
op class is a set of single-node models of different sizes (inputs are graph inputs, so nothing
is constant-folded; the output feeds a 1-element Slice so it lives in the arena), each run at the
session level and thread count the user's session will use; a row's time is the ``q`` quantile
(median by default) of ``session.run`` wall-clock after warm-up minus a baseline model's (input
-> Slice). Wall-clock, not the profiler: its per-node durations carry 1-3 us of its own
overhead, while a tiny Add costs 0.18 us per node in a chain on this machine. The FLOPs and bytes of every row are opcost's own counts of
that calibration model (``analyzer.analyze(model).nodes``), so fit and prediction see the same
numbers. The form and its fit are in ``cpu_model`` (see its docstring):

    t_kernel = floor_s + max(F / (peak * e_c), (B + b_half) / (bw * e_bw))
    t_model  = run_overhead_s + sum over kernels (dispatch_s + t_kernel)

Machine constants:
- ``peak`` (``matrix_tflops.fp32``): the best FLOP/s of the GEMM shapes (kernel time);
- ``bw`` (``memory.mem_bw_gbs``): Add's bytes / kernel time at the largest sizes (DRAM);
- ``dispatch_s`` (``overhead.launch_overhead_us``): wall-clock of a chain of N tiny Adds minus a
  chain of 1, over N-1, minus the tiny Add's profiled kernel time;
- ``run_overhead_s``: the 1-node chain's wall-clock minus its one node.

The library never prints: ``progress(fraction, phase_text)`` is called between phases.
"""

from __future__ import annotations

import datetime as _dt
import os
import platform
import socket
import statistics
import time
from typing import Any, Callable, Mapping

import numpy as np

from analyzer.prediction import cpu_model
from analyzer.prediction.ort_graph import import_ort, session_options

F32 = 1  # onnx.TensorProto.FLOAT


# ---------------------------------------------------------------------------------------------
# calibration models

def _model(nodes, inputs, outputs, inits=(), opset=17):
    import onnx
    from onnx import helper

    g = helper.make_graph(nodes, "calib", inputs, outputs, list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset),
                                            helper.make_opsetid("com.microsoft", 1)])
    m.ir_version = 8
    return m


def _vi(name, shape, elem=F32):
    from onnx import helper
    return helper.make_tensor_value_info(name, elem, list(shape))


def _init(name, shape, rng, dtype=np.float32):
    from onnx import numpy_helper
    if np.issubdtype(dtype, np.integer):
        return numpy_helper.from_array(np.zeros(shape, dtype=dtype), name)
    return numpy_helper.from_array((rng.standard_normal(shape) * 0.05).astype(dtype), name)


class _Builder:
    """Collects independent single-op nodes into one model; node ``k<i>`` writes output ``k<i>``."""

    def __init__(self, seed=0):
        self.nodes, self.inputs, self.outputs, self.inits = [], [], [], []
        self.rng = np.random.default_rng(seed)
        self.i = 0

    def add(self, op, in_shapes, out_shape=None, weights=(), attrs=None, domain="",
            int_inputs=(), n_out=1):
        from onnx import helper
        k = f"k{self.i}"
        self.i += 1
        names = []
        for j, s in enumerate(in_shapes):
            nm = f"{k}_x{j}"
            elem = 7 if j in int_inputs else F32
            self.inputs.append(_vi(nm, s, elem))
            names.append(nm)
        for j, w in enumerate(weights):
            if w is None:
                names.append("")
                continue
            shape, dt = (w, np.float32) if not isinstance(w[0], type) else (w[1], w[0])
            nm = f"{k}_w{j}"
            self.inits.append(_init(nm, shape, self.rng, dt))
            names.append(nm)
        outs = [k] + [f"{k}_o{j}" for j in range(1, n_out)]
        self.nodes.append(helper.make_node(op, names, outs, name=k, domain=domain, **(attrs or {})))
        self.outputs.append(helper.make_tensor_value_info(k, F32, None))
        for o in outs[1:]:
            self.outputs.append(helper.make_tensor_value_info(o, F32, None))
        return k

    def model(self, opset=17):
        return _with_sinks(_model(self.nodes, self.inputs, self.outputs, self.inits, opset))


def _with_sinks(m):
    """Make each calibration node's output an *internal* tensor read by a 1-element Slice (the
    graph output). Graph outputs are allocated afresh on every run (page faults: a 64 MB Add ran
    at a third of its in-graph bandwidth here); internal tensors live in onnxruntime's arena with
    planned buffers, as in a real network."""
    import onnx
    from onnx import helper, numpy_helper

    inferred = onnx.shape_inference.infer_shapes(m)
    rank = {v.name: len(v.type.tensor_type.shape.dim) for v in inferred.graph.value_info}
    rank.update({v.name: len(v.type.tensor_type.shape.dim) for v in inferred.graph.output
                 if v.type.tensor_type.HasField("shape")})
    outs, sinks, inits = [], [], list(m.graph.initializer)
    for v in m.graph.output:
        r = rank.get(v.name, 0)
        if r == 0:
            outs.append(v)
            continue
        z = numpy_helper.from_array(np.zeros(r, dtype=np.int64), f"{v.name}_s0")
        o = numpy_helper.from_array(np.ones(r, dtype=np.int64), f"{v.name}_s1")
        inits += [z, o]
        sinks.append(helper.make_node("Slice", [v.name, z.name, o.name], [f"{v.name}_sink"],
                                      name=f"{v.name}_sink"))
        outs.append(helper.make_tensor_value_info(f"{v.name}_sink", v.type.tensor_type.elem_type or F32, None))
    g = helper.make_graph(list(m.graph.node) + sinks, m.graph.name, list(m.graph.input), outs, inits)
    out = helper.make_model(g, opset_imports=list(m.opset_import))
    out.ir_version = m.ir_version
    return out


def _sizes(lo, hi, n):
    return sorted({int(round(x)) for x in np.geomspace(lo, hi, n)})


def calibration_models(scale: float = 1.0) -> dict[str, Any]:
    """``{op class: onnx.ModelProto}``, each a set of independent single-op nodes."""
    M: dict[str, Any] = {}

    b = _Builder(1)
    for m, k, n in [(1, 256, 256), (1, 768, 768), (1, 1024, 4096), (1, 4096, 1024), (4, 512, 512),
                    (8, 768, 768), (16, 256, 1024), (32, 128, 128), (32, 768, 3072), (64, 64, 64),
                    (64, 512, 512), (128, 768, 768), (128, 3072, 768), (197, 384, 1152),
                    (256, 256, 256), (256, 1024, 1024), (512, 512, 2048), (1024, 256, 256),
                    (784, 96, 384), (3136, 64, 64), (50, 512, 10), (16, 32, 32)]:
        b.add("MatMul", [(1, m, k)], weights=[(k, n)])
    for m, k, n in [(1, 512, 1000), (32, 256, 256), (128, 512, 512)]:
        b.add("Gemm", [(m, k)], weights=[(n, k), (n,)], attrs={"transB": 1})
    for h, s, d in [(4, 32, 64), (12, 128, 64), (8, 256, 32), (2, 16, 16)]:
        b.add("MatMul", [(1, h, s, d), (1, h, d, s)])
    M["gemm"] = b.model()

    b = _Builder(2)
    for c_in, c_out, hw, k, s in [(3, 32, 224, 3, 2), (16, 16, 56, 3, 1), (32, 32, 56, 3, 1),
                                  (64, 64, 56, 3, 1), (128, 128, 28, 3, 1), (256, 256, 14, 3, 1),
                                  (512, 512, 7, 3, 1), (64, 128, 56, 3, 2), (8, 8, 32, 3, 1),
                                  (3, 64, 224, 7, 2), (96, 96, 28, 5, 1)]:
        b.add("Conv", [(1, c_in, hw, hw)], weights=[(c_out, c_in, k, k), (c_out,)],
              attrs={"pads": [k // 2] * 4, "strides": [s, s]})
    M["conv"] = b.model()

    b = _Builder(3)
    for c, hw, k, s in [(32, 112, 3, 1), (96, 112, 3, 2), (144, 56, 3, 1), (192, 28, 3, 1),
                        (384, 14, 3, 1), (960, 7, 3, 1), (96, 56, 7, 1), (768, 7, 7, 1),
                        (240, 28, 5, 1), (16, 16, 3, 1)]:
        b.add("Conv", [(1, c, hw, hw)], weights=[(c, 1, k, k), (c,)],
              attrs={"pads": [k // 2] * 4, "strides": [s, s], "group": c})
    M["conv_dw"] = b.model()

    b = _Builder(4)
    for c_in, c_out, hw in [(32, 16, 112), (16, 96, 112), (24, 144, 56), (144, 24, 56),
                            (64, 256, 56), (256, 64, 56), (128, 512, 28), (512, 128, 28),
                            (320, 1280, 7), (960, 160, 7), (8, 8, 16)]:
        b.add("Conv", [(1, c_in, hw, hw)], weights=[(c_out, c_in, 1, 1), (c_out,)])
    M["conv_1x1"] = b.model()

    # elementwise / bandwidth: 4 KB .. 64 MB per tensor (x scale)
    elems = _sizes(1024, 16 * 1024 * 1024 * scale, 13)
    b = _Builder(5)
    for e in elems:
        b.add("Add", [(e,), (e,)])
    for e in elems[::2]:
        b.add("Mul", [(e,)], weights=[(1,)])
        b.add("Relu", [(e,)])
    M["elementwise"] = b.model()

    b = _Builder(6)
    for e in _sizes(1024, 4 * 1024 * 1024 * scale, 6):
        b.add("Sigmoid", [(e,)])
        b.add("Tanh", [(e,)])
        b.add("Erf", [(e,)])
        b.add("Gelu", [(e,)], domain="com.microsoft")
    M["activation"] = b.model()

    b = _Builder(7)
    for r, h in [(1, 64), (16, 128), (32, 768), (128, 768), (197, 384), (512, 1024), (3136, 96),
                 (8, 2048), (1024, 256)]:
        b.add("LayerNormalization", [(1, r, h)], weights=[(h,), (h,)], attrs={"axis": -1})
    M["norm"] = b.model()

    b = _Builder(8)
    for h, s in [(1, 16), (2, 32), (4, 64), (12, 128), (12, 256), (8, 512), (16, 1024), (1, 4096)]:
        b.add("Softmax", [(1, h, s, s)], attrs={"axis": -1})
    M["softmax"] = b.model()

    b = _Builder(9)
    for r, c in [(1, 64), (16, 256), (128, 768), (512, 1024), (1024, 4096), (64, 3136)]:
        b.add("ReduceMean", [(1, r, c)], weights=[(np.int64, (1,))], attrs={"keepdims": 1})
        b.add("ReduceSum", [(1, r, c)], weights=[(np.int64, (1,))], attrs={"keepdims": 1})
    for nd in b.inits:
        nd.raw_data = np.array([-1], dtype=np.int64).tobytes()
    M["reduce"] = b.model(opset=18)

    b = _Builder(10)
    for v, d, s in [(1000, 64, 16), (30522, 768, 128), (50257, 768, 32), (8000, 256, 512),
                    (512, 768, 128), (100, 32, 4)]:
        b.add("Gather", [(1, s)], weights=[(v, d)], int_inputs=(0,), attrs={"axis": 0})
        # data first: reorder inputs (Gather(data, indices))
        n = b.nodes[-1]
        ins = list(n.input)
        n.input[:] = [ins[1], ins[0]]
    M["gather"] = b.model()

    b = _Builder(11)
    for c, hw in [(64, 112), (32, 56), (256, 28), (16, 16), (512, 14)]:
        b.add("MaxPool", [(1, c, hw, hw)], attrs={"kernel_shape": [3, 3], "strides": [2, 2],
                                                  "pads": [1, 1, 1, 1]})
        b.add("AveragePool", [(1, c, hw, hw)], attrs={"kernel_shape": [2, 2], "strides": [2, 2]})
        b.add("GlobalAveragePool", [(1, c, hw, hw)])
    M["pooling"] = b.model()

    b = _Builder(12)
    for a, s, d in [(1, 16, 16), (4, 64, 32), (12, 128, 64), (16, 256, 64), (8, 1024, 64),
                    (64, 56, 56)]:
        b.add("Transpose", [(1, s, a, d)], attrs={"perm": [0, 2, 1, 3]})
        b.add("Concat", [(1, a, s, d), (1, a, s, d)], attrs={"axis": 1})
    M["movement"] = b.model()

    b = _Builder(13)
    for e in (16, 256, 4096, 65536):
        b.add("Reshape", [(e,)], weights=[(np.int64, (2,))])
        b.add("Unsqueeze", [(e,)], weights=[(np.int64, (1,))])
    for t in b.inits:
        vals = [1, -1] if list(t.dims) == [2] else [0]
        t.raw_data = np.array(vals, dtype=np.int64).tobytes()
    M["view"] = b.model()

    b = _Builder(14)
    for op, gates in (("LSTM", 4), ("GRU", 3)):
        for t, i, h in [(8, 64, 64), (32, 128, 128), (64, 256, 256), (16, 512, 256)]:
            b.add(op, [(t, 1, i)], weights=[(1, gates * h, i), (1, gates * h, h)],
                  attrs={"hidden_size": h}, n_out=1)
    M["rnn"] = b.model()
    return M


# ---------------------------------------------------------------------------------------------
# measurement

def split_rows(model) -> dict[str, Any]:
    """``{k<i>: one-node model}``: node ``k<i>`` with its sink, inputs and initializers."""
    from onnx import helper

    out = {}
    for n in model.graph.node:
        if not (n.name.startswith("k") and n.name[1:].isdigit()):
            continue
        k = n.name
        pre = k + "_"
        nodes = [x for x in model.graph.node if x.name in (k, f"{k}_sink")]
        inputs = [v for v in model.graph.input if v.name.startswith(pre)]
        inits = [t for t in model.graph.initializer if t.name.startswith(pre)]
        outs = [v for v in model.graph.output if v.name == k or v.name.startswith(pre)]
        g = helper.make_graph(nodes, k, inputs, outs, inits)
        m = helper.make_model(g, opset_imports=list(model.opset_import))
        m.ir_version = model.ir_version
        out[k] = m
    return out


def _baseline():
    """input -> 1-element Slice sink: what every row model costs besides its node."""
    b = _Builder(0)
    b.add("Identity", [(8,)])
    m = b.model()
    sink = [x for x in m.graph.node if x.name.endswith("_sink")][0]
    sink.input[0] = "k0_x0"
    del m.graph.node[0]
    return m


def wall_time(model, threads: int, level: str, q: float = 0.5, min_s: float = 0.08,
              min_runs: int = 8, max_runs: int = 400) -> float:
    """Quantile ``q`` of ``session.run`` wall-clock seconds (after 3 warm-up runs)."""
    from analyzer.prediction.ort_measure import random_feeds

    ort = import_ort()
    s = ort.InferenceSession(model.SerializeToString(), session_options(level, threads),
                             providers=["CPUExecutionProvider"])
    feeds = random_feeds(s)
    for _ in range(3):
        s.run(None, feeds)
    w = []
    t_end = time.perf_counter() + min_s
    while len(w) < max_runs and (len(w) < min_runs or time.perf_counter() < t_end):
        t0 = time.perf_counter()
        s.run(None, feeds)
        w.append(time.perf_counter() - t0)
    return float(np.quantile(w, q))

def _profile_model(model, threads: int, level: str, runs: int, warmup: int = 2,
                   q: float = 0.5) -> dict[str, float]:
    """Median kernel seconds per node ``k<i>`` (nchwc layout variants joined)."""
    from analyzer.prediction.ort_measure import profile_runs
    node_s, _ = profile_runs(model.SerializeToString(), level, threads, None, runs, warmup, q=q)
    out: dict[str, float] = {}
    for k, t in node_s.items():
        base = k[:-6] if k.endswith("_nchwc") else k
        if base.startswith("k") and base[1:].isdigit():
            out[base] = out.get(base, 0.0) + t
    return out


def _chain(n: int, width: int = 8):
    from onnx import helper
    nodes = []
    prev = "x"
    for i in range(n):
        out = "y" if i == n - 1 else f"t{i}"
        nodes.append(helper.make_node("Add", [prev, "c"], [out], name=f"n{i}"))
        prev = out
    from onnx import numpy_helper
    c = numpy_helper.from_array(np.full((width,), 0.5, dtype=np.float32), "c")
    return _model(nodes, [_vi("x", (width,))], [_vi("y", (width,))], [c])


def _wall(model, threads, level, runs, q=0.5) -> float:
    from analyzer.prediction.ort_measure import time_runs
    ort = import_ort()
    s = ort.InferenceSession(model.SerializeToString(), session_options(level, threads),
                             providers=["CPUExecutionProvider"])
    feeds = {"x": np.ones((8,), dtype=np.float32)}
    w = time_runs(s, feeds, runs, warmup=20)
    return float(np.quantile(w, q))


def _cpu_name() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def calibrate(runtime: str = "onnxruntime", threads: int | None = None,
              progress: Callable[[float, str], None] | None = None, budget_s: float = 100,
              level: str = "default", runs: int = 7, q: float = 0.5) -> dict:
    """Measure this machine with onnxruntime and return a TOML-ready profile document.

    ``threads``: ``intra_op_num_threads`` of the measured sessions (default: the machine's
    cores). ``level``: the session optimization level the predictions are for. ``runs``:
    profiled runs per calibration model. ``q``: the quantile over runs (0.5: medians; lower is
    robust to other processes on a shared machine). ``budget_s`` scales the largest sizes down on
    slow machines (the calibration checks its own time after each class).
    """
    if runtime != "onnxruntime":
        from analyzer.errors import AnalyzerError
        raise AnalyzerError(f"calibrate: runtime '{runtime}' is not supported (only onnxruntime)")
    from analyzer import analyze

    ort = import_ort()
    threads = int(threads or os.cpu_count() or 1)
    say = progress or (lambda f, s: None)
    t_start = time.perf_counter()
    models = calibration_models()
    rows: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
    n_cls = len(models)
    for j, (cls, m) in enumerate(models.items()):
        say(j / (n_cls + 1), f"measuring {cls} kernels")
        base = wall_time(_baseline(), threads, level, q, min_s=0.05)
        meas = {k: max(wall_time(mk, threads, level, q) - base, 1e-8)
                for k, mk in split_rows(m).items()}
        nodes = {n.name: n for n in analyze(m).nodes}
        _, F, B = cpu_model.node_features([nodes[k] for k in sorted(meas, key=lambda s: int(s[1:]))])
        t = np.array([meas[k] for k in sorted(meas, key=lambda s: int(s[1:]))])
        ops = [nodes[k].op for k in sorted(meas, key=lambda s: int(s[1:]))]
        rows[cls] = (F, B, t, ops)
    say(n_cls / (n_cls + 1), "measuring dispatch overhead")
    n_chain = 200
    w1 = _wall(_chain(1), threads, level, 400, q)
    wn = _wall(_chain(n_chain), threads, level, 60, q)
    per_node = max((wn - w1) / (n_chain - 1), 1e-8)
    dispatch = per_node
    run_over = max(w1 - per_node, 1e-6)
    # rows are wall-clock per node (kernel + dispatch): fit the kernel part
    rows = {c: (F, B, np.maximum(t - dispatch, 1e-8), o) for c, (F, B, t, o) in rows.items()}

    # machine constants from the measured rows
    F, B, t, _ = rows["gemm"]
    peak = float(np.max(F / t))
    Fe, Be, te, ope = rows["elementwise"]
    adds = np.array([o == "Add" for o in ope])
    big = adds & (Be >= np.sort(Be[adds])[-3])
    bw = float(np.median(Be[big] / te[big]))

    tables = {}
    for cls, (F, B, t, _) in rows.items():
        fit = cpu_model.fit_class(F, B, t, peak, bw)
        tables[cls] = {"floor_us": fit["floor_s"] * 1e6, "e_c": fit["e_c"], "e_bw": fit["e_bw"],
                       "b_half_bytes": fit["b_half"], "rows": fit["rows"],
                       "fit_mape": fit["fit_mape"]}
    say(1.0, "done")
    elapsed = time.perf_counter() - t_start
    date = _dt.date.today().isoformat()
    cpu = _cpu_name()
    ver = ort.__version__
    host = socket.gethostname().lower()
    hid = "".join(ch if ch.isalnum() or ch in "-._" else "-" for ch in host).strip("-.") or "host"
    head = f"measured by analyze hw calibrate on {date}, {cpu}, onnxruntime {ver}, {threads} threads"
    family = "arm-cpu" if platform.machine().lower() in ("arm64", "aarch64") else "x86-cpu"
    return {
        "schema_version": 1,
        "id": f"calibrated-{hid}-{threads}t",
        "name": f"{cpu} ({threads} threads, calibrated)",
        "vendor": _vendor(cpu),
        "kind": "cpu",
        "family": family,
        "default_runtime": "onnxruntime",
        "notes": (f"Calibrated with onnxruntime {ver} at {threads} intra-op threads, session level "
                  f"'{level}', in {elapsed:.0f} s. Kernel time per op class = floor + max(F/(peak*e_c), "
                  "(B + b_half)/(bw*e_bw)); see analyzer/prediction/cpu_model.py."),
        "matrix_tflops": {"fp32": peak / 1e12},
        "vector_tflops": {"fp32": peak / 1e12},
        "memory": {"mem_bw_gbs": bw / 1e9},
        "overhead": {"launch_overhead_us": dispatch * 1e6},
        "sources": {
            "matrix_tflops.fp32": f"{head}: best FLOP/s over {len(rows['gemm'][2])} MatMul/Gemm shapes (wall-clock per single-op model minus a baseline model)",
            "vector_tflops.fp32": f"{head}: same SIMD FMA units as the matrix figure (set equal to it)",
            "memory.mem_bw_gbs": f"{head}: Add (2 reads + 1 write) bytes / wall-clock kernel time, median of the 3 largest sizes (DRAM)",
            "overhead.launch_overhead_us": (f"{head}: (wall of a chain of {n_chain} tiny Adds - chain of 1) / "
                                            f"{n_chain - 1} (a tiny kernel's whole cost per node)"),
        },
        "calibration": {
            "measured_on": date, "runtime": "onnxruntime", "onnxruntime_version": ver,
            "threads": threads, "level": level, "quantile": q, "cpu": cpu, "seconds": round(elapsed, 1),
            "run_overhead_us": run_over * 1e6,
            "models": "synthetic single-op models only (analyzer.prediction.calibrate.calibration_models)",
            "tables": tables,
        },
        # the measured rows (class -> [(op, flops, bytes, seconds)]); not written to TOML
        "_rows": {cls: [(o, float(f), float(b_), float(x)) for o, f, b_, x in zip(r[3], r[0], r[1], r[2])]
                  for cls, r in rows.items()},
    }


def _chain_as_k():
    """A 1-node tiny Add named like the calibration nodes (for its profiled kernel time)."""
    b = _Builder(0)
    b.add("Add", [(8,)], weights=[(8,)])
    return b.model()


def _vendor(cpu: str) -> str:
    low = cpu.lower()
    for key, name in (("amd", "AMD"), ("intel", "Intel"), ("apple", "Apple"), ("ampere", "Ampere"),
                      ("arm", "Arm"), ("graviton", "AWS")):
        if key in low:
            return name
    return "unknown"


# ---------------------------------------------------------------------------------------------
# TOML

def _toml_value(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if v != v or v in (float("inf"), float("-inf")):
            raise ValueError("TOML has no NaN/inf in profiles")
        return repr(float(v))
    if isinstance(v, str):
        return '"' + v.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    if isinstance(v, Mapping):
        return "{" + ", ".join(f"{_toml_key(k)} = {_toml_value(x)}" for k, x in v.items()) + "}"
    raise TypeError(f"cannot write {type(v).__name__} to TOML")


def _toml_key(k: str) -> str:
    return k if k.replace("_", "").replace("-", "").isalnum() else _toml_value(k)


def to_toml(doc: Mapping[str, Any]) -> str:
    """A small TOML writer for profile documents (scalars, arrays, nested tables)."""
    lines: list[str] = []

    def table(d: Mapping[str, Any], prefix: str):
        scalars = [(k, v) for k, v in d.items() if not isinstance(v, Mapping)]
        subs = [(k, v) for k, v in d.items() if isinstance(v, Mapping) and not k.startswith("_")]
        if prefix and (scalars or not subs):
            lines.append(f"\n[{prefix}]")
        for k, v in scalars:
            if not k.startswith("_"):
                lines.append(f"{_toml_key(k)} = {_toml_value(v)}")
        for k, v in subs:
            table(v, f"{prefix}.{_toml_key(k)}" if prefix else _toml_key(k))

    lines.append("# opcost hardware profile, written by analyze hw calibrate")
    table(doc, "")
    return "\n".join(lines) + "\n"


def write_profile(doc: Mapping[str, Any], path: str | os.PathLike) -> str:
    """Write ``doc`` as TOML at ``path``; returns the path."""
    text = to_toml(doc)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    return os.fspath(path)
