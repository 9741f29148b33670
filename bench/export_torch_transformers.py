#!/usr/bin/python3
"""Transformers as users bring them (issue 36, item 3): exported by Debian's PyTorch with
torch.onnx.export at opsets 14 and 17, random weights, so that the benchmarks hold what PyTorch writes
rather than the project's own generators:

- a LLaMA-shaped decoder (4 layers, hidden 512, 8 heads, MLP 1376, vocabulary 8000): RMSNorm written
  out (pow, mean, rsqrt), rotary embeddings as Slice/Neg/Concat, the causal mask from triu and
  masked_fill (Where), Shape/Gather/Unsqueeze/Concat chains from the sequence length, SiLU MLP;
- a BERT-shaped encoder (12 layers, hidden 768, 12 heads, feed-forward 3072, vocabulary 30522):
  LayerNorm (one operator at opset 17, written out at 14), the padding mask from the attention mask,
  GELU (erf), Transposes before the score MatMuls.

usage: /usr/bin/python3 bench/export_torch_transformers.py OUT_DIR
writes OUT_DIR/torch_decoder_opset{14,17}.onnx and OUT_DIR/torch_encoder_opset{14,17}.onnx; run them with
    bench/ref_vs_onnxrt_cli.sh "OUT_DIR/torch_decoder_opset17.onnx:input_ids:[1,128]" \
        "OUT_DIR/torch_encoder_opset17.onnx:input_ids:[1,128]+attention_mask:[1,128]"
"""
import math
import os
import sys

import torch
from torch import nn


class RMSNorm(nn.Module):
    def __init__(self, size, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(size))
        self.eps = eps

    def forward(self, x):
        variance = x.pow(2).mean(-1, keepdim=True)
        return self.weight * (x * torch.rsqrt(variance + self.eps))


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


class DecoderLayer(nn.Module):
    def __init__(self, hidden, heads, intermediate):
        super().__init__()
        self.heads, self.head_size = heads, hidden // heads
        self.q_proj = nn.Linear(hidden, hidden, bias=False)
        self.k_proj = nn.Linear(hidden, hidden, bias=False)
        self.v_proj = nn.Linear(hidden, hidden, bias=False)
        self.o_proj = nn.Linear(hidden, hidden, bias=False)
        self.gate_proj = nn.Linear(hidden, intermediate, bias=False)
        self.up_proj = nn.Linear(hidden, intermediate, bias=False)
        self.down_proj = nn.Linear(intermediate, hidden, bias=False)
        self.input_norm = RMSNorm(hidden)
        self.post_norm = RMSNorm(hidden)

    def forward(self, x, cos, sin, mask):
        batch, seq, hidden = x.shape
        h = self.input_norm(x)

        def heads(t):
            return t.view(batch, seq, self.heads, self.head_size).transpose(1, 2)

        q, k, v = heads(self.q_proj(h)), heads(self.k_proj(h)), heads(self.v_proj(h))
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        scores = torch.matmul(q, k.transpose(2, 3)) / math.sqrt(self.head_size) + mask
        context = torch.matmul(torch.softmax(scores, dim=-1), v)
        x = x + self.o_proj(context.transpose(1, 2).reshape(batch, seq, hidden))
        h = self.post_norm(x)
        return x + self.down_proj(nn.functional.silu(self.gate_proj(h)) * self.up_proj(h))


class Decoder(nn.Module):
    def __init__(self, layers=4, hidden=512, heads=8, intermediate=1376, vocab=8000, max_positions=512):
        super().__init__()
        self.embed = nn.Embedding(vocab, hidden)
        self.layers = nn.ModuleList(DecoderLayer(hidden, heads, intermediate) for _ in range(layers))
        self.norm = RMSNorm(hidden)
        self.lm_head = nn.Linear(hidden, vocab, bias=False)
        head_size = hidden // heads
        inv_freq = 1.0 / (10000 ** (torch.arange(0, head_size, 2).float() / head_size))
        angles = torch.outer(torch.arange(max_positions).float(), inv_freq)
        angles = torch.cat((angles, angles), dim=-1)
        self.register_buffer("cos_table", angles.cos())
        self.register_buffer("sin_table", angles.sin())

    def forward(self, input_ids):
        seq = input_ids.shape[1]
        x = self.embed(input_ids)
        cos, sin = self.cos_table[:seq], self.sin_table[:seq]
        mask = torch.full((seq, seq), float("-inf")).triu(1)
        for layer in self.layers:
            x = layer(x, cos, sin, mask)
        return self.lm_head(self.norm(x))


class EncoderLayer(nn.Module):
    def __init__(self, hidden, heads, intermediate):
        super().__init__()
        self.heads, self.head_size = heads, hidden // heads
        self.query = nn.Linear(hidden, hidden)
        self.key = nn.Linear(hidden, hidden)
        self.value = nn.Linear(hidden, hidden)
        self.output = nn.Linear(hidden, hidden)
        self.attention_norm = nn.LayerNorm(hidden, eps=1e-12)
        self.intermediate = nn.Linear(hidden, intermediate)
        self.out = nn.Linear(intermediate, hidden)
        self.output_norm = nn.LayerNorm(hidden, eps=1e-12)

    def forward(self, x, mask):
        batch, seq, hidden = x.shape

        def heads(t):
            return t.view(batch, seq, self.heads, self.head_size).permute(0, 2, 1, 3)

        q, k, v = heads(self.query(x)), heads(self.key(x)), heads(self.value(x))
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.head_size) + mask
        context = torch.matmul(torch.softmax(scores, dim=-1), v).permute(0, 2, 1, 3).reshape(batch, seq, hidden)
        x = self.attention_norm(x + self.output(context))
        return self.output_norm(x + self.out(nn.functional.gelu(self.intermediate(x))))


class Encoder(nn.Module):
    def __init__(self, layers=12, hidden=768, heads=12, intermediate=3072, vocab=30522, max_positions=512):
        super().__init__()
        self.words = nn.Embedding(vocab, hidden)
        self.positions = nn.Embedding(max_positions, hidden)
        self.types = nn.Embedding(2, hidden)
        self.norm = nn.LayerNorm(hidden, eps=1e-12)
        self.layers = nn.ModuleList(EncoderLayer(hidden, heads, intermediate) for _ in range(layers))

    def forward(self, input_ids, attention_mask):
        seq = input_ids.shape[1]
        positions = torch.arange(seq, dtype=torch.long).unsqueeze(0)
        x = self.norm(self.words(input_ids) + self.positions(positions) + self.types(torch.zeros_like(input_ids)))
        mask = (1.0 - attention_mask[:, None, None, :].to(torch.float32)) * torch.finfo(torch.float32).min
        for layer in self.layers:
            x = layer(x, mask)
        return x


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__.split("\n\n")[-1])
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(0)
    decoder, encoder = Decoder().eval(), Encoder().eval()
    ids = torch.randint(0, 8000, (1, 128))
    mask = torch.ones(1, 128, dtype=torch.long)
    for opset in (14, 17):
        with torch.no_grad():
            torch.onnx.export(decoder, (ids,), os.path.join(out, f"torch_decoder_opset{opset}.onnx"),
                              input_names=["input_ids"], output_names=["logits"], opset_version=opset,
                              dynamic_axes={"input_ids": {0: "batch", 1: "seq"}, "logits": {0: "batch", 1: "seq"}})
            torch.onnx.export(encoder, (ids, mask), os.path.join(out, f"torch_encoder_opset{opset}.onnx"),
                              input_names=["input_ids", "attention_mask"], output_names=["last_hidden_state"],
                              opset_version=opset,
                              dynamic_axes={name: {0: "batch", 1: "seq"}
                                            for name in ("input_ids", "attention_mask", "last_hidden_state")})
        print(f"[I] wrote {out}/torch_decoder_opset{opset}.onnx and torch_encoder_opset{opset}.onnx")


if __name__ == "__main__":
    main()
