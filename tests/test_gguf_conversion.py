"""The one-time GGUF conversion: each file parsed once (:func:`pairlab.weights.gguf_read_once`), and
the prepared weights are the GGUF's own tensors, dequantized by gguf itself."""

from __future__ import annotations

import gguf
import numpy as np
import pytest
from safetensors import safe_open

from pairlab.weights import embedded_gguf, gguf_read_once, prepared_dir


def test_inside_a_conversion_a_file_is_parsed_once_and_the_name_table_built_once(tmp_path):
    path = embedded_gguf("smollm2")
    reader, name_map = gguf.GGUFReader, gguf.get_tensor_name_map
    with gguf_read_once():
        first = gguf.GGUFReader(path)
        assert gguf.GGUFReader(str(path)) is first  # the same file, however it is named
        table = gguf.get_tensor_name_map(gguf.MODEL_ARCH.LLAMA, 30)
        assert gguf.get_tensor_name_map(gguf.MODEL_ARCH.LLAMA, 30) is table
        assert gguf.get_tensor_name_map(gguf.MODEL_ARCH.LLAMA, 2) is not table
    # outside it, gguf is as it was: a fresh parse each time
    assert gguf.GGUFReader is reader and gguf.get_tensor_name_map is name_map
    with pytest.raises(RuntimeError), gguf_read_once():
        raise RuntimeError("a failed conversion")
    assert gguf.GGUFReader is reader and gguf.get_tensor_name_map is name_map


@pytest.mark.model  # reads the prepared weights (make prepare converts them)
def test_the_prepared_weights_are_the_ggufs_tensors_dequantized():
    """SmolLM2's file (Gemma's takes 10 s more to parse and goes through the same code)."""
    name, tensors = "smollm2", {"token_embd.weight": "model.embed_tokens.weight",
                                "blk.0.ffn_down.weight": "model.layers.0.mlp.down_proj.weight",
                                "blk.29.attn_v.weight": "model.layers.29.self_attn.v_proj.weight"}
    directory, _ = prepared_dir(f"embedded:{name}")
    by_name = {t.name: t for t in gguf.GGUFReader(embedded_gguf(name)).tensors}
    with safe_open(str(directory / "model.safetensors"), "np") as prepared:
        for gguf_name, hf_name in tensors.items():
            t = by_name[gguf_name]
            expected = gguf.dequantize(t.data, t.tensor_type).reshape(prepared.get_slice(hf_name).get_shape())
            np.testing.assert_array_equal(prepared.get_tensor(hf_name), expected.astype(np.float32), err_msg=gguf_name)
