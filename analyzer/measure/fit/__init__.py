"""Fitting a class's kernel-time constants to timed rows (shared by the onnxruntime and XLA
calibrations): the fit, its optimizer, its options and its worker processes."""
