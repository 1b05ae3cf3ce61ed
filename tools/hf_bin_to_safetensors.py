#!/usr/bin/python3
"""Rewrite a Hugging Face pytorch_model.bin as a safetensors file with the same tensor names.

    /usr/bin/python3 tools/hf_bin_to_safetensors.py FOLDER/pytorch_model.bin OUT.safetensors

`stepformer-cli import-hf FOLDER --out MODEL.safetensors` runs this for a Marian folder that has only
pytorch_model.bin (older opus-mt uploads), into a temporary folder of its own, and then reads the folder with
the result as its model.safetensors. Needs Debian's python3-torch (run it with /usr/bin/python3); the app and the
CLI never need Python otherwise.

The checkpoint is loaded with weights_only=True (tensors and containers only: a pickle that would run code is
refused). Every tensor is written as it is stored when it is F32, F16 or BF16 (others are refused with their
name), contiguous, little-endian; tensors that share storage (tied embeddings) are written once each under every
name they have. The output is written to a temporary file beside OUT and renamed, so OUT is whole or absent.
"""
import json
import os
import struct
import sys

DTYPES = {}


def fail(message):
    print(f"hf_bin_to_safetensors: {message}", file=sys.stderr)
    sys.exit(1)


def main(argv):
    if len(argv) != 3:
        fail("usage: hf_bin_to_safetensors.py FOLDER/pytorch_model.bin OUT.safetensors")
    source, out = argv[1], argv[2]
    try:
        import torch
    except ImportError:
        fail("needs PyTorch: install Debian's python3-torch (apt-get install python3-torch) and run with /usr/bin/python3")
    DTYPES.update({torch.float32: "F32", torch.float16: "F16", torch.bfloat16: "BF16"})
    if not os.path.isfile(source):
        fail(f"'{source}' is not a file")
    try:
        state = torch.load(source, map_location="cpu", weights_only=True)
    except Exception as e:  # a damaged or hostile pickle: say which file, and why
        fail(f"'{source}' is not a PyTorch checkpoint this can read safely: {e}")
    if isinstance(state, dict) and "state_dict" in state and isinstance(state["state_dict"], dict):
        state = state["state_dict"]
    if not isinstance(state, dict) or not state:
        fail(f"'{source}' holds no dictionary of tensors")
    header, blobs, offset = {}, [], 0
    for name, tensor in state.items():
        if not isinstance(tensor, torch.Tensor):
            fail(f"'{source}': entry '{name}' is not a tensor")
        if tensor.dtype not in DTYPES:
            fail(f"'{source}': tensor '{name}' has dtype {tensor.dtype} (F32, F16 or BF16 are read)")
        t = tensor.detach().contiguous()
        data = t.view(torch.uint8).numpy().tobytes() if t.numel() else b""
        header[name] = {"dtype": DTYPES[t.dtype], "shape": list(t.shape), "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    header["__metadata__"] = {"format": "pt", "converted_from": os.path.basename(source)}
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    temporary = f"{out}.tmp-{os.getpid()}"
    try:
        with open(temporary, "wb") as f:
            f.write(struct.pack("<Q", len(text)))
            f.write(text)
            for b in blobs:
                f.write(b)
            f.flush()
            os.fsync(f.fileno())
        os.rename(temporary, out)
    except OSError as e:
        if os.path.exists(temporary):
            os.remove(temporary)
        fail(f"cannot write '{out}': {e}")
    print(f"hf_bin_to_safetensors: {len(state)} tensors, {offset} bytes -> {out}")


if __name__ == "__main__":
    main(sys.argv)
