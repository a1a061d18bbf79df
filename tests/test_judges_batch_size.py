"""The judging batch size on a GPU: from free memory and the prompts' lengths."""

from __future__ import annotations

from types import SimpleNamespace

from judges.runner import GPU_MEMORY_SHARE, MAX_GPU_BATCH, batch_size_for, token_bytes

GIB = 2**30
# Mistral-7B's shape
MISTRAL = SimpleNamespace(hidden_size=4096, intermediate_size=14336, num_hidden_layers=32,
                          num_attention_heads=32, num_key_value_heads=8)


def test_token_bytes_counts_the_cache_of_every_layer_and_one_layers_activations():
    cache = 2 * 32 * 8 * 128 * 2  # keys and values, 32 layers, 8 kv heads of 128, bf16
    activations = (4 * 4096 + 3 * 14336) * 2
    assert token_bytes(MISTRAL, 2) == cache + activations
    assert token_bytes(MISTRAL, 4) == 2 * token_bytes(MISTRAL, 2)
    no_gqa = SimpleNamespace(**{**vars(MISTRAL), "num_key_value_heads": None})
    assert token_bytes(no_gqa, 2) > token_bytes(MISTRAL, 2)  # every head keeps its keys


def test_the_longest_prompt_sets_the_size_and_the_rows_fit_the_share_of_free_memory():
    per_token = token_bytes(MISTRAL, 2)
    free = 40 * GIB
    size = batch_size_for(free, [300, 1000, 500], per_token)
    assert size * 1000 * per_token <= free * GPU_MEMORY_SHARE < (size + 1) * 1000 * per_token
    assert batch_size_for(free, [1000], per_token) == size
    assert batch_size_for(free, [2000, 10], per_token) < size


def test_more_memory_bigger_batches_generation_adds_its_tokens():
    per_token = token_bytes(MISTRAL, 2)
    small, large = (batch_size_for(g * GIB, [1000], per_token) for g in (10, 40))
    assert small < large
    assert batch_size_for(40 * GIB, [1000], per_token, new_tokens=256) < large


def test_bounds_at_least_one_row_at_most_the_cap():
    per_token = token_bytes(MISTRAL, 2)
    assert batch_size_for(1 * GIB, [100_000], per_token) == 1  # a row larger than memory: one at a time
    assert batch_size_for(0, [10], per_token) == 1
    assert batch_size_for(40 * GIB, [], per_token) == 1
    assert batch_size_for(1000 * GIB, [10], per_token) == MAX_GPU_BATCH
