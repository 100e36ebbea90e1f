#!/usr/bin/python3
"""Writes the binary example inputs in this folder (docs/input-format.md, docs/from-pytorch.md)
with NumPy, and safetensors by hand. Run from anywhere: python3 data/arrays/make_arrays.py

  journey.npz             a self-attention layer with biases for "your journey starts here",
                          weights as PyTorch's nn.Linear stores them: (out, in)
  journey_embeddings.npy  its embeddings alone, float32, named by journey.json
  toy_gpt2.safetensors    two layers with GPT-2's tensor names and layout (d = 8, 2 heads of 4)
                          and hidden states for 5 tokens, made up from a seeded generator
"""
import json
import struct
from pathlib import Path

import numpy as np

here = Path(__file__).resolve().parent

# Numbers with few digits, so a trace of them is easy to follow by hand.
embeddings = np.array([[1.0, 0.0, 1.0], [0.5, 1.0, 0.0], [0.0, 0.5, 1.0], [1.0, 1.0, 0.5]])
w_q = np.array([[0.5, -0.5], [1.0, 0.0], [0.0, 1.0]])   # (in, out): X·W_q
w_k = np.array([[1.0, 0.5], [0.0, 1.0], [-0.5, 0.0]])
w_v = np.array([[0.5, 0.0], [0.0, 0.5], [1.0, 1.0]])
b_q, b_k, b_v = np.array([0.1, -0.1]), np.array([0.0, 0.2]), np.array([0.5, 0.0])
# nn.Linear keeps weight as (out, in) and computes x·Wᵀ + b: what torch would save.
np.savez(here / "journey.npz", embeddings=embeddings.astype("<f4"),
         query=np.ascontiguousarray(w_q.T, dtype="<f4"), key=np.ascontiguousarray(w_k.T, dtype="<f4"),
         value=np.ascontiguousarray(w_v.T, dtype="<f4"),
         query_bias=b_q.astype("<f4"), key_bias=b_k.astype("<f4"), value_bias=b_v.astype("<f4"))
np.save(here / "journey_embeddings.npy", embeddings.astype("<f4"))

# GPT-2's names: h.L.ln_1.weight/bias, h.L.attn.c_attn.weight (d × 3d: q, k, v side by side,
# used as x·W) and .bias, h.L.attn.c_proj.weight/bias; plus hidden_states (n × d).
rng = np.random.default_rng(2026)
d, n = 8, 5
tensors = {}
for layer in range(2):
    p = f"h.{layer}."
    tensors[p + "ln_1.weight"] = 1 + 0.1 * rng.standard_normal(d)
    tensors[p + "ln_1.bias"] = 0.1 * rng.standard_normal(d)
    tensors[p + "attn.c_attn.weight"] = 0.4 * rng.standard_normal((d, 3 * d))
    tensors[p + "attn.c_attn.bias"] = 0.1 * rng.standard_normal(3 * d)
    tensors[p + "attn.c_proj.weight"] = 0.4 * rng.standard_normal((d, d))
    tensors[p + "attn.c_proj.bias"] = 0.1 * rng.standard_normal(d)
tensors["hidden_states"] = 2 * rng.standard_normal((n, d))

header, blobs, offset = {}, [], 0
for name, array in tensors.items():
    data = np.round(array, 3).astype("<f4").tobytes()
    header[name] = {"dtype": "F32", "shape": list(array.shape), "data_offsets": [offset, offset + len(data)]}
    blobs.append(data)
    offset += len(data)
header["__metadata__"] = {"n_head": "2"}
text = json.dumps(header).encode()
text += b" " * (-len(text) % 8)
(here / "toy_gpt2.safetensors").write_bytes(struct.pack("<Q", len(text)) + text + b"".join(blobs))
