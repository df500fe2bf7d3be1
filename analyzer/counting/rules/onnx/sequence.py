"""Sequence, optional and string ops.

Sequences and optionals have no ``TensorSpec`` (the IR describes tensors only), so a rule sees
the tensors that enter or leave them, never their contents:

- SequenceConstruct copies its tensors into the sequence: reads them, writes the same bytes.
  SequenceInsert copies the inserted tensor.  SplitToSequence reads its input and writes it as
  the pieces.  SequenceAt copies the element it picks: reads and writes its output's bytes.
  ConcatFromSequence reads every element and writes them joined: the elements hold exactly the
  output's elements, so it reads and writes the output's bytes.  Their output specs come from
  the frontend, which follows the sequence's elements (``frontends/sequences.py``).
- SequenceErase returns the remaining elements (shared, no tensor data moves).  SequenceLength
  and OptionalHasElement read metadata and write a scalar.
- Optional, OptionalGetElement, SequenceEmpty are free (views.py).
- String ops cost 1 vector op per string element (the IR has no string lengths): StringNormalizer
  (case change and stop-word test; its output is written at the upper bound, no string removed,
  when stop words leave its shape open), StringConcat, RegexFullMatch, StringSplit.  A string slot is
  charged 8 bytes (ir.DTYPE_BITS).  StringSplit's token count depends on the data: with an open
  output shape the bytes written are the upper bound ``maxsplit + 1`` tokens per string, or only
  the counts output when there is no maxsplit (noted).
- TfIdfVectorizer: one hash lookup per candidate n-gram, one weight per output.
"""

from __future__ import annotations

from math import prod

from analyzer.counting.cost import Work, register
from analyzer.counting.rules.onnx.common import output, upper_bound_writes

def _present(ins, i: int) -> bool:
    return len(ins) > i and ins[i] is not None


@register("SequenceConstruct")
def sequence_construct(ins, outs, ctx):
    return Work(writes=sum(s.nbytes() for s in ins if s is not None))


@register("SequenceInsert")
def sequence_insert(ins, outs, ctx):
    return Work(writes=ins[1].nbytes(),
                note="counts the inserted tensor; the sequence's other elements are shared")


@register("SequenceAt")
def sequence_at(ins, outs, ctx):
    return Work(reads={0: outs[0].nbytes()})  # the element it copies out


@register("SequenceErase")
def sequence_erase(ins, outs, ctx):
    return Work(note="the remaining elements are shared: no tensor data moves")


@register("SequenceLength", "OptionalHasElement")
def container_query(ins, outs, ctx):
    return Work()  # reads metadata, writes a scalar


@register("SplitToSequence")
def split_to_sequence(ins, outs, ctx):
    return Work(writes=ins[0].nbytes())


@register("ConcatFromSequence")
def concat_from_sequence(ins, outs, ctx):
    return Work(reads={0: outs[0].nbytes()})  # every element, joined into the output


@register("RegexFullMatch")
def regex_full_match(ins, outs, ctx):
    return Work(vector_flops=ins[0].numel())


@register("StringNormalizer")
def string_normalizer(ins, outs, ctx):
    # stop words may remove strings: an open output shape is written at its upper bound (all kept)
    writes, note = upper_bound_writes(outs, lambda i: ins[0].nbytes())
    return Work(vector_flops=ins[0].numel(), writes=writes, note=note, estimate=note is not None)


@register("StringConcat")
def string_concat(ins, outs, ctx):
    return Work(vector_flops=output(outs).numel())


@register("StringSplit")
def string_split(ins, outs, ctx, *, maxsplit=None):
    x = ins[0]
    n = x.numel()
    present = [o for o in outs if o is not None]
    if all(o.is_static for o in present):
        return Work(vector_flops=n)
    counts = n * 8  # int64 token count per string
    if maxsplit is not None:
        return Work(vector_flops=n, writes=n * (maxsplit + 1) * 8 + counts,
                    note="token count depends on the data: bytes written are the maxsplit upper bound",
                    estimate=True)
    return Work(vector_flops=n, writes=counts,
                note="token count depends on the data and has no bound: only the counts output is counted",
                estimate=True)


@register("TfIdfVectorizer")
def tfidf_vectorizer(ins, outs, ctx, *, max_gram_length, min_gram_length, max_skip_count=0,
                     mode="TF"):
    x = ins[0].dims()
    positions = prod(x)
    lookups = positions * (max_gram_length - min_gram_length + 1) * (max_skip_count + 1)
    return Work(vector_flops=lookups + (output(outs).numel() if mode != "TF" else 0))
