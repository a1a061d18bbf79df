"""The engine's seeded draw on a GPU: Gumbel-max over uniforms hashed from (seed, position, token).

The draw runs inside a captured CUDA graph there, so it is a pure function of its inputs; these
tests run it on CPU, where the functions are the same. A planted distribution must be recovered,
a row's draw must not move with its neighbours (the confounder batching brings), and a greedy
row must come out untouched (no effect where none is asked for).
"""

import math
import threading

import pytest
import torch
from scipy import stats

from pairlab.backends.base import GenerationParams
from pairlab.backends.batching import counted_processors, draw_key, gumbel_noise


def drawn(scores: torch.Tensor, keys: list[int]) -> list[int]:
    noise = gumbel_noise(torch.tensor(keys, dtype=torch.int32), scores.size(-1))
    return (scores + noise).argmax(dim=-1).tolist()


def test_draws_follow_the_planted_distribution():
    probs = torch.tensor([0.5, 0.3, 0.15, 0.05] + [0.0] * 60)
    n = 20000
    keys = [draw_key(seed, position) for seed in range(n // 4) for position in range(4)]
    scores = probs.log().expand(n, -1)
    counts = torch.bincount(torch.tensor(drawn(scores, keys)), minlength=64)
    assert counts[4:].sum() == 0  # a token of probability 0 is never drawn
    chi2 = stats.chisquare(counts[:4].numpy(), (probs[:4] * n).numpy())
    assert chi2.pvalue > 1e-3, counts[:4]


def test_a_flat_distribution_gives_every_token_alike_over_a_large_vocabulary():
    vocab, n = 1000, 20000
    tokens = drawn(torch.zeros(n, vocab), [draw_key(7, p) for p in range(n)])
    counts = torch.bincount(torch.tensor(tokens), minlength=vocab)
    assert stats.chisquare(counts.numpy()).pvalue > 1e-3


def test_a_rows_draw_depends_on_its_key_alone_not_on_the_batch_beside_it():
    scores = torch.randn(1, 500).expand(3, -1).contiguous()
    a, b, c = draw_key(1, 0), draw_key(2, 0), draw_key(1, 1)
    alone = drawn(scores[:1], [a])[0]
    assert drawn(scores, [b, a, c])[1] == alone
    assert drawn(scores, [a, c, b])[0] == alone
    # A different seed, or the next position of the same seed, draws afresh.
    many = drawn(torch.zeros(64, 500), [draw_key(s, 0) for s in range(64)])
    assert len(set(many)) > 40
    assert len({draw_key(1, p) for p in range(1000)} | {draw_key(s, 0) for s in range(1000)}) == 1999


def test_keys_are_non_negative_int32_and_a_negative_key_is_a_greedy_row():
    keys = [draw_key(seed, position) for seed in (0, 1, 2**31 - 1, 2**40) for position in (0, 5, 10**6)]
    assert all(0 <= k < 2**31 for k in keys)
    processors = counted_processors()
    scores = torch.randn(2, 300)
    args = torch.full((3, 2), -1, dtype=torch.int32)
    processors.fill_defaults(args)
    ids = torch.zeros(2, dtype=torch.long)
    assert torch.equal(processors(ids, scores.clone(), args).argmax(-1), scores.argmax(-1))


def test_top_p_and_temperature_apply_per_row_before_the_draw():
    # Row 0: top-p 0.5 keeps only the most likely token; row 1: top-p 1 at temperature 1 draws widely.
    probs = torch.tensor([0.45, 0.35, 0.2])
    n = 400
    scores = probs.log().expand(2 * n, -1).contiguous()
    args = torch.empty((3, 2 * n), dtype=torch.int32)
    args[0] = torch.tensor([1.0] * (2 * n)).view(torch.int32)
    args[1] = torch.tensor([0.3] * n + [1.0] * n).view(torch.int32)
    args[2] = torch.tensor([draw_key(s, 0) for s in range(2 * n)], dtype=torch.int32)
    out = counted_processors()(torch.zeros(2 * n, dtype=torch.long), scores, args).argmax(-1)
    assert set(out[:n].tolist()) == {0}
    assert set(out[n:].tolist()) == {0, 1, 2}


def test_gumbel_noise_has_the_standard_gumbel_mean():
    noise = gumbel_noise(torch.tensor([draw_key(3, 0)], dtype=torch.int32), 200000)
    assert math.isfinite(noise.max().item())
    assert abs(noise.mean().item() - 0.5772) < 0.02  # Euler-Mascheroni constant


@pytest.mark.model
def test_the_engine_with_counted_draws_replays_a_seed_alone_and_in_a_batch():
    """The GPU path's processors inside the real engine (graphs need CUDA; the draws do not)."""
    from pairlab.models import get_model

    model = get_model("smollm2-135m-instruct", engine="continuous", max_inflight=4)
    model.engine.graphs = True  # the counted draw, as on a GPU; capture itself is off on CPU
    chat = [{"role": "user", "content": "Name a fruit and say why you like it."}]
    try:
        sampled = [GenerationParams(max_new_tokens=20, temperature=1.0, top_p=0.95, seed=s) for s in (1, 2, 3)]
        alone = ["".join(model.stream(chat, p)) for p in sampled]
        assert "".join(model.stream(chat, sampled[0])) == alone[0]
        assert len(set(alone)) > 1  # the seed is what draws
        together: dict[int, str] = {}

        def run(i: int) -> None:
            together[i] = "".join(model.stream(chat, sampled[i]))

        threads = [threading.Thread(target=run, args=(i,)) for i in range(3)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert [together[i] for i in range(3)] == alone
        greedy = GenerationParams(max_new_tokens=12)
        assert "".join(model.stream(chat, greedy)) == "".join(model.stream(chat, greedy))
    finally:
        model.close()


def test_cuda_graphs_only_for_the_one_engine_on_a_gpu_and_a_late_second_engine_is_refused():
    """The rule alone (no GPU here): stand-ins that say they sit on cuda:0, no model runs."""
    from types import SimpleNamespace

    from pairlab.backends.base import BackendError
    from pairlab.backends.batching import BatchingEngine

    def on_gpu():
        return SimpleNamespace(device=torch.device("cuda", 0), generation_config=SimpleNamespace(eos_token_id=2))

    tokenizer = SimpleNamespace(eos_token_id=2, pad_token_id=2)
    a, b = BatchingEngine(on_gpu(), tokenizer, 4, None), BatchingEngine(on_gpu(), tokenizer, 4, None)
    assert not a.alone_on_gpu() and not b.alone_on_gpu()  # two models loaded before serving: no graphs
    b.close()
    assert a.alone_on_gpu()  # one model per process: graphs
    a.graphs = True  # as its start decides
    with pytest.raises(BackendError, match="model_server"):
        BatchingEngine(on_gpu(), tokenizer, 4, None)
    a.close()
    BatchingEngine(on_gpu(), tokenizer, 4, None).close()  # the GPU is free again
    cpu = SimpleNamespace(device=torch.device("cpu"), generation_config=SimpleNamespace(eos_token_id=2))
    assert not BatchingEngine(cpu, tokenizer, 4, None).alone_on_gpu()


def test_a_captured_step_reads_about_a_request_of_cache_not_the_library_preset():
    """One arena request of ~150 tokens: under the library's preset every captured step attends
    over 16,384 padded slots; under the engine's setting over one request's share."""
    from transformers.generation.continuous_batching.initialization import resolve_without_hints
    from transformers.generation.continuous_batching.utils import pad_to_interval

    from pairlab.backends.batching import GRAPH_KV_TOKENS, TOKENS_PER_REQUEST, engine_config

    ours = engine_config("cuda", 16, graphs=True)
    preset = engine_config("cuda", 16, graphs=False)
    resolve_without_hints(ours)
    resolve_without_hints(preset)  # what the library fills in when the engine sets nothing
    cache_tokens = ours.num_blocks * ours.page_size
    assert pad_to_interval(150, ours.kv_padding_interval_size, cache_tokens) == GRAPH_KV_TOKENS == TOKENS_PER_REQUEST
    assert pad_to_interval(150, preset.kv_padding_interval_size, cache_tokens) == 16384
    # a batch reading more than one request's share pads to the next multiple, not the preset
    assert pad_to_interval(2304, ours.kv_padding_interval_size, cache_tokens) == 3 * GRAPH_KV_TOKENS
    # without graphs nothing is padded, and on CPU the step stays small
    cpu = engine_config("cpu", 8, graphs=False)
    assert cpu.use_cuda_graph is False and cpu.kv_padding_interval_size == 0 and cpu.max_batch_tokens == 1024
