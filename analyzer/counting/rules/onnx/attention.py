"""Fused attention ops: ai.onnx Attention (opset 23+), com.microsoft Attention, MultiHeadAttention,
GroupQueryAttention, DecoderMaskedMultiHeadAttention, QAttention (in quantized.py), rotary
embeddings and linear attention.

Counting convention, per (batch, query head) and per attended (query, key) pair ("score"):

- QKᵀ: 2 x D_head mac_flops per score; PV: 2 x D_v mac_flops per score.  With H_q query heads,
  every product is ``2*B*H_q*S_q*S_kv*D`` (grouped-query attention shares K/V heads but each
  query head still does its own products).
- scaling the scores: 1 vector op per score; an additive mask / attention bias / key padding
  mask: 1 per score; softcap ``c*tanh(s/c)``: 2 vector + 1 transcendental per score.
- softmax over the scores as normalization.py counts Softmax: 4 vector + 1 exp per score.
- projections inside the op (com.microsoft Attention's merged QKV weight): mac_flops as a
  MatMul, the bias add 1 per projected element.  Rotary embedding inside the op: as
  RotaryEmbedding below.
- Causal kernels: when the op's own ``is_causal`` / ``unidirectional`` / ``causal`` attribute is
  set, or the analysis runs with ``causal=True`` (``Options.causal``), the kernel computes only
  the unmasked scores.  Masks are aligned bottom-right (query i sits at key position
  ``i + S_kv - S_q``, as with a KV cache), so per (batch, head) the scores are
  ``S_q*(S_kv-S_q) + S_q*(S_q+1)/2`` for S_kv >= S_q: for S_q == S_kv = S the QKᵀ, softmax and
  PV work is ``S*(S+1)/2`` instead of ``S*S``; a single decode step (S_q = 1) still sees all
  S_kv keys.  A sliding window (``local_window_size``, ``left_window_size``) limits each query to
  the keys inside it.  Other masks (attn_mask, key padding) cost their add but never skip work,
  and a plain MatMul/Softmax chain is never halved: an unfused runtime computes every score.
- RotaryEmbedding: each rotated pair (x1, x2) -> (x1*cos - x2*sin, x1*sin + x2*cos) is 4
  multiplies and 2 adds: 3 vector ops per rotated element; the non-rotated tail is a copy.  Only
  the cos/sin rows at the used positions are read.
- LinearAttention (recurrent form, per token and KV head with a d_k x d_v state S): decay
  ``exp(g)`` (1 transcendental per decay element) and ``S *= exp(g)`` (d_k*d_v vector); delta
  retrieval ``Sᵀk`` (2*d_k*d_v mac) then ``beta*(v - .)`` (2*d_v vector); the rank-1 update
  ``S += k ⊗ u`` (2*d_k*d_v mac); per query head the read-out ``qᵀS`` (2*d_k*d_v mac) and its
  scale (d_v vector).
"""

from __future__ import annotations

from analyzer.counting.cost import Work, register
from analyzer.errors import ShapeError
from analyzer.ir.graph import dtype_bits
from analyzer.counting.rules.onnx.normalization import rms_work

MS = "com.microsoft"
SOFTMAX_VECTOR = 4  # normalization.py: max, subtract, sum, divide per element (+ 1 exp)


def _present(ins, i: int) -> bool:
    return len(ins) > i and ins[i] is not None


def _causal_rows(s_q: int, s_kv: int) -> int:
    """sum over query rows i of the keys j <= i + (s_kv - s_q), clipped to [0, s_kv]."""
    off = s_kv - s_q
    if off >= 0:
        return s_q * off + s_q * (s_q + 1) // 2
    return s_kv * (s_kv + 1) // 2  # the first -off queries see no key


def attended_pairs(s_q: int, s_kv: int, *, causal: bool = False, left: int = -1,
                   right: int = -1) -> int:
    """Scores one (batch, head) computes: query i (at key position i + s_kv - s_q) attends the keys
    j with ``p - left <= j <= p + right`` (-1: unbounded); causal forces ``right = 0``."""
    if causal:
        right = 0
    if right < 0 and left < 0:
        return s_q * s_kv
    if right == 0 and left < 0:
        return _causal_rows(s_q, s_kv)
    import numpy as np

    p = np.arange(s_q, dtype=np.int64) + (s_kv - s_q)
    hi = np.minimum(s_kv - 1, p + right) if right >= 0 else np.full(s_q, s_kv - 1, dtype=np.int64)
    lo = np.maximum(0, p - left) if left >= 0 else np.zeros(s_q, dtype=np.int64)
    return int(np.maximum(hi - lo + 1, 0).sum())


def sdpa(b: int, h_q: int, s_q: int, s_kv: int, d_qk: int, d_v: int, *, causal: bool = False,
         left: int = -1, right: int = -1, bias_terms: int = 0, softcap: float = 0.0,
         row_extra: int = 0) -> Work:
    """Scaled dot-product attention: QKᵀ, scale, ``bias_terms`` additive masks, softcap, softmax, PV."""
    scores = b * h_q * attended_pairs(s_q, s_kv, causal=causal, left=left, right=right)
    mac = 2 * scores * d_qk + 2 * scores * d_v
    vec = scores * (1 + bias_terms + SOFTMAX_VECTOR)
    trans = scores
    fns = (("exp", scores),)
    if softcap:
        vec += 2 * scores
        trans += scores
        fns += (("tanh", scores),)
    vec += row_extra * b * h_q * s_q  # e.g. a softmax sink added to each row's denominator
    note = None
    if causal and s_q > 1:
        note = "causal kernel: only the unmasked scores are computed"
    return Work(mac_flops=mac, vector_flops=vec, transcendentals=trans, note=note, functions=fns)


def _plus(w: Work, *, mac: int = 0, vec: int = 0, trans: int = 0, reads=None, mac_dtype=None,
          note=None, estimate: bool = False) -> Work:
    notes = "; ".join(n for n in (w.note, note) if n) or None
    return Work(mac_flops=w.mac_flops + mac, vector_flops=w.vector_flops + vec,
                transcendentals=w.transcendentals + trans, reads=reads, mac_dtype=mac_dtype, note=notes,
                estimate=w.estimate or estimate, functions=w.functions)


def _causal(flag, options) -> bool:
    return bool(flag) or bool(options is not None and getattr(options, "causal", False))


ROTARY_VECTOR = 3  # per rotated element


def _row_reads(spec, rows: int) -> int:
    """Bytes of ``rows`` rows of a 2-D table (cos/sin caches), at most the whole table."""
    per_row = spec.dims()[-1] * dtype_bits(spec.dtype)
    return min(spec.nbytes(), (rows * per_row + 7) // 8)


# ----------------------------------------------------------------------------- ai.onnx Attention


@register("Attention")
def onnx_attention(ins, outs, ctx, *, is_causal=0, q_num_heads=None, kv_num_heads=None,
                   softcap=0.0, left_window_size=-1, right_window_size=-1):
    # Q, K, V, attn_mask?, past_key?, past_value?, nonpad_kv_seqlen?
    q, k, v = ins[0], ins[1], ins[2]
    if q.rank == 4:
        b, h_q, s_q, d = q.dims()
        s_kv, d_v = k.dim(2), v.dim(3)
    elif q.rank == 3:
        if not q_num_heads or not kv_num_heads:
            raise ShapeError("3-D Attention inputs need the q_num_heads and kv_num_heads attributes")
        b, s_q, hidden = q.dims()
        h_q = q_num_heads
        d = hidden // h_q
        s_kv, d_v = k.dim(1), v.dim(2) // kv_num_heads
    else:
        raise ShapeError(f"Attention expects 3-D or 4-D Q, got {q}")
    if _present(ins, 4):
        s_kv += ins[4].dim(2)  # past_key (B, H_kv, S_past, D): the cache is attended too
    return sdpa(b, h_q, s_q, s_kv, d, d_v, causal=_causal(is_causal, ctx.options),
                left=left_window_size, right=right_window_size,
                bias_terms=int(_present(ins, 3)) + int(_present(ins, 6)), softcap=softcap)


# ----------------------------------------------------------------------------- com.microsoft Attention


@register("Attention", domain=MS)
def ms_attention(ins, outs, ctx, *, num_heads, qkv_hidden_sizes=None, unidirectional=0,
                 do_rotary=0, rotary_embedding_dim=0, past_present_share_buffer=0):
    # input (B, S, D_in), weights (D_in, Hq + Hk + Hv), bias?, mask_index?, past?, attention_bias?,
    # past_sequence_length?
    x, w = ins[0], ins[1]
    b, s, d_in = x.dims()
    total = w.dim(1)
    hq, hk, hv = qkv_hidden_sizes if qkv_hidden_sizes else (total // 3,) * 3
    if hq + hk + hv != total:
        raise ShapeError(f"qkv_hidden_sizes {[hq, hk, hv]} do not sum to the weight's {total} columns")
    d, d_v = hq // num_heads, hv // num_heads
    proj = 2 * b * s * d_in * total
    vec = b * s * total if _present(ins, 2) else 0
    s_kv = s
    note = None
    if _present(ins, 4):
        past = ins[4].dim(3)  # (2, B, H, S_past, D)
        if past_present_share_buffer:
            s_kv = past  # the shared buffer's capacity: an upper bound of the attended length
            note = "past/present share a buffer: its capacity is counted as the attended length"
        else:
            s_kv = past + s
    bias_terms = int(_present(ins, 3)) + int(_present(ins, 5))
    att = sdpa(b, num_heads, s, s_kv, d, d_v, causal=_causal(unidirectional, ctx.options),
               bias_terms=bias_terms)
    if do_rotary:
        rot = rotary_embedding_dim or d
        vec += ROTARY_VECTOR * b * s * num_heads * rot * 2  # Q and K
    return _plus(att, mac=proj, vec=vec, note=note, estimate=note is not None)


# ----------------------------------------------------------------------------- MultiHeadAttention


@register("MultiHeadAttention", domain=MS)
def multi_head_attention(ins, outs, ctx, *, num_heads, unidirectional=0):
    # query, key?, value?, bias?, key_padding_mask?, attention_bias?, past_key?, past_value?,
    # past_sequence_length?, cache_indirection?
    q = ins[0]
    key = ins[1] if _present(ins, 1) else None
    val = ins[2] if _present(ins, 2) else None
    bias_adds = 0
    if q.rank == 5:  # packed QKV (B, S, N, 3, D)
        b, s_q, _n, _three, d = q.dims()
        s_kv, d_v = s_q, d
        hd = num_heads * d
        bias_adds = b * s_q * 3 * hd
        new_kv = True
    else:
        b, s_q, hd = q.dims()
        d = hd // num_heads
        if key is None:
            raise ShapeError("MultiHeadAttention without key needs packed QKV (rank-5 query)")
        if key.rank == 5:  # packed KV (B, S_kv, N, 2, D)
            s_kv, d_v, new_kv = key.dim(1), key.dim(4), True
        elif key.rank == 4:  # cached K/V in BNSH: (B, N, S_kv, D)
            s_kv, d_v, new_kv = key.dim(2), val.dim(3), False
        else:
            s_kv, d_v, new_kv = key.dim(1), val.dim(2) // num_heads, True
        bias_adds = b * s_q * hd + (b * s_kv * (hd + num_heads * d_v) if new_kv else 0)
    if new_kv and _present(ins, 6):
        s_kv += ins[6].dim(2)  # past_key (B, N, S_past, D)
    vec = bias_adds if _present(ins, 3) else 0
    bias_terms = int(_present(ins, 4)) + int(_present(ins, 5))
    att = sdpa(b, num_heads, s_q, s_kv, d, d_v, causal=_causal(unidirectional, ctx.options),
               bias_terms=bias_terms)
    return _plus(att, vec=vec)


@register("DecoderMaskedMultiHeadAttention", domain=MS)
def decoder_masked_mha(ins, outs, ctx, *, num_heads, past_present_share_buffer=0):
    # query (B, 1, H) or packed (B, 1, 2H + Hv), key?, value?, mask_index?, attention_bias?,
    # past_key?, past_value?, past_sequence_length?, beam_width?, cache_indirection?, bias?
    q = ins[0]
    b, s_q, width = q.dims()
    key = ins[1] if _present(ins, 1) else None
    note = None
    if key is not None and key.rank == 4:  # cross attention over cached K/V (B, N, S_kv, D)
        s_kv, d = key.dim(2), key.dim(3)
        d_v = ins[2].dim(3)
        new = b * s_q * num_heads * d
    else:
        hd = width // 3 if key is None else width  # packed QKV assumes equal Q/K/V widths
        d = d_v = hd // num_heads
        s_kv = s_q
        if _present(ins, 5):
            s_kv += ins[5].dim(2)
            if past_present_share_buffer:
                s_kv = ins[5].dim(2)
                note = "past/present share a buffer: its capacity is counted as the attended length"
        new = b * s_q * 3 * hd
    vec = new if _present(ins, 10) else 0
    bias_terms = int(_present(ins, 3)) + int(_present(ins, 4))
    att = sdpa(b, num_heads, s_q, s_kv, d, d_v, causal=False, bias_terms=bias_terms)
    return _plus(att, vec=vec, note=note)


# ----------------------------------------------------------------------------- GroupQueryAttention


@register("GroupQueryAttention", domain=MS)
def group_query_attention(ins, outs, ctx, *, num_heads, kv_num_heads, causal=1, do_rotary=0,
                          local_window_size=-1, softcap=0.0, smooth_softmax=0):
    # query, key?, value?, past_key?, past_value?, seqlens_k, total_sequence_length, cos_cache?,
    # sin_cache?, position_ids?, attention_bias?, head_sink?, k_scale?, v_scale?, q_norm_weight?,
    # k_norm_weight?
    q = ins[0]
    b, s, width = q.dims()
    if _present(ins, 1):
        d = ins[1].dim(2) // kv_num_heads
    else:  # packed QKV: (num_heads + 2 * kv_num_heads) * head_size
        d = width // (num_heads + 2 * kv_num_heads)
    present = outs[1] if len(outs) > 1 and outs[1] is not None else None
    note = None
    if present is not None:
        s_kv = present.dim(2)  # (B, H_kv, total or buffer length, D)
        if _present(ins, 3) and ins[3].dim(2) == s_kv:
            note = "past/present share a buffer: its capacity is counted as the attended length"
        elif _present(ins, 3) and ins[3].dim(2) < s_kv and ins[3].dim(2) + s != s_kv:
            p = ins[3].dim(2)  # a separate past buffer holds exactly the past tokens
            note = (f"the bound dims disagree: past {p} + new {s} tokens != total {s_kv}; "
                    f"counted with the total, {s_kv}")
    elif _present(ins, 3):
        s_kv = ins[3].dim(2) + s
    else:
        s_kv = s
    vec = trans = 0
    reads = {}
    if do_rotary:
        vec += ROTARY_VECTOR * b * s * (num_heads + kv_num_heads) * d  # Q and K heads
        for i in (7, 8):
            if _present(ins, i):
                reads[i] = _row_reads(ins[i], b * s)
    if _present(ins, 14) and _present(ins, 15):  # per-head RMSNorm of Q and K
        rows = b * s * (num_heads + kv_num_heads)
        r = rms_work(rows * d, rows)
        vec += r.vector_flops
        trans += r.transcendentals
    if _present(ins, 12):  # quantized KV cache: dequantize each cached element (1 multiply)
        vec += 2 * b * kv_num_heads * s_kv * d
    att = sdpa(b, num_heads, s, s_kv, d, d, causal=_causal(causal, ctx.options),
               left=local_window_size,
               bias_terms=int(_present(ins, 10)), softcap=softcap,
               row_extra=1 if (smooth_softmax or _present(ins, 11)) else 0)
    return _plus(att, vec=vec, trans=trans, reads=reads or None, note=note, estimate=note is not None)


# ----------------------------------------------------------------------------- rotary embedding


@register("RotaryEmbedding")
def rotary_embedding(ins, outs, ctx, *, num_heads=0, rotary_embedding_dim=0):
    # X (B, H, S, D) or (B, S, H*D), cos_cache, sin_cache, position_ids?
    x = ins[0]
    if x.rank == 4:
        b, _h, s, d = x.dims()
    else:
        b, s, hidden = x.dims()
        if not num_heads:
            raise ShapeError("RotaryEmbedding of a 3-D input needs the num_heads attribute")
        d = hidden // num_heads
    rot = rotary_embedding_dim or d
    rotated = x.numel() // d * rot
    reads = None
    if _present(ins, 3):  # caches indexed by position: only the used rows are read
        reads = {1: _row_reads(ins[1], b * s), 2: _row_reads(ins[2], b * s)}
    return Work(vector_flops=ROTARY_VECTOR * rotated, reads=reads)


@register("RotaryEmbedding", domain=MS)
@register("MRotaryEmbedding", domain=MS)
def ms_rotary_embedding(ins, outs, ctx, *, num_heads=0, rotary_embedding_dim=0):
    # input (B, S, hidden) or (B, N, S, D), position_ids, cos_cache, sin_cache
    x, cos, sin = ins[0], ins[2], ins[3]
    rot = rotary_embedding_dim or 2 * cos.dim(-1)
    if x.rank == 4:
        b, _n, s, d = x.dims()
    else:
        b, s, hidden = x.dims()
        d = hidden // num_heads if num_heads else rot
    rotated = x.numel() // d * rot
    return Work(vector_flops=ROTARY_VECTOR * rotated,
                reads={2: _row_reads(cos, b * s), 3: _row_reads(sin, b * s)})


# ----------------------------------------------------------------------------- linear attention


def _linear_attention(ins, outs, ctx, *, q_num_heads, kv_num_heads, update_rule="gated_delta"):
    # query (B, T, Hq*dk), key (B, T, Hkv*dk), value (B, T, Hkv*dv), past_state?, decay?, beta?
    q, v = ins[0], ins[2]
    b, t, qw = q.dims()
    dk = qw // q_num_heads
    dv = v.dim(2) // kv_num_heads
    steps = b * t * kv_num_heads
    state = dk * dv
    mac = 2 * state * steps  # rank-1 update S += k (x) u
    vec = trans = 0
    if update_rule in ("gated", "gated_delta"):
        if _present(ins, 4):
            trans += ins[4].numel()  # exp of the log-space decay
        vec += state * steps  # S *= exp(g)
    if update_rule in ("delta", "gated_delta"):
        mac += 2 * state * steps  # retrieval S^T k
        vec += 2 * dv * steps  # v - retrieved, * beta
    heads_out = max(q_num_heads, kv_num_heads)
    mac += 2 * state * b * t * heads_out  # read-out q^T S per output head
    vec += dv * b * t * heads_out  # * scale
    return Work(mac_flops=mac, vector_flops=vec, transcendentals=trans)


register("LinearAttention")(_linear_attention)
register("LinearAttention", domain=MS)(_linear_attention)
