"""Beyond one chip: collectives over links (``collectives``), data / tensor / pipeline parallel
step times, speed-up, efficiency and Amdahl's serial fraction (``parallel``), and the per device
count curve of a model (``curve``). Seeds 000 and 002: once work is spread over N devices the
transfer time decides.

This stage reads counts and predictions (a ``Report``) and link data (``hardware_db.links``); it
never sees ONNX or a jaxpr."""
