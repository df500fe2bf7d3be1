"""The search fast path: a checked cache of frontend + engine + lowering for ONNX candidates.

A search scores thousands of candidates built from the same few kinds of node.  Per node, the
real pipeline (``frontends.onnx.load`` -> ``counting.engine.cost_graph`` ->
``prediction.lowering.lower``) computes the same things again and again: the node's output
specs, its engine record, its kernel's row and per-profile entries.  This package keeps what
the real pipeline computed on earlier candidates and reassembles a new candidate from it:

- ``protobuf_walk`` reads a serialized ``ModelProto`` at the wire level, weight bytes skipped
  (the frontend's parsing);
- ``structure`` turns it into the plain structure the cache can vouch for (inputs, constants,
  nodes with the names the frontend gives them, outputs), or None (the frontend's reading);
- ``signatures`` keys each node by its signature (opset header, op, attributes, input specs,
  which inputs are constants and, where a value can steer a shape, the value; the declared
  types of the graph outputs it writes) and keeps the output specs and ``NodeRecord`` the
  engine gave it (the frontend's shape inference and the engine's counting);
- ``learn_node`` builds a one-node model of a node of new signature, so that the real pipeline
  can teach that node alone instead of the whole candidate;
- ``kernel_cache`` keeps each kernel's row and per-profile entries and partitions a candidate
  into kernels as ``fusion.plan`` does (the lowering).

Checks, and what a mismatch does:

- Entry: ``structure.read`` refuses anything outside the plain case (sub-graphs, functions,
  other domains, value_info, symbolic dims, external data, out-of-order or all-constant nodes,
  a tensor defined twice, ...; its module docstring lists them).  A refused candidate, one with
  an opset header or a node signature not learned yet, or a CostModel whose options rule the
  cache out (an onnxruntime group, bound inputs) takes the real pipeline;
  ``CostModel.stats()["slow"]`` counts those candidates per reason.  Unnamed nodes and names
  used twice are no reason: ``structure`` gives them the frontend's own names.
- Learning (``signatures.FastCounter._learn``): an entry is only ever made from a run of the
  real frontend + engine, and only where that run agrees with what ``structure`` read: the
  same node count, node names and ops in the same order, every graph input's and constant's
  spec equal to the frontend's (names as the frontend gives them), nothing folded, decomposed
  (function bodies) or sequence-typed, no fold errors, and static output specs.  On any
  disagreement nothing more is learned from that run (the candidate keeps the real pipeline's
  result; later candidates with such nodes keep taking the real pipeline).  A hit is not
  re-checked: the signature holds what the engine's own per-graph memo (``engine._walk``) keys
  a node record by (op, attributes, input specs, which inputs are constants; the output specs
  follow from the signature) plus what the frontend's shape inference reads (the opset header,
  constant values that can steer a shape, declared output types), and tests/search/test_fast.py
  compares fast counts with the real path NodeCost for NodeCost.
- Lowering (``kernel_cache.KernelRows.harvest``): every candidate lowered in full while the
  kernel cache is live is also rebuilt from the cache (the kernel partition, each kernel's
  features and launches, matrix and vector peaks and fixed cost per profile) and compared with
  ``lowering.lower``'s arrays exactly; one mismatch counts in ``stats["mismatch"]`` and switches
  the kernel cache off for good for that CostModel (every later candidate is lowered in full).
  It applies only to profiles without a calibration under the ``none`` and ``xla`` fusion
  policies (``kernel``, ``xla`` runtimes; the ``eager`` policy's plan of PyTorch's kernels,
  ``prediction.eager_plan``, is lowered in full).
"""
