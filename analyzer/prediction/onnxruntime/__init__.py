"""What onnxruntime runs for a model, read from onnxruntime itself (the ``onnxruntime`` runtime).

``graph``: onnxruntime's optimized graph at a session level and the map from its fused nodes to
the user's; ``layout``: the NCHWc layout its CPU provider builds; ``record``: both as a
``fusion.FusionRecord`` the prediction lowers. Nothing here times a run.
"""
