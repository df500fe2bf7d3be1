"""Training mode: a forward Report turned into one training step (forward + backward +
optimizer update: counts, times per profile, memory footprint and fit) in ``step``, and the
global batch of an ONNX model (``batch``)."""
