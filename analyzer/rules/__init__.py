"""Cost rules, one module per op family. Importing this package fills ``cost.RULES``."""

from . import control, attention, contrib, elementwise, free, linear, misc, ml, movement, normalization, pooling, quantized, reduce, sampling, sequence  # noqa: F401,E501
from . import lax_control, lax_elementwise, lax_linear, lax_movement, lax_reduce  # noqa: F401,E501  (JAX primitives, domain "jax")
