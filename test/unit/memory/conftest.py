"""GPT-3 175B imported once per session by the torch frontend (fake tensors, no
weights), its vocabulary padded to 51200 as Megatron-LM pads it so that tp = 8
divides it. Tests clone it before running passes on it."""

from pathlib import Path

import pytest

GPT3_PADDED = Path(__file__).with_name("gpt3_175b_padded_vocab.json")
SEQ = 2048


@pytest.fixture(scope="session")
def gpt3_175b():
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from charon_ir.frontend import import_model

    return import_model(str(GPT3_PADDED), seq_len=SEQ, batch=1, mode="train", use_cache=False)
