"""Stage 2, prediction: counts + hardware profiles -> per-kernel times and what bounds them.

``lowering``: per-node counts and profiles -> arrays (engine, dtype, peaks, bandwidth, overhead);
``kernels``: the jitted roofline over (profiles x nodes); ``predict``: runs them and returns
``Prediction`` values.  Never sees ONNX or JAX.
"""
