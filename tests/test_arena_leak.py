"""Identity-leak detection: answers that name a model or its maker."""

from arena.leak import LeakDetector


def test_finds_model_family_and_vendor_names():
    detector = LeakDetector(["smollm2-135m-instruct", "smollm", "Hugging Face", "gemma3-270m"])
    assert detector.find("I am SmolLM, trained by Hugging Face.") == ["smollm", "hugging face"]
    assert detector.find("This is gemma3-270m speaking") == ["gemma3-270m"]
    assert detector.find("As ChatGPT (OpenAI) I cannot") == ["chatgpt", "openai"]
    # "Google DeepMind" spells the hub handle google-deepmind: one name
    assert detector.find("Made by Google DeepMind; I am Gemma.") == ["google deepmind", "gemma"]


def test_respects_word_boundaries():
    detector = LeakDetector()
    assert detector.find("Heavy metal music and metadata.") == []
    assert detector.find("The llamas grazed; a falconer watched.") == []
    assert detector.find("Meta AI released it") == ["meta ai"]


def test_an_unknown_family_is_not_a_name():
    # pairlab.models.family_of answers "unknown" for unnamed models; the arena drops it.
    assert LeakDetector().find("The answer is unknown.") == []


def test_names_with_a_version_and_makers_hub_handles():
    detector = LeakDetector(["smollm2-135m-instruct", "smollm", "gemma3-270m", "gemma"])
    assert detector.find("I am SmolLM2, trained by HuggingFaceTB.") == ["smollm2", "huggingfacetb"]
    assert detector.find("As Gemma3 and Qwen2.5 agree") == ["gemma3", "qwen2.5"]
    assert detector.find("Llama3 or Llama-3.1-8B, by meta-llama") == ["llama3", "llama-3.1-8b", "meta-llama"]
    assert detector.find("Phi-3 and Yi-34B") == ["phi-3", "yi-34b"]
    # Short names count only with a version; words that merely start with a name never.
    assert detector.find("phishing, a phi angle, yield, the llamas of version 2") == []


def test_spellings_that_read_as_a_name_are_found():
    detector = LeakDetector(["smollm2-135m-instruct", "smollm", "Hugging Face", "gemma3-270m", "gemma"])
    spellings = {
        "I am Smol LM.": "smol lm",
        "I am Smol-LM2, a small model.": "smol-lm2",
        "Trained by Hugging-Face.": "hugging-face",
        "Trained by Hugging\u00a0Face.": "hugging face",  # non-breaking space
        "I am S m o l L M.": "s m o l l m",  # letter-spaced
        "I am \uff33\uff4d\uff4f\uff4c\uff2c\uff2d.": "smollm",  # full-width
        "I am G\u0435mm\u0430.": "gemma",  # Cyrillic e and a
        "I am Sm\u200bolLM.": "smollm",  # a zero-width space inside
        "I am **Smol**LM.": "smol**lm",
        "Made by \U0001d406\U0001d428\U0001d428\U0001d420\U0001d425\U0001d41e.": "google",  # mathematical bold
    }
    for text, name in spellings.items():
        assert detector.find(text) == [name], text
    # Separators do not make names out of ordinary words.
    assert detector.find("A command runs; metal, meta data, a phi angle, go ogling, gem mason.") == []


def test_a_prompt_that_names_a_model_flags_the_vote(tmp_path):
    from arena.battles import Arena
    from arena.config import ArenaConfig
    from arena.store import VoteStore
    from pairlab.records import Pair, make_pair_id, write_records

    pairs = tmp_path / "pairs.jsonl"
    write_records(pairs, [Pair(pair_id=make_pair_id("Are you Gemma?", "Yes.", "No."), prompt="Are you Gemma?",
                               model_a="smollm2-135m-instruct", model_b="gemma3-270m", response_a="Yes.",
                               response_b="No.")])
    store = VoteStore(f"sqlite:///{tmp_path / 'votes.db'}")
    try:
        arena = Arena(ArenaConfig(pairs=pairs), store, {})
        battle = arena.serve_pair("voter")
        record = arena.vote("voter", battle.id, "a")
        assert record.meta["identity_leak"] and record.meta["identity_leak_names"]["prompt"] == ["gemma"]
    finally:
        store.close()
