"""Training mode: a forward Report turned into one training step (forward + backward +
optimizer update: counts, times per profile, memory footprint and fit) in ``step``; the
backward as the kernels PyTorch's autograd launches (``backward_rules``, ``backward_plan``,
priced in ``backward_time``); the global batch of an ONNX model (``batch``)."""
