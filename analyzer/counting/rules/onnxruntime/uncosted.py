"""com.microsoft ops that onnxruntime's tools emit (``onnxruntime.quantization``'s quantize_dynamic
/ quantize_static / matmul_nbits_quantizer, ``onnxruntime.transformers``' optimizer,
convert_generation and convert_to_packing_mode, the runtime's own saved optimized graphs) and that
have no cost rule, each with the reason.  Data only: nothing is registered; such nodes stay
uncosted in reports with the reason as their note, never a silent zero.
``tests/counting/test_ort_emitted_ops.py`` lists the emitted ops and checks each is either
counted or here.
"""

from __future__ import annotations

MS = "com.microsoft"

_SEARCH = ("a generation loop (beam/greedy search, sampling): its work is the decoder sub-graph "
           "times a data-dependent number of steps, and the stopping step is not in the shapes")
_QORDERED = ("CUDA-only ordered-int8 kernels of the transformers optimizer's QOrdered fusion: "
             "no rule yet (their float counterparts Attention, Gelu, LayerNormalization and "
             "MatMul are counted)")
_PACKED = ("packed (padding-removed) variable-length batches: the token count is a runtime "
           "value (cumulative sequence lengths), not a shape")

UNCOSTED: dict[tuple[str, str], str] = {
    **{(MS, op): _SEARCH for op in ("BeamSearch", "GreedySearch", "Sampling", "WhisperBeamSearch")},
    **{(MS, op): _QORDERED for op in ("QOrderedAttention", "QOrderedGelu",
                                      "QOrderedLayerNormalization", "QOrderedMatMul",
                                      "QOrderedLongformerAttention")},
    **{(MS, op): _PACKED for op in ("PackedAttention", "PackedMultiHeadAttention",
                                    "RemovePadding", "RestorePadding")},
    (MS, "PagedAttention"): ("paged KV-cache attention: the context length per sequence is a "
                             "runtime value (block tables), not a shape"),
    (MS, "DecoderMaskedSelfAttention"): ("GPT-2 style decoding attention of convert_generation: "
                                         "no rule yet (DecoderMaskedMultiHeadAttention is counted)"),
    (MS, "RelativePositionBias"): ("T5 relative position bias (a bucketed embedding gather): no "
                                   "rule yet"),
    (MS, "GatedRelativePositionBias"): "gated relative position bias (DeBERTa-style): no rule yet",
    (MS, "DynamicTimeWarping"): ("Whisper word timestamps: a dynamic-programming path whose "
                                 "length depends on the data"),
    (MS, "UnfoldTensor"): "Whisper word timestamps: a strided view of the data; no rule yet",
    (MS, "BitmaskDropout"): ("training-only dropout with a bitmask output (ORT's training "
                             "optimizer): no rule yet"),
    (MS, "LongformerAttention"): ("sliding-window plus global attention whose global token count "
                                  "is a runtime value: no rule yet"),
    (MS, "SparseAttention"): ("block-sparse attention whose layout is a runtime input: no rule "
                              "yet"),
    (MS, "MoE"): "mixture of experts: which experts run is decided by the router at run time",
    (MS, "QMoE"): "quantized mixture of experts: which experts run is decided at run time",
}
