"""The prepared models' tokenizer config names its class and added tokens, so a load reads
``tokenizer.json`` once, in Rust, and tokenizes exactly as the class transformers gives the GGUF's
tokenizer (:func:`pairlab.weights._complete_tokenizer_config`)."""

from __future__ import annotations

import json
import shutil

import pytest

from pairlab.weights import prepared_dir

pytestmark = pytest.mark.model  # reads the prepared weights' folder (make prepare fills it)

# The class transformers gives each embedded GGUF's tokenizer (``AutoTokenizer`` with ``gguf_file``).
GGUF_CLASS = {"embedded:gemma3": "GemmaTokenizer", "embedded:smollm2": "TokenizersBackend"}
TEXTS = ["Why is the sky blue?", " leading space and  two spaces", "ünïcode, 🙂 and\n\nnew lines\t",
         "<bos>a special token<eos> written out", "<start_of_turn>user\nhi<end_of_turn>", "<|im_start|>x<|im_end|>",
         ""]


def _json_reads(monkeypatch) -> list[str]:
    """The files transformers parses with Python's json module from now on."""
    import transformers.tokenization_utils_base as base
    import transformers.tokenization_utils_tokenizers as fast

    read: list[str] = []
    load = json.load

    def counted(handle, *args, **kwargs):
        read.append(getattr(handle, "name", "?"))
        return load(handle, *args, **kwargs)

    for module in (base, fast):
        monkeypatch.setattr(module.json, "load", counted)
    return read


@pytest.mark.parametrize("source", sorted(GGUF_CLASS))
def test_a_load_never_parses_tokenizer_json_in_python(source, monkeypatch):
    from transformers import AutoTokenizer

    folder, _ = prepared_dir(source)
    read = _json_reads(monkeypatch)
    AutoTokenizer.from_pretrained(folder)
    assert not [name for name in read if name.endswith("tokenizer.json")], read


@pytest.mark.parametrize("source", sorted(GGUF_CLASS))
def test_the_prepared_tokenizer_tokenizes_as_the_ggufs_own_class(source, tmp_path):
    from transformers import AutoTokenizer

    folder, _ = prepared_dir(source)
    for path in folder.iterdir():
        if path.name.startswith(("tokenizer", "chat_template", "special_tokens")):
            shutil.copy(path, tmp_path / path.name)
    config = json.loads((folder / "tokenizer_config.json").read_text())
    del config["added_tokens_decoder"]  # as transformers saved it
    config["tokenizer_class"] = GGUF_CLASS[source]
    (tmp_path / "tokenizer_config.json").write_text(json.dumps(config))

    prepared, reference = AutoTokenizer.from_pretrained(folder), AutoTokenizer.from_pretrained(tmp_path)
    assert type(reference).__name__ == GGUF_CLASS[source]
    assert prepared.added_tokens_decoder == reference.added_tokens_decoder
    assert len(prepared.added_tokens_decoder) > 0
    for attribute in ("bos_token_id", "eos_token_id", "pad_token_id", "unk_token_id", "all_special_ids",
                      "chat_template"):
        assert getattr(prepared, attribute) == getattr(reference, attribute), attribute
    for text in TEXTS:
        ids = prepared(text)["input_ids"]
        assert ids == reference(text)["input_ids"], text
        for skip in (False, True):
            assert prepared.decode(ids, skip_special_tokens=skip) == reference.decode(ids, skip_special_tokens=skip)
    batch = [TEXTS[0], TEXTS[2]]
    prepared.padding_side = reference.padding_side = "left"
    assert prepared(batch, padding=True)["input_ids"] == reference(batch, padding=True)["input_ids"]
