"""The ONNX frontend: file -> ``ir.Graph`` with every shape resolved.

``load`` (the entry point) reads the file without its weight data (``read``), binds inputs and
dims, runs ONNX shape inference and constant folding in rounds (``shapes``, ``fold``), builds the
sub-graphs of control-flow nodes (``subgraphs``, ``bodies``, ``sequences``) and decomposes function
ops through their bodies (``functions``).  Ops ONNX cannot type (onnxruntime contrib, ai.onnx.ml)
get their output shapes from standard-op surrogates in ``surrogates/``.
"""
