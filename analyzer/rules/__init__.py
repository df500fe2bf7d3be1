"""Cost rules, one module per op family. Importing this package fills ``cost.RULES``."""

from . import elementwise, linear, movement, normalization, pooling, reduce  # noqa: F401
from . import lax_control, lax_elementwise, lax_linear, lax_movement, lax_reduce  # noqa: F401,E501  (JAX primitives, domain "jax")
