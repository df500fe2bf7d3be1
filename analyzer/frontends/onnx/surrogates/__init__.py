"""Output shapes for ops ONNX shape inference cannot type, from equivalent standard-op graphs.

``emit``: the small graph builder; ``contrib``/``contrib_ops``/``attention``: onnxruntime's
``com.microsoft`` ops; ``ml``: the ``ai.onnx.ml`` ops (scikit-learn exports).
"""
