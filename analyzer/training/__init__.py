"""Training mode: a forward Report turned into one training step (forward + backward +
optimizer update: counts and memory footprint in ``counts``, times per profile and the memory
fit in ``step``); the backward as the kernels PyTorch's autograd launches (``backward_rules``
and ``backward_movement``, ``backward_plan``, priced in ``backward_time``); the global batch of
an ONNX model (``batch``)."""
