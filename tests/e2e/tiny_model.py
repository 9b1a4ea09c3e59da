"""A GGUF model small enough to run in milliseconds, built at test time: random weights, tiny
dimensions, and a real tokenizer vocabulary read from a vocab-only GGUF shipped in the llama.cpp source.

The template's markers become special tokens of their own, as real models have them, so that a logit
bias on a trigger token can make even a random model start a call under a lazy grammar."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import numpy as np
from gguf import GGUFReader, GGUFValueType, GGUFWriter

EMBEDDING = 32
LAYERS = 1
HEADS = 2
FEED_FORWARD = 64
CONTROL = 3  # llama.cpp's token type for special tokens


def _field_value(reader: GGUFReader, key: str):
    field = reader.fields[key]
    if field.types[0] == GGUFValueType.ARRAY:
        if field.types[-1] == GGUFValueType.STRING:
            return [bytes(field.parts[i]).decode("utf-8") for i in field.data]
        return [int(field.parts[i][0]) for i in field.data]
    value = field.parts[field.data[0]]
    return bytes(value).decode("utf-8") if field.types[0] == GGUFValueType.STRING else value[0].item()


@lru_cache(maxsize=4)
def _read_vocab(path: str) -> dict:
    """The tokenizer fields of a vocab-only GGUF (read once per run: the merges list is long)."""
    reader = GGUFReader(path)
    return {key: _field_value(reader, key) for key in reader.fields if key.startswith("tokenizer.ggml.")}


def build_model(
    vocab_gguf: Path, out: Path, special_tokens: list[str], chat_template: str, *, seed: int = 0
) -> dict[str, int]:
    """Write the model to ``out``; return the id of every special token (added or already there)."""
    vocab = _read_vocab(str(vocab_gguf))
    tokens = list(vocab["tokenizer.ggml.tokens"])
    types = list(vocab["tokenizer.ggml.token_type"])
    index = {token: i for i, token in enumerate(tokens)}
    for text in special_tokens:
        if text not in index:
            index[text] = len(tokens)
            tokens.append(text)
            types.append(CONTROL)
        else:
            types[index[text]] = CONTROL
    writer = GGUFWriter(str(out), "llama")
    writer.add_name("template-analyzer tiny test model")
    writer.add_context_length(4096)
    writer.add_embedding_length(EMBEDDING)
    writer.add_block_count(LAYERS)
    writer.add_feed_forward_length(FEED_FORWARD)
    writer.add_head_count(HEADS)
    writer.add_head_count_kv(HEADS)
    writer.add_layer_norm_rms_eps(1e-5)
    writer.add_rope_dimension_count(EMBEDDING // HEADS)
    writer.add_file_type(0)
    writer.add_tokenizer_model(vocab["tokenizer.ggml.model"])
    writer.add_tokenizer_pre(vocab["tokenizer.ggml.pre"])
    writer.add_token_list(tokens)
    writer.add_token_types(types)
    if "tokenizer.ggml.merges" in vocab:
        writer.add_token_merges(vocab["tokenizer.ggml.merges"])
    for key, add in (
        ("tokenizer.ggml.eos_token_id", writer.add_eos_token_id),
        ("tokenizer.ggml.bos_token_id", writer.add_bos_token_id),
    ):
        if key in vocab:
            add(vocab[key])
    writer.add_chat_template(chat_template)
    rng = np.random.default_rng(seed)

    def weights(*shape: int) -> np.ndarray:
        return (rng.standard_normal(shape) * 0.02).astype(np.float32)

    n_vocab = len(tokens)
    writer.add_tensor("token_embd.weight", weights(n_vocab, EMBEDDING))
    writer.add_tensor("output_norm.weight", np.ones(EMBEDDING, dtype=np.float32))
    writer.add_tensor("output.weight", weights(n_vocab, EMBEDDING))
    for layer in range(LAYERS):
        prefix = f"blk.{layer}."
        writer.add_tensor(prefix + "attn_norm.weight", np.ones(EMBEDDING, dtype=np.float32))
        for name in ("attn_q", "attn_k", "attn_v", "attn_output"):
            writer.add_tensor(prefix + name + ".weight", weights(EMBEDDING, EMBEDDING))
        writer.add_tensor(prefix + "ffn_norm.weight", np.ones(EMBEDDING, dtype=np.float32))
        writer.add_tensor(prefix + "ffn_gate.weight", weights(FEED_FORWARD, EMBEDDING))
        writer.add_tensor(prefix + "ffn_up.weight", weights(FEED_FORWARD, EMBEDDING))
        writer.add_tensor(prefix + "ffn_down.weight", weights(EMBEDDING, FEED_FORWARD))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return {text: index[text] for text in special_tokens}
