"""Stage 1, counting: ``ir.Graph`` -> one exact ``NodeCost`` per node.

``cost``: the ``Cost``/``Work``/``Plan`` records and the one rule registry; ``rules/``: the
rules, one package per op domain (``onnx``, ``onnx_ml``, ``onnxruntime``, ``jax``); ``engine``:
applies the rules, splits bytes into classes, counts params; ``provenance``: where an unknown
value or shape comes from, for error messages.  Rules never see hardware.
"""
