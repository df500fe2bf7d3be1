"""Measurement: calibrating this machine and running a real runtime beside a prediction.

A stage above the API (it analyses synthetic models with ``analyzer.analyze`` and predicts them
to fit constants), called by the CLI (``analyze hw calibrate``, ``--measure``) and by ``bench/``;
``analyzer.prediction`` never imports it.

- ``calibrate``: ``calibrate(runtime="onnxruntime"|"xla")`` -> a profile document for this CPU.
- ``cpu/``: the onnxruntime calibration's synthetic models (``models``), the cold-cache
  measurement (``cold_cache``) and the thread-state probe (``thread_state``).
- ``xla/``: JAX programs timed with XLA's CPU backend (``rows``), their calibration
  (``calibrate``) and fit (``fit``).
- ``fit/``: fitting a class's kernel-time constants to timed rows (``class_fit``, with
  ``nelder_mead``), the fit options (``options``) and the worker processes (``worker``).
- ``onnxruntime``: timing a model's kernels and ``session.run`` with onnxruntime's profiler.
- ``run``: ``--measure``: a model run with onnxruntime, set beside its Report's prediction.
- ``onnx_build``: the small ONNX builders the synthetic models use.
"""
