"""Small Hugging Face transformers of each family's real structure, for bench/hf_exports.py.

Each family is built from a config with random init (nothing is downloaded): 2 layers, hidden 64,
4 heads (2 key/value heads where the family has GQA), vocabulary 1000. What makes a family's
export different is kept: rotary embeddings (Llama, Mistral, Qwen2, partial rotary in Phi),
grouped-query attention, ALiBi (BLOOM), relative position buckets (T5), learned positions with an
offset (OPT, BART), tied input/output embeddings, causal masks, factorised shared layers (ALBERT),
a patch convolution and class token (ViT).

``matmul_flops(model, batch, seq)`` is the closed form a FLOP count is checked against:
2 x (weight elements of every Linear / Conv1D, times the tokens it is applied to; a pooler
is left out: the exports keep the model's first output only) + for each
attention block 2 x 2 x B x Sq x Sk x (heads x head_dim) (Q K^T and P V), + a ViT patch
convolution's 2 x weight elements x patches. Embedding lookups cost no multiply-adds.
"""

from __future__ import annotations

VOCAB, HIDDEN, HEADS, KV_HEADS, FFN, LAYERS = 1000, 64, 4, 2, 128, 2

# family -> (config class, model class, input kind, attention implementations it supports)
FAMILIES = {
    "bert": ("BertConfig", "BertModel", "enc", ("eager", "sdpa")),
    "roberta": ("RobertaConfig", "RobertaModel", "enc", ("eager", "sdpa")),
    "distilbert": ("DistilBertConfig", "DistilBertModel", "enc", ("eager", "sdpa")),
    "albert": ("AlbertConfig", "AlbertModel", "enc", ("eager", "sdpa")),
    "gpt2": ("GPT2Config", "GPT2LMHeadModel", "dec", ("eager", "sdpa")),
    "gpt_neo": ("GPTNeoConfig", "GPTNeoForCausalLM", "dec", ("eager",)),
    "opt": ("OPTConfig", "OPTForCausalLM", "dec", ("eager", "sdpa")),
    "bloom": ("BloomConfig", "BloomForCausalLM", "dec", ("eager",)),
    "llama": ("LlamaConfig", "LlamaForCausalLM", "dec", ("eager", "sdpa")),
    "mistral": ("MistralConfig", "MistralForCausalLM", "dec", ("eager", "sdpa")),
    "qwen2": ("Qwen2Config", "Qwen2ForCausalLM", "dec", ("eager", "sdpa")),
    "phi": ("PhiConfig", "PhiForCausalLM", "dec", ("eager", "sdpa")),
    "t5": ("T5Config", "T5ForConditionalGeneration", "encdec", ("eager",)),
    "bart": ("BartConfig", "BartForConditionalGeneration", "encdec", ("eager", "sdpa")),
    "vit": ("ViTConfig", "ViTForImageClassification", "img", ("eager", "sdpa")),
}

_KW = {
    "bert": dict(hidden_size=HIDDEN, num_hidden_layers=LAYERS, num_attention_heads=HEADS,
                 intermediate_size=FFN, vocab_size=VOCAB, max_position_embeddings=512),
    "distilbert": dict(dim=HIDDEN, n_layers=LAYERS, n_heads=HEADS, hidden_dim=FFN,
                       vocab_size=VOCAB, max_position_embeddings=512),
    "albert": dict(hidden_size=HIDDEN, num_hidden_layers=LAYERS, num_attention_heads=HEADS,
                   intermediate_size=FFN, vocab_size=VOCAB, embedding_size=32),
    "gpt2": dict(n_embd=HIDDEN, n_layer=LAYERS, n_head=HEADS, n_inner=FFN, vocab_size=VOCAB,
                 n_positions=512),
    "gpt_neo": dict(hidden_size=HIDDEN, num_layers=LAYERS, num_heads=HEADS,
                    intermediate_size=FFN, vocab_size=VOCAB, max_position_embeddings=512,
                    attention_types=[[["global", "local"], 1]], window_size=16),
    "opt": dict(hidden_size=HIDDEN, num_hidden_layers=LAYERS, num_attention_heads=HEADS,
                ffn_dim=FFN, vocab_size=VOCAB, max_position_embeddings=512,
                word_embed_proj_dim=HIDDEN),
    "bloom": dict(hidden_size=HIDDEN, n_layer=LAYERS, n_head=HEADS, vocab_size=VOCAB),
    "llama": dict(hidden_size=HIDDEN, num_hidden_layers=LAYERS, num_attention_heads=HEADS,
                  num_key_value_heads=KV_HEADS, intermediate_size=FFN, vocab_size=VOCAB,
                  max_position_embeddings=512, tie_word_embeddings=False),
    "phi": dict(hidden_size=HIDDEN, num_hidden_layers=LAYERS, num_attention_heads=HEADS,
                intermediate_size=FFN, vocab_size=VOCAB, max_position_embeddings=512,
                partial_rotary_factor=0.5),
    "t5": dict(d_model=HIDDEN, d_kv=16, d_ff=FFN, num_layers=LAYERS, num_decoder_layers=LAYERS,
               num_heads=HEADS, vocab_size=VOCAB, relative_attention_num_buckets=8),
    "bart": dict(d_model=HIDDEN, encoder_layers=LAYERS, decoder_layers=LAYERS,
                 encoder_attention_heads=HEADS, decoder_attention_heads=HEADS,
                 encoder_ffn_dim=FFN, decoder_ffn_dim=FFN, vocab_size=VOCAB,
                 max_position_embeddings=512),
    "vit": dict(hidden_size=HIDDEN, num_hidden_layers=LAYERS, num_attention_heads=HEADS,
                intermediate_size=FFN, image_size=64, patch_size=16, num_labels=10),
}
_KW["roberta"] = _KW["bert"]
_KW["mistral"] = dict(_KW["llama"], sliding_window=16)
_KW["qwen2"] = dict(_KW["llama"], tie_word_embeddings=True)


def build(family: str, attn: str):
    """The family's model, random init, eval(), with ``attn`` as its attention implementation."""
    import torch
    import transformers

    cfg_name, model_name, _, _ = FAMILIES[family]
    torch.manual_seed(0)
    cfg = getattr(transformers, cfg_name)(**_KW[family])
    cfg._attn_implementation = attn
    model = getattr(transformers, model_name)(cfg).eval()
    return model


def example(family: str, batch: int, seq: int) -> dict:
    """Keyword inputs as a user passes them: ids and an attention mask (decoder ids for an
    encoder-decoder); ``seq`` is the image side for ViT."""
    import torch

    kind = FAMILIES[family][2]
    if kind == "img":
        return {"pixel_values": torch.randn(batch, 3, seq, seq)}
    ids = torch.randint(3, VOCAB, (batch, seq))
    kw = {"input_ids": ids, "attention_mask": torch.ones(batch, seq, dtype=torch.int64)}
    if kind == "encdec":
        kw["decoder_input_ids"] = torch.randint(3, VOCAB, (batch, seq))
    return kw


def dynamic_axes(family: str) -> dict:
    """input name -> {axis: dim name}: batch and sequence (image: batch only)."""
    kind = FAMILIES[family][2]
    if kind == "img":
        return {"pixel_values": {0: "batch"}}
    axes = {"input_ids": {0: "batch", 1: "seq"}, "attention_mask": {0: "batch", 1: "seq"}}
    if kind == "encdec":
        axes["decoder_input_ids"] = {0: "batch", 1: "seq"}
    return axes


def _attention_blocks(model) -> int:
    """Attention blocks one forward runs (an encoder-decoder's decoder: self + cross)."""
    c = model.config
    fam = c.model_type
    if fam in ("t5", "bart"):
        return c.num_layers + 2 * c.num_decoder_layers if fam == "t5" else \
            c.encoder_layers + 2 * c.decoder_layers
    return getattr(c, "num_hidden_layers", None) or getattr(c, "n_layer", None) or c.num_layers


def matmul_flops(model, family: str, batch: int, seq: int) -> int:
    """The closed form of the module docstring, for inputs of ``example(family, batch, seq)``."""
    import torch
    from transformers.pytorch_utils import Conv1D

    c = model.config
    kind = FAMILIES[family][2]
    tokens = batch * seq
    if kind == "img":
        patches = (seq // c.patch_size) ** 2
        tokens = batch * (patches + 1)
    reuse = 1
    if family == "albert":   # one layer group's weights, run num_hidden_layers times
        reuse = c.num_hidden_layers // c.num_hidden_groups
    total = 0
    for name, m in model.named_modules():
        if "pooler" in name:
            continue          # the export keeps the first output only: the pooler is pruned
        if isinstance(m, (torch.nn.Linear, Conv1D)):
            n = m.weight.numel()
            t = tokens
            if kind == "img" and name == "classifier":
                t = batch                       # applied to the class token only
            if family == "albert" and "albert_layer_groups" in name:
                n *= reuse
            total += 2 * n * t
        elif isinstance(m, torch.nn.Conv2d):
            total += 2 * m.weight.numel() * batch * (seq // c.patch_size) ** 2
    heads = getattr(c, "num_attention_heads", None) or getattr(c, "num_heads", None) \
        or getattr(c, "n_head", None)
    if family == "t5":
        d_attn = c.num_heads * c.d_kv
    elif family == "distilbert":
        d_attn = c.dim
    else:
        d_attn = (getattr(c, "head_dim", None) or c.hidden_size // heads) * heads
    s = tokens // batch
    total += 4 * batch * s * s * d_attn * _attention_blocks(model)
    return total
