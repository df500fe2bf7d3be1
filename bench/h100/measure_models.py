#!/usr/bin/env python3
"""Whole-model latency measurements on one CUDA GPU (written for an H100 SXM).

HELD-OUT CHECK DATA: what this script writes is for judging opcost's predictions. It must never be
used to fit or tune opcost's constants.

Three parts, each its own process (so that JAX and PyTorch do not share a process except where said,
and so that CUPTI is never active while wall-clock times are taken):

  python3 bench/h100/measure_models.py jax       samples/jax_models.py programs under jax.jit:
        wall-clock of f(*args).block_until_ready() (median of 50 after 10 warm-ups), the compiled
        HLO's entry-computation op count and XLA's cost_analysis; writes models_jax.csv and
        models_meta_jax.json
  python3 bench/h100/measure_models.py jaxprof   the same jitted programs, 20 calls under
        torch.profiler (CUPTI sees the kernels XLA launches in the same process): kernel sum per
        call and kernel count; writes models_jax_prof.csv
  python3 bench/h100/measure_models.py torch     torchvision resnet18 / mobilenet_v2 (random
        weights, eval, inference_mode) eager wall-clock, CUDA-graph replay, profiler kernel sum;
        then onnxruntime (CUDA EP if present) on tests/fixtures/torch/*.onnx; writes
        models_torch.csv and models_meta_torch.json

Environment: OUT (output folder), SMOKE=1 (fewer cases).
"""

from __future__ import annotations

import csv
import datetime
import hashlib
import json
import os
import pathlib
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter

OUT = os.environ.get("OUT") or "out_models"
os.makedirs(OUT, exist_ok=True)
SMOKE = os.environ.get("SMOKE") == "1"
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
T_START = time.perf_counter()
N_WALL, W_WALL = 50, 10
N_PROF, W_PROF = 20, 5
N_GRAPH, W_GRAPH, GRAPH_REPS = 20, 3, 3

COLS = ["framework", "model", "variant", "dtype", "batch", "input_spec", "analyze_hint",
        "eager_wall_us", "eager_wall_min_us", "pipelined_us", "graph_us", "kernel_sum_us", "n_kernels", "first_kernel",
        "prof_grouping", "xla_entry_ops", "xla_fusions", "xla_custom_calls", "xla_cost_flops",
        "xla_cost_bytes", "ort_providers", "ort_node_time_sum_us", "ort_gpu_kernel_sum_us", "n_ort_nodes",
        "output_finite", "gpu_name", "versions", "date_utc", "error"]


def _read_json(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def log(*a):
    print(f"[{time.perf_counter() - T_START:7.1f}s]", *a, flush=True)


def smi() -> dict:
    q = "name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,power.draw,temperature.gpu,pstate"
    try:
        r = subprocess.run(["nvidia-smi", f"--query-gpu={q}", "--format=csv"], capture_output=True,
                           text=True, timeout=20)
        lines = r.stdout.strip().splitlines()
        return dict(zip([k.strip() for k in lines[0].split(",")], [v.strip() for v in lines[1].split(",")]))
    except Exception as e:  # noqa: BLE001
        return {"error": repr(e)}


class Writer:
    def __init__(self, path):
        self.f = open(path, "w", newline="")  # noqa: SIM115  (held open by the writer for the whole run)
        self.w = csv.DictWriter(self.f, fieldnames=COLS, extrasaction="ignore")
        self.w.writeheader()
        self.f.flush()

    def row(self, d):
        self.w.writerow({k: (f"{v:.3f}" if isinstance(v, float) else v) for k, v in d.items()})
        self.f.flush()


def now():
    return datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")


def wall(fn) -> tuple[float, float]:
    for _ in range(W_WALL):
        fn()
    ts = []
    for _ in range(N_WALL):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts) * 1e6, min(ts) * 1e6


def pipelined(call, sync, n=50) -> float:
    """Mean time per call of n calls issued back to back with one wait at the end (after 5 warm-ups)."""
    for _ in range(5):
        call()
    sync()
    t0 = time.perf_counter()
    for _ in range(n):
        call()
    sync()
    return (time.perf_counter() - t0) / n * 1e6


def torch_gpu_events(p):
    import torch
    evs = []
    try:
        for e in p.profiler.kineto_results.events():
            if e.device_type() == torch.autograd.DeviceType.CUDA:
                evs.append((int(e.start_ns()), int(e.duration_ns()), e.name()))
    except Exception:  # noqa: BLE001
        evs = []
        for e in p.events():
            if e.device_type == torch.autograd.DeviceType.CUDA:
                evs.append((int(e.time_range.start * 1000), int(e.time_range.elapsed_us() * 1000), e.name))
    evs.sort()
    return evs


def profile_calls(fn, sync) -> dict:
    """fn() once = one call; sync() waits for it. Kernel sum per call from torch.profiler."""
    from torch.profiler import ProfilerActivity, profile
    for _ in range(W_PROF):
        fn()
    sync()
    with profile(activities=[ProfilerActivity.CUDA]) as p:
        for _ in range(N_PROF):
            fn()
            sync()
    evs = torch_gpu_events(p)
    n = len(evs)
    if n == 0:
        return {"kernel_sum_us": float("nan"), "n_kernels": 0, "first_kernel": "", "prof_grouping": "none",
                "names": []}
    if n % N_PROF == 0:
        k = n // N_PROF
        groups = [evs[i * k:(i + 1) * k] for i in range(N_PROF)]
        sums = [sum(d for _, d, _ in g) / 1000.0 for g in groups]
        names = [nm for _, _, nm in groups[0]]
        return {"kernel_sum_us": statistics.median(sums), "n_kernels": k, "first_kernel": names[0],
                "prof_grouping": "equal_groups", "names": names,
                "median_us": [statistics.median(g[j][1] for g in groups) / 1000.0 for j in range(k)]}
    return {"kernel_sum_us": sum(d for _, d, _ in evs) / 1000.0 / N_PROF, "n_kernels": n / N_PROF,
            "first_kernel": evs[0][2], "prof_grouping": "mean_total_over_calls",
            "names": sorted(Counter(nm for _, _, nm in evs).items())}


# ----------------------------------------------------------------------------- JAX

def profile_jitted(f, args) -> dict:
    """``profile_calls`` of a jitted ``f(*args)``: each call's outputs kept until its wait."""
    holder = []

    def call():
        holder.append(f(*args))

    def sync():
        while holder:
            holder.pop().block_until_ready()
    return profile_calls(call, sync)


def hlo_entry_ops(txt: str) -> Counter:
    ops = Counter()
    in_entry = False
    for ln in txt.splitlines():
        if ln.startswith("ENTRY"):
            in_entry = True
            continue
        if in_entry:
            if ln.startswith("}"):
                break
            m = re.search(r"=\s+(?:\([^)]*\)|\S+)\s+([a-z][\w\-]*)\(", ln)
            if m:
                ops[m.group(1)] += 1
    return ops


FREE = {"parameter", "constant", "get-tuple-element", "tuple", "bitcast"}


def jax_cases():
    import jax
    import jax.numpy as jnp
    import numpy as np
    import importlib.util
    spec = importlib.util.spec_from_file_location("jax_models", os.path.join(ROOT, "samples", "jax_models.py"))
    M = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(M)
    names = ["mlp", "transformer", "cnn", "rnn"]
    batches = [1, 8] if SMOKE else [1, 8, 64]
    rng = np.random.default_rng(0)
    for name in names:
        for b in batches:
            ex = M.example_inputs(name, batch=b)
            xs = ex[1]
            xnp = rng.standard_normal(xs.shape).astype(np.float32)
            pnp = getattr(M, f"{name}_params")(abstract=False)
            shape = ",".join(str(d) for d in xs.shape)
            for variant, dt in (("params_arg", "f32"), ("params_arg", "bf16"), ("infer_const", "f32")):
                jdt = jnp.float32 if dt == "f32" else jnp.bfloat16
                x = jax.device_put(jnp.asarray(xnp, dtype=jdt))
                if variant == "params_arg":
                    params = jax.tree_util.tree_map(lambda a: jax.device_put(jnp.asarray(a, dtype=jdt)), pnp)
                    f = jax.jit(getattr(M, name))
                    args = (params, x)
                    hint = (f"analyzer.analyze_jax(M.{name}, params, x, params_argnums=0) with params = "
                            f"M.{name}_params() cast to {dt}, x={dt}[{shape}]")
                else:
                    f = jax.jit(getattr(M, f"{name}_infer"))
                    args = (x,)
                    argname = "xs" if name == "rnn" else "x"
                    hint = f"analyze samples/jax_models.py:{name}_infer --input {argname}={dt}[{shape}]"
                yield dict(model=name, variant=variant, dtype=dt, batch=b, f=f, args=args,
                           input_spec=f"x={dt}[{shape}]", analyze_hint=hint, M=M)


def run_jax():
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    import jax
    devs = jax.devices()
    meta = {"what": "JAX whole-model wall-clock; HELD-OUT CHECK DATA, never to be used for fitting",
            "date_utc": now(), "jax": jax.__version__, "devices": [str(d) for d in devs],
            "backend": jax.default_backend(), "smi_before": smi(),
            "jax_models_sha256": hashlib.sha256(pathlib.Path(ROOT, "samples", "jax_models.py").read_bytes()).hexdigest(),
            "pipelined_us": "50 calls issued back to back, one block_until_ready on the last output, elapsed/50 (after 5 warm-ups)",
            "method": f"jax.jit(f); compile + {W_WALL} warm-up calls; median over {N_WALL} of perf_counter around f(*args).block_until_ready(); inputs already on the device",
            "variants": {"params_arg": "jit(M.<name>)(params, x): weights are device-array arguments",
                         "infer_const": "jit(M.<name>_infer)(x): numpy f32 weights closed over, constants in the XLA program"},
            "hlo": {}}
    try:
        import jaxlib
        meta["jaxlib"] = jaxlib.__version__
    except Exception:  # noqa: BLE001
        pass
    log("jax", jax.__version__, devs)
    w = Writer(os.path.join(OUT, "models_jax.csv"))
    for c in jax_cases():
        row = {k: c[k] for k in ("model", "variant", "dtype", "batch", "input_spec", "analyze_hint")}
        row.update(framework="jax", gpu_name=str(devs[0].device_kind), versions=f"jax {jax.__version__}",
                   date_utc=now())
        try:
            f, args = c["f"], c["args"]
            compiled = f.lower(*args).compile()
            txt = compiled.as_text()
            ops = hlo_entry_ops(txt)
            row["xla_entry_ops"] = sum(v for k, v in ops.items() if k not in FREE)
            row["xla_fusions"] = len(re.findall(r"\sfusion\(", txt))
            row["xla_custom_calls"] = len(re.findall(r"\scustom-call\(", txt))
            try:
                ca = compiled.cost_analysis()
                if isinstance(ca, list):
                    ca = ca[0]
                row["xla_cost_flops"] = ca.get("flops")
                row["xla_cost_bytes"] = ca.get("bytes accessed")
            except Exception:  # noqa: BLE001
                pass
            k = f"{c['model']}|{c['variant']}|{c['dtype']}|{c['batch']}"
            meta["hlo"][k] = {"entry_ops": dict(ops)}
            if c["batch"] == 8:
                meta["hlo"][k]["hlo_text"] = txt[:60000]
            out = f(*args)
            out.block_until_ready()
            import numpy as np
            row["output_finite"] = bool(np.isfinite(np.asarray(out, dtype=np.float32)).all())
            row["eager_wall_us"], row["eager_wall_min_us"] = wall(lambda: f(*args).block_until_ready())
            outs = []
            row["pipelined_us"] = pipelined(lambda: outs.append(f(*args)),
                                            lambda: [o.block_until_ready() for o in outs[-1:]] and outs.clear())
        except Exception as e:  # noqa: BLE001
            row["error"] = repr(e)[:300]
            log("ERROR", c["model"], c["variant"], c["dtype"], c["batch"], repr(e)[:300])
        w.row(row)
        log(f"jax {c['model']:12s} {c['variant']:12s} {c['dtype']:4s} b{c['batch']:<3d} wall "
            f"{row.get('eager_wall_us', float('nan')):.1f} us  entry ops {row.get('xla_entry_ops')}")
    meta["smi_after"] = smi()
    with open(os.path.join(OUT, "models_meta_jax.json"), "w") as f:
        json.dump(meta, f, indent=1, default=str)


def run_jaxprof():
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    import jax
    import torch  # only for its profiler (CUPTI records the kernels XLA launches in this process)
    torch.cuda.init()
    w = Writer(os.path.join(OUT, "models_jax_prof.csv"))
    names = {}
    for c in jax_cases():
        row = {k: c[k] for k in ("model", "variant", "dtype", "batch", "input_spec")}
        row.update(framework="jax", versions=f"jax {jax.__version__}", date_utc=now())
        try:
            r = profile_jitted(c["f"], c["args"])
            row.update({k: r.get(k) for k in ("kernel_sum_us", "n_kernels", "first_kernel", "prof_grouping")})
            names[f"{c['model']}|{c['variant']}|{c['dtype']}|{c['batch']}"] = {"names": r.get("names"),
                                                                              "median_us": r.get("median_us")}
        except Exception as e:  # noqa: BLE001
            row["error"] = repr(e)[:300]
            log("ERROR", c["model"], c["variant"], c["dtype"], c["batch"], repr(e)[:300])
        w.row(row)
        log(f"jaxprof {c['model']:12s} {c['variant']:12s} {c['dtype']:4s} b{c['batch']:<3d} ksum "
            f"{row.get('kernel_sum_us') or float('nan'):.1f} us n {row.get('n_kernels')}")
    with open(os.path.join(OUT, "models_jax_kernels.json"), "w") as f:
        json.dump(names, f)


# ----------------------------------------------------------------------------- torch + onnxruntime

def random_weights_model(path):
    """The ONNX file with every external (absent) float initializer replaced by seeded random data."""
    import numpy as np
    import onnx
    from onnx import numpy_helper
    m = onnx.load(path, load_external_data=False)
    rng = np.random.default_rng(0)
    for i, t in enumerate(m.graph.initializer):
        if t.data_location != onnx.TensorProto.EXTERNAL:
            continue
        dims = tuple(t.dims)
        dt = onnx.helper.tensor_dtype_to_np_dtype(t.data_type)
        fan_in = int(np.prod(dims[1:])) if len(dims) >= 2 else 0
        if len(dims) >= 2:
            a = rng.standard_normal(dims) * np.sqrt(1.0 / max(fan_in, 1))
        else:
            a = 0.02 * rng.standard_normal(dims) + (1.0 if "weight" in t.name.lower() and len(dims) == 1 else 0.0)
        new = numpy_helper.from_array(a.astype(dt), t.name)
        m.graph.initializer[i].CopyFrom(new)
    return m


def ort_inputs(m):
    import numpy as np
    import onnx
    inits = {t.name for t in m.graph.initializer}
    feeds, spec = {}, []
    rng = np.random.default_rng(0)
    for inp in m.graph.input:
        if inp.name in inits:
            continue
        tt = inp.type.tensor_type
        shape = [d.dim_value if d.HasField("dim_value") and d.dim_value > 0 else 1 for d in tt.shape.dim]
        dt = onnx.helper.tensor_dtype_to_np_dtype(tt.elem_type)
        if np.issubdtype(dt, np.integer):
            a = np.ones(shape, dt) if "mask" in inp.name else rng.integers(0, 1000, shape).astype(dt)
        else:
            a = rng.standard_normal(shape).astype(dt)
        feeds[inp.name] = a
        spec.append(f"{inp.name}={np.dtype(dt).name}[{','.join(map(str, shape))}]")
    return feeds, " ".join(spec)


def run_torch():
    import numpy as np
    import torch
    import torchvision
    dev = torch.device("cuda")
    meta = {"what": "torchvision + onnxruntime whole-model latency; HELD-OUT CHECK DATA, never to be used for fitting",
            "date_utc": now(), "torch": torch.__version__, "cuda": torch.version.cuda,
            "cudnn": torch.backends.cudnn.version(), "torchvision": torchvision.__version__,
            "gpu_name": torch.cuda.get_device_name(0), "python": platform.python_version(),
            "settings": {"cudnn_benchmark": torch.backends.cudnn.benchmark,
                         "cudnn_allow_tf32": torch.backends.cudnn.allow_tf32,
                         "matmul_allow_tf32": torch.backends.cuda.matmul.allow_tf32,
                         "memory_format": "contiguous NCHW", "mode": "model.eval(), torch.inference_mode()"},
            "smi_before": smi(),
            "methods": {
                "eager_wall_us": f"median over {N_WALL} of perf_counter around (model(x); torch.cuda.synchronize()) after {W_WALL} warm-ups",
                "pipelined_us": "50 forwards issued back to back, one torch.cuda.synchronize at the end, elapsed/50 (after 5 warm-ups)",
                "graph_us": f"one forward captured in torch.cuda.CUDAGraph; {W_GRAPH} warm-up replays; {N_GRAPH} replays between CUDA events, elapsed/{N_GRAPH}; {GRAPH_REPS} repeats, median",
                "kernel_sum_us": f"torch.profiler(activities=[CUDA]), {N_PROF} forwards after {W_PROF} warm-ups, synchronize after each; GPU activities split in {N_PROF} equal groups, median of group sums",
                "ort eager_wall_us": f"median over {N_WALL} of perf_counter around session.run(None, feeds) with numpy feeds (host->device and device->host copies included), after {W_WALL} warm-ups; default SessionOptions",
                "ort_node_time_sum_us": "onnxruntime enable_profiling: sum of 'Node' events named *_kernel_time per run (host-side time of each node's compute call), averaged over 20 runs",
                "ort_gpu_kernel_sum_us": "onnxruntime profiler 'Kernel' category events (GPU kernels, present only if the build records them) summed per run",
            },
            "kernel_names": {}}
    log("torch", torch.__version__, "torchvision", torchvision.__version__, meta["gpu_name"])
    w = Writer(os.path.join(OUT, "models_torch.csv"))
    versions = f"torch {torch.__version__} cuda {torch.version.cuda} cudnn {torch.backends.cudnn.version()}"
    cases = [(n, dt, b) for n in ("resnet18", "mobilenet_v2") for dt in ("fp32", "fp16") for b in (1, 32)]
    if SMOKE:
        cases = cases[:2]
    rows = {}
    # pass A: eager + graph (no CUPTI yet)
    for (name, dt, b) in cases:
        row = dict(framework="torch", model=name, variant="torchvision eager", dtype=dt, batch=b,
                   input_spec=f"x={dt}[{b},3,224,224]", gpu_name=meta["gpu_name"], versions=versions,
                   date_utc=now(), analyze_hint=f"tests/fixtures/torch/{name}.onnx with batch {b}")
        try:
            tdt = torch.float32 if dt == "fp32" else torch.float16
            torch.manual_seed(0)
            model = getattr(torchvision.models, name)(weights=None).eval().to(dev, tdt)
            x = torch.randn(b, 3, 224, 224, device=dev, dtype=tdt)
            with torch.inference_mode():
                def fwd():
                    return model(x)

                def fwd_sync():
                    model(x)
                    torch.cuda.synchronize()
                out = fwd()
                row["output_finite"] = bool(torch.isfinite(out).all().item())
                row["eager_wall_us"], row["eager_wall_min_us"] = wall(fwd_sync)
                row["pipelined_us"] = pipelined(fwd, torch.cuda.synchronize)
                s = torch.cuda.Stream()
                s.wait_stream(torch.cuda.current_stream())
                with torch.cuda.stream(s):
                    for _ in range(3):
                        fwd()
                torch.cuda.current_stream().wait_stream(s)
                torch.cuda.synchronize()
                g = torch.cuda.CUDAGraph()
                with torch.cuda.graph(g):
                    gout = fwd()
                for _ in range(W_GRAPH):
                    g.replay()
                torch.cuda.synchronize()
                e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                vals = []
                for _ in range(GRAPH_REPS):
                    e0.record()
                    for _ in range(N_GRAPH):
                        g.replay()
                    e1.record()
                    e1.synchronize()
                    vals.append(e0.elapsed_time(e1) * 1000.0 / N_GRAPH)
                row["graph_us"] = statistics.median(vals)
                del g, gout
        except Exception as e:  # noqa: BLE001
            row["error"] = repr(e)[:300]
            log("ERROR", name, dt, b, repr(e)[:300])
        rows[(name, dt, b)] = row
        log(f"torch {name:12s} {dt} b{b:<3d} eager {row.get('eager_wall_us', float('nan')):.1f} "
            f"graph {row.get('graph_us', float('nan')):.1f} us")

    # onnxruntime wall-clock (before any profiler)
    ort_rows = []
    try:
        import onnx
        import onnxruntime as ort
        meta["onnxruntime"] = ort.__version__
        meta["onnx"] = onnx.__version__
        meta["ort_available_providers"] = ort.get_available_providers()
        log("onnxruntime", ort.__version__, ort.get_available_providers())
        if "CUDAExecutionProvider" not in ort.get_available_providers():
            meta["ort_note"] = "no CUDAExecutionProvider in this onnxruntime: no ORT GPU rows"
        else:
            for name in (["resnet18"] if SMOKE else ["resnet18", "mobilenet_v2", "bert", "gpt2"]):
                row = dict(framework="onnxruntime", model=name, variant="ORT CUDA EP default options",
                           dtype="fp32", gpu_name=meta["gpu_name"], versions=f"onnxruntime {ort.__version__}",
                           date_utc=now(), analyze_hint=f"tests/fixtures/torch/{name}.onnx")
                try:
                    m = random_weights_model(os.path.join(ROOT, "tests", "fixtures", "torch", f"{name}.onnx"))
                    feeds, spec = ort_inputs(m)
                    row["input_spec"] = spec
                    row["batch"] = next(iter(feeds.values())).shape[0]
                    blob = m.SerializeToString()
                    sess = ort.InferenceSession(blob, providers=["CUDAExecutionProvider", "CPUExecutionProvider"])
                    row["ort_providers"] = ";".join(sess.get_providers())
                    out = sess.run(None, feeds)
                    row["output_finite"] = bool(all(np.isfinite(o).all() for o in out))
                    row["eager_wall_us"], row["eager_wall_min_us"] = wall(lambda: sess.run(None, feeds))
                    row["pipelined_us"] = ""
                    row["_blob"] = blob
                    row["_feeds"] = feeds
                except Exception as e:  # noqa: BLE001
                    row["error"] = repr(e)[:300]
                    log("ERROR ort", name, repr(e)[:300])
                ort_rows.append(row)
                log(f"ort {name:12s} wall {row.get('eager_wall_us', float('nan')):.1f} us providers {row.get('ort_providers')}")
    except Exception as e:  # noqa: BLE001
        meta["ort_error"] = repr(e)[:300]
        log("ERROR ort import", repr(e)[:300])

    # pass B: torch profiler
    for (name, dt, b) in cases:
        row = rows[(name, dt, b)]
        if row.get("error"):
            continue
        try:
            tdt = torch.float32 if dt == "fp32" else torch.float16
            torch.manual_seed(0)
            model = getattr(torchvision.models, name)(weights=None).eval().to(dev, tdt)
            x = torch.randn(b, 3, 224, 224, device=dev, dtype=tdt)
            with torch.inference_mode():
                r = profile_calls(lambda: model(x), torch.cuda.synchronize)
            row.update({k: r.get(k) for k in ("kernel_sum_us", "n_kernels", "first_kernel", "prof_grouping")})
            meta["kernel_names"][f"{name}|{dt}|{b}"] = {"names": r.get("names"), "median_us": r.get("median_us")}
        except Exception as e:  # noqa: BLE001
            row["error"] = repr(e)[:300]
        w.row(row)
        log(f"torch {name:12s} {dt} b{b:<3d} ksum {row.get('kernel_sum_us') or float('nan'):.1f} us n {row.get('n_kernels')}")
    for (name, dt, b) in cases:
        if rows[(name, dt, b)].get("error"):
            w.row(rows[(name, dt, b)])

    # onnxruntime profiling
    for row in ort_rows:
        if "_blob" in row:
            try:
                import onnxruntime as ort
                so = ort.SessionOptions()
                so.enable_profiling = True
                so.profile_file_prefix = os.path.join(tempfile.gettempdir(), f"ortprof_{row['model']}")
                sess = ort.InferenceSession(row["_blob"], so, providers=["CUDAExecutionProvider", "CPUExecutionProvider"])
                for _ in range(W_PROF):
                    sess.run(None, row["_feeds"])
                # the first runs of a fresh session include its warm-up; profile a long run and use the last N_PROF
                for _ in range(N_PROF):
                    sess.run(None, row["_feeds"])
                pf = sess.end_profiling()
                ev = _read_json(pf)
                runs = [e for e in ev if e.get("cat") == "Session" and e.get("name") == "model_run"]
                last = runs[-N_PROF:]
                t_lo = last[0]["ts"] if last else 0
                nodes = [e for e in ev if e.get("cat") == "Node" and str(e.get("name", "")).endswith("_kernel_time") and e["ts"] >= t_lo]
                kern = [e for e in ev if e.get("cat") == "Kernel" and e["ts"] >= t_lo]
                nr = max(len(last), 1)
                row["ort_node_time_sum_us"] = sum(e["dur"] for e in nodes) / nr
                row["n_ort_nodes"] = len(nodes) / nr
                row["ort_gpu_kernel_sum_us"] = (sum(e["dur"] for e in kern) / nr) if kern else ""
                ops = Counter((e.get("args") or {}).get("op_name", "?") + "@" + (e.get("args") or {}).get("provider", "?") for e in nodes)
                meta.setdefault("ort_nodes", {})[row["model"]] = {k: v / nr for k, v in ops.items()}
                meta.setdefault("ort_profile_categories", {})[row["model"]] = dict(Counter(e.get("cat") for e in ev))
            except Exception as e:  # noqa: BLE001
                row["error"] = (row.get("error") or "") + " profiling: " + repr(e)[:250]
                log("ERROR ort profiling", row["model"], repr(e)[:300])
        w.row({k: v for k, v in row.items() if not k.startswith("_")})
        log(f"ort {row['model']:12s} node sum {row.get('ort_node_time_sum_us')} gpu kernel sum {row.get('ort_gpu_kernel_sum_us')}")
    meta["smi_after"] = smi()
    with open(os.path.join(OUT, "models_meta_torch.json"), "w") as f:
        json.dump(meta, f, indent=1, default=str)


if __name__ == "__main__":
    part = sys.argv[1] if len(sys.argv) > 1 else "all"
    {"jax": run_jax, "jaxprof": run_jaxprof, "torch": run_torch}[part]()
    log("done", part)
