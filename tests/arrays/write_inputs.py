#!/usr/bin/python3
"""Writes the binary inputs of tests/test_arrays.cpp into FOLDER, with NumPy and by hand
(safetensors), independently of attntrace; beside each, the same numbers as JSON, so a test can
compare attntrace's trace of the binary file with its trace of the JSON, and compute its own
reference from plain lists.

    write_inputs.py FOLDER
"""
import json
import struct
import sys
from pathlib import Path

import numpy as np

folder = Path(sys.argv[1])

# A small self-attention layer with biases: 4 tokens of 3 numbers, d_k = d_v = 2, W_o 2 × 3.
# Every number is a multiple of 1/8 within ±4, so float16, bfloat16 and float32 hold it exactly.
embeddings = [[0.5, -1.0, 0.25], [1.5, 0.125, -0.75], [-0.5, 2.0, 1.0], [0.875, -0.25, 0.375]]
query = [[0.5, -0.25], [0.125, 0.75], [-1.0, 0.5]]
key = [[-0.375, 0.25], [1.0, -0.5], [0.25, 0.625]]
value = [[1.25, -0.5], [0.75, 0.25], [-0.125, 1.0]]
output = [[0.5, -1.0, 0.25], [0.75, 0.125, -0.5]]
query_bias = [0.25, -0.5]
key_bias = [-0.125, 0.375]
value_bias = [0.5, 0.25]
output_bias = [-0.25, 0.125, 1.0]
arrays = {"embeddings": embeddings, "query": query, "key": key, "value": value, "output": output,
          "query_bias": query_bias, "key_bias": key_bias, "value_bias": value_bias, "output_bias": output_bias}


def write_json(name, document):
    (folder / name).write_text(json.dumps(document, indent=1))


def safetensors(path, tensors, metadata=None):
    """The format by hand: an 8-byte little-endian header size, the JSON header, the data."""
    header, blobs, offset = {}, [], 0
    for name, (dtype, array) in tensors.items():
        data = array.tobytes()
        header[name] = {"dtype": dtype, "shape": list(array.shape), "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    if metadata:
        header["__metadata__"] = metadata
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    Path(path).write_bytes(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def bfloat16(values):
    """float32 values as their upper 16 bits (exact here: every value fits bfloat16)."""
    bits = np.asarray(values, dtype="<f4").view("<u4")
    return (bits >> 16).astype("<u2")


# The layer as JSON, and as arrays in every container and element type.
write_json("layer.json", {"tokens": ["t1", "t2", "t3", "t4"], "embeddings": embeddings,
                          "weights": {k: v for k, v in arrays.items() if k != "embeddings"}})
np.savez(folder / "layer.npz", **{k: np.array(v, dtype="<f8") for k, v in arrays.items()})
np.savez_compressed(folder / "layer_deflated.npz", **{k: np.array(v, dtype="<f4") for k, v in arrays.items()})
np.savez(folder / "layer_f16_be.npz", **{k: np.array(v, dtype=">f2") for k, v in arrays.items()})
safetensors(folder / "layer.safetensors", {k: ("F64", np.array(v, dtype="<f8")) for k, v in arrays.items()})
safetensors(folder / "layer_bf16.safetensors", {k: ("BF16", bfloat16(v)) for k, v in arrays.items()})
safetensors(folder / "layer_f16.safetensors", {k: ("F16", np.array(v, dtype="<f2")) for k, v in arrays.items()})

# The embeddings alone as .npy, in each element type, order and format version.
for name, dtype in [("f8", "<f8"), ("f4", "<f4"), ("f2", "<f2"), ("f8_be", ">f8"), ("f4_be", ">f4")]:
    np.save(folder / f"embeddings_{name}.npy", np.array(embeddings, dtype=dtype))
np.save(folder / "embeddings_fortran.npy", np.asfortranarray(np.array(embeddings, dtype="<f8")))
for version in [(2, 0), (3, 0)]:
    with open(folder / f"embeddings_v{version[0]}.npy", "wb") as f:
        np.lib.format.write_array(f, np.array(embeddings, dtype="<f4"), version=version)

# A JSON input whose numbers are in .npy files beside it.
for k, v in arrays.items():
    np.save(folder / f"{k}.npy", np.array(v, dtype="<f8"))
write_json("layer_refs.json", {"tokens": ["t1", "t2", "t3", "t4"], "embeddings": "embeddings.npy",
                               "weights": {k: f"{k}.npy" for k in arrays if k != "embeddings"}})

# The nn.Linear trap: square weights as PyTorch stores them, (out, in) = the transpose of ours.
square = {"query": [[0.5, -0.25, 0.125], [0.75, 0.25, -0.5], [-1.0, 0.5, 0.375]],
          "key": [[-0.375, 0.25, 1.0], [1.0, -0.5, 0.25], [0.25, 0.625, -0.75]],
          "value": [[1.25, -0.5, 0.25], [0.75, 0.25, -1.0], [-0.125, 1.0, 0.5]]}
write_json("square.json", {"tokens": ["t1", "t2", "t3", "t4"], "embeddings": embeddings, "weights": square})
np.savez(folder / "square_out_in.npz", embeddings=np.array(embeddings),
         **{k: np.array(v).T.copy() for k, v in square.items()})

# An encoder and a decoder for mode bahdanau: d_h = 3, d_s = 2, d_a = 4 (no square weight).
pair = {"encoder_states": [[0.5, -1.0, 0.25], [1.0, 0.5, -0.5], [0.0, 0.75, 1.0]],
        "decoder_states": [[0.25, 0.5], [-0.5, 1.0]],
        "W_a": [[0.5, -0.25, 0.125, 1.0], [0.75, 0.5, -1.0, 0.25]],
        "U_a": [[0.25, 0.5, -0.5, 0.125], [-1.0, 0.25, 0.5, 0.75], [0.5, -0.125, 0.25, -0.5]],
        "v_a": [1.0, -0.5, 0.25, 0.75]}
np.savez(folder / "pair.npz", **{k: np.array(v, dtype="<f8") for k, v in pair.items()})
write_json("pair.json", {"source": {"tokens": ["x1", "x2", "x3"], "states": pair["encoder_states"]},
                         "target": {"tokens": ["y1", "y2"], "states": pair["decoder_states"]},
                         "weights": {"W_a": pair["W_a"], "U_a": pair["U_a"], "v_a": pair["v_a"]}})

# GPT-2's names and layout for two layers of d = 8 (2 heads of 4), with hidden states of 5 tokens.
rng = np.random.default_rng(15)
d, n = 8, 5
gpt2 = {}
for layer in range(2):
    p = f"h.{layer}."
    gpt2[p + "ln_1.weight"] = 1 + 0.1 * rng.standard_normal(d)
    gpt2[p + "ln_1.bias"] = 0.1 * rng.standard_normal(d)
    gpt2[p + "attn.c_attn.weight"] = 0.3 * rng.standard_normal((d, 3 * d))
    gpt2[p + "attn.c_attn.bias"] = 0.1 * rng.standard_normal(3 * d)
    gpt2[p + "attn.c_proj.weight"] = 0.3 * rng.standard_normal((d, d))
    gpt2[p + "attn.c_proj.bias"] = 0.1 * rng.standard_normal(d)
    gpt2[p + "mlp.c_fc.weight"] = 0.3 * rng.standard_normal((d, 4 * d))  # read by nobody: a real file has more
hidden = 2 * rng.standard_normal((n, d))
safetensors(folder / "gpt2.safetensors", {k: ("F32", v.astype("<f4")) for k, v in gpt2.items()},
            {"n_head": "2", "format": "pt"})
np.save(folder / "hidden.npy", hidden.astype("<f4")[None, :, :])  # (1, n, d), as Hugging Face returns it
# The same numbers (as float32 gave them) for the test's own implementation.
write_json("gpt2_reference.json", {"n_head": 2, "hidden_states": hidden.astype("<f4").astype(float).tolist(),
                                   **{k: v.astype("<f4").astype(float).tolist() for k, v in gpt2.items()}})
print("written")
