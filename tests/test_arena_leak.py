"""Identity-leak detection: answers that name a model or its maker."""

from arena.leak import LeakDetector


def test_finds_model_family_and_vendor_names():
    detector = LeakDetector(["smollm2-135m-instruct", "smollm", "Hugging Face", "gemma3-270m"])
    assert detector.find("I am SmolLM, trained by Hugging Face.") == ["smollm", "hugging face"]
    assert detector.find("This is gemma3-270m speaking") == ["gemma3-270m"]
    assert detector.find("As ChatGPT (OpenAI) I cannot") == ["chatgpt", "openai"]
    assert detector.find("Made by Google DeepMind; I am Gemma.") == ["google", "deepmind", "gemma"]


def test_respects_word_boundaries():
    detector = LeakDetector()
    assert detector.find("Heavy metal music and metadata.") == []
    assert detector.find("The llamas grazed; a falconer watched.") == []
    assert detector.find("Meta AI released it") == ["meta ai"]


def test_an_unknown_family_is_not_a_name():
    # core.models.family_of answers "unknown" for unnamed models; the arena drops it.
    assert LeakDetector().find("The answer is unknown.") == []


def test_names_with_a_version_and_makers_hub_handles():
    detector = LeakDetector(["smollm2-135m-instruct", "smollm", "gemma3-270m", "gemma"])
    assert detector.find("I am SmolLM2, trained by HuggingFaceTB.") == ["smollm2", "huggingfacetb"]
    assert detector.find("As Gemma3 and Qwen2.5 agree") == ["gemma3", "qwen2.5"]
    assert detector.find("Llama3 or Llama-3.1-8B, by meta-llama") == ["llama3", "llama-3.1-8b", "meta-llama"]
    assert detector.find("Phi-3 and Yi-34B") == ["phi-3", "yi-34b"]
    # Short names count only with a version; words that merely start with a name never.
    assert detector.find("phishing, a phi angle, yield, the llamas of version 2") == []
