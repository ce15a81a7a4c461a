"""The files that ship with the weights: what `save_pretrained` copies next to `model.safetensors`.

They import only each other, relatively, and the libraries a `trust_remote_code` user has (torch, transformers,
numpy, numba), because on the Hub this folder is the whole package. Nothing else belongs here.
"""
