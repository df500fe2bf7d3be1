"""Frontends turn a model (ONNX file, JAX program) into an ``ir.Graph``."""
