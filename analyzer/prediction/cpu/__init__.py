"""The CPU terms of a prediction on a calibrated profile.

``cold``: what a model whose weights overflow the last-level cache pays per run; ``epilogue``:
activations fused into the kernel before them; ``host``: facts about the analysing machine a
calibrated profile is checked against (vector extension, caches); ``thread_notes``: warnings a
calibration's thread state leaves on its predictions. Measuring these figures is
``analyzer.measure``'s job.
"""
