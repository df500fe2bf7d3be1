"""Stage 0, the IR: what every frontend produces and every later stage reads.

``graph``: ``TensorSpec`` (dtype + dims, symbolic dims as strings), ``Node``, ``Graph``;
``dims``: symbolic dim expressions (``'4*s77'``, ``'Min(512, s50)'``) and their evaluation.
"""

from analyzer.ir.graph import DTYPE_BITS, FLOAT_DTYPES, Graph, Node, TensorSpec, unresolved  # noqa: F401
