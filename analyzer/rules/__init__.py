"""Cost rules, one module per op family. Importing this package fills ``cost.RULES``."""

from . import elementwise, linear, movement, normalization, pooling, reduce  # noqa: F401
