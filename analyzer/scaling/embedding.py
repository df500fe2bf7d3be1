"""Tied input embedding and LM head (GPT-2, Megatron-LM's default
``share_embeddings_and_output_weights``) found in a Report's dataflow, for pipeline parallel.

What is detected: a word embedding, a ``Gather`` whose data input 0 is a constant 2-D float
table ``[vocab, hidden]`` (the one with the most rows), and a later ``MatMul`` or ``Gemm`` (not
folded) one of whose constant inputs is that same table, directly or through constant-only
``Transpose`` / ``Identity`` / ``Cast`` nodes the frontend folded (a ``[hidden, vocab]`` head
``x @ W^T``, or ``Gemm(transB=1)`` on ``W``). The last such product is the LM head. A head with
its own initializer (an untied model) is not a tie, whatever its shape.

What it means under pipeline parallel (Megatron-LM, ``megatron/core/distributed/
finalize_model_grads.py``): when the embedding's stage and the head's stage sit on different
devices, the last stage keeps its own copy of the table (a parameter there, with gradient and
optimizer state), and after the pipeline flush and the data-parallel gradient sync the two
copies' gradients are all-reduced between the first and the last stage (the "embedding
group"): ``vocab x hidden`` elements (``/ t`` under tensor parallel: the table is
vocab-parallel), one word of the gradient dtype each, exposed whole.
"""

from __future__ import annotations

from dataclasses import dataclass

_THROUGH = ("Transpose", "Identity", "Cast")   # folded constant ops that keep the table's data


@dataclass(frozen=True)
class Tie:
    """The tied table: its tensor name, the embedding's and the head's node indices, and its
    elements (vocab x hidden)."""

    table: str
    embedding: int
    head: int
    elements: int

    def to_dict(self) -> dict:
        return {"table": self.table, "embedding_node": self.embedding, "head_node": self.head,
                "elements": self.elements}


def _table(n) -> int | None:
    """Rows of a Gather's constant 2-D float table (input 0), else None."""
    if n.op != "Gather" or n.status == "folded" or 0 not in n.constant_inputs \
            or 1 in n.constant_inputs or len(n.in_specs) < 2 or n.in_specs[0] is None:
        return None
    spec = n.in_specs[0]
    shape = spec.shape
    if shape is None or len(shape) != 2 or not all(isinstance(d, int) for d in shape) \
            or "float" not in str(spec.dtype):
        return None
    return shape[0]


def find(nodes) -> Tie | None:
    """The ``Tie`` of a Report's nodes (module docstring), or None."""
    root: dict[str, str] = {}
    for n in nodes:   # folded view-like ops of one constant: their output is the input's data
        if n.status == "folded" and n.op in _THROUGH and n.in_names and n.in_names[0] \
                and not n.level:
            src = n.in_names[0]
            for o in n.out_names:
                if o:
                    root[o] = root.get(src, src)
    emb, rows = None, 0
    for i, n in enumerate(nodes):
        r = _table(n)
        if r is not None and not n.level and r > rows:
            emb, rows = i, r
    if emb is None:
        return None
    table = nodes[emb].in_names[0]
    table = root.get(table, table)
    head = None
    for i in range(emb + 1, len(nodes)):
        n = nodes[i]
        if n.op in ("MatMul", "Gemm") and n.status != "folded" and not n.level and any(
                root.get(n.in_names[k], n.in_names[k]) == table for k in n.constant_inputs
                if k < len(n.in_names)):
            head = i
    if head is None:
        return None
    shape = nodes[emb].in_specs[0].shape
    return Tie(table, emb, head, shape[0] * shape[1])
