"""Shape surrogates of the onnxruntime attention ops (see ``contrib_shapes``): Attention,
QAttention, MultiHeadAttention, DecoderMaskedMultiHeadAttention, GroupQueryAttention and
LinearAttention, with their optional present K/V and attention-probability outputs."""

from __future__ import annotations

from typing import Callable

from analyzer.frontends.onnx.surrogates.emit import input_dtype, Emit, outs_like


# ----------------------------------------------------------------------------- attention


def _attention(e: Emit):
    # input (B, S, D_in), weights (D_in, Hq + Hk + Hv), bias?, mask_index?, past (2, B, N, P, Dk)?
    x, w = e.inp(0), e.inp(1)
    past = e.inp(8) if e.n.op_type == "QAttention" else e.inp(4)
    heads = e.attr("num_heads")
    sizes = e.attr("qkv_hidden_sizes")
    if sizes:
        hk, hv = int(sizes[1]), int(sizes[2])
        head_k = e.const([hk // heads])
    else:
        hv = e.div(e.dim(w, 1), 3)
        head_k = e.div(hv, heads)
    e.fill(e.out(0), e.dims(x, 0, 2), hv)
    if e.out(1):
        if past and e.attr("past_present_share_buffer", 0):
            e.like(e.out(1), past)
        elif past:
            e.fill(e.out(1), e.dims(past, 0, 3), e.add(e.dim(past, 3), e.dim(x, 1)), e.dim(past, 4))
        else:
            e.fill(e.out(1), 2, e.dim(x, 0), heads, e.dim(x, 1), head_k)
    t = input_dtype(e, 2) if e.n.op_type == "QAttention" else input_dtype(e, 0)
    return outs_like(e, t)


def _mha(e: Emit):
    q, k, v, past = e.inp(0), e.inp(1), e.inp(2), e.inp(6)
    heads = e.attr("num_heads")
    rq = e.info.rank(q)
    rk = e.info.rank(k) if k else None
    if rq is None or (k and rk is None):
        return None
    if rq == 5:  # packed QKV (B, S, N, 3, D)
        head = head_v = e.dim(q, 4)
        kv_len = e.dim(q, 1)
    else:
        head = e.div(e.dim(q, 2), heads)
        if rk == 5:  # packed KV (B, L, N, 2, D)
            head_v, kv_len = e.dim(k, 4), e.dim(k, 1)
        elif rk == 4:  # K/V already in BNSH (B, N, L, D)
            head, head_v, kv_len = e.dim(k, 3), e.dim(v, 3), e.dim(k, 2)
        elif rk == 3:
            head_v, kv_len = e.div(e.dim(v, 2), heads), e.dim(k, 1)
        else:
            return None
    e.fill(e.out(0), e.dims(q, 0, 2), e.mul(head_v, heads))
    if rk == 4 or not past:
        total = kv_len
    elif e.inp(8):  # past_sequence_length given: past and present share a buffer
        total = e.dim(past, 2)
    else:
        total = e.add(e.dim(past, 2), kv_len)
    b = e.dim(q, 0)
    e.fill(e.out(1), b, heads, total, head)
    e.fill(e.out(2), b, heads, total, head_v)
    e.fill(e.out(3), b, heads, e.dim(q, 1), total)
    return outs_like(e, input_dtype(e, 0))


def _decoder_masked_mha(e: Emit):
    q, k, v, past = e.inp(0), e.inp(1), e.inp(2), e.inp(5)
    heads = e.attr("num_heads")
    rk = e.info.rank(k) if k else None
    if k and rk is None:
        return None
    if rk == 4:  # cross attention over cached K/V (B, N, L, D)
        head, hv, total = e.dim(k, 3), e.mul(e.dim(v, 3), heads), e.dim(k, 2)
    else:
        hv = e.dim(v, 2) if k else e.div(e.dim(q, 2), 3)  # packed QKV: equal Q/K/V widths
        head = e.div(e.dim(q, 2) if k else hv, heads)
        if past and e.attr("past_present_share_buffer", 0):
            total = e.dim(past, 2)
        elif past:
            total = e.add(e.dim(past, 2), e.dim(q, 1))
        else:
            total = e.dim(q, 1)
    e.fill(e.out(0), e.dims(q, 0, 2), hv)
    b = e.dim(q, 0)
    if rk != 4:
        e.fill(e.out(1), b, heads, total, head)
        e.fill(e.out(2), b, heads, total, e.div(hv, heads))
    e.fill(e.out(3), b, heads, e.dim(q, 1), total)
    return outs_like(e, input_dtype(e, 0))


def _gqa(e: Emit):
    q, k, past = e.inp(0), e.inp(1), e.inp(3)
    heads, kv_heads = e.attr("num_heads"), e.attr("kv_num_heads")
    if k:
        head = e.div(e.dim(k, 2), kv_heads)
        e.like(e.out(0), q)
        kv_len = e.dim(k, 1)
    else:  # packed QKV: (heads + 2 * kv_heads) * head_size
        head = e.div(e.dim(q, 2), heads + 2 * kv_heads)
        e.fill(e.out(0), e.dims(q, 0, 2), e.mul(head, heads))
        kv_len = e.dim(q, 1)
    total_value = e.info.scalar(e.inp(6)) if e.inp(6) else None
    past_len = e.info.dim(past, 2) if past else 0
    if total_value is not None and past_len is not None:
        total = max(past_len, total_value)
    elif past:
        total = e.add(e.dim(past, 2), kv_len)
    else:
        total = kv_len
    b = e.dim(q, 0)
    e.fill(e.out(1), b, kv_heads, total, head)
    e.fill(e.out(2), b, kv_heads, total, head)
    e.fill(e.out(3), b, heads, e.dim(q, 1), total)
    t = input_dtype(e, 0)
    cache = input_dtype(e, 3) or t
    return [t, cache, cache, t]


def _linear_attention(e: Emit):
    q, v, past = e.inp(0), e.inp(2), e.inp(3)
    hq, hkv = e.attr("q_num_heads"), e.attr("kv_num_heads")
    if not hq or not hkv:
        return None
    dv = e.div(e.dim(v, 2), hkv)
    e.fill(e.out(0), e.dims(q, 0, 2), e.mul(dv, max(hq, hkv)))
    if past:
        e.like(e.out(1), past)
    else:
        e.fill(e.out(1), e.dim(q, 0), hkv, e.div(e.dim(q, 2), hq), dv)
    return outs_like(e, input_dtype(e, 0))


SURROGATES: dict[str, Callable] = {
    "Attention": _attention, "QAttention": _attention, "MultiHeadAttention": _mha,
    "DecoderMaskedMultiHeadAttention": _decoder_masked_mha, "GroupQueryAttention": _gqa,
    "LinearAttention": _linear_attention,
}
