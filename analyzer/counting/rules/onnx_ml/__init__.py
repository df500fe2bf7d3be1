"""Rules for the ai.onnx.ml domain (classical ML: scikit-learn exports)."""
