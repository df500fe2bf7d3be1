"""The kernel-time model a prediction uses, and its constants.

``kernel_time``: the per-kernel time of one op class on one profile (roofline terms, the
efficiency curves, tile/wave and cache terms, the fixed floor) with its units; ``op_classes``:
which class a node's kernel belongs to and which class a missing one falls back to;
``constants``: the fitted per-family constants shipped as data in ``hardware_db/efficiency/``,
their schema and provenance.
"""
