"""Calibrating a CPU under onnxruntime: synthetic single-op models, the effective cache, the
thread state while the calibration ran."""
