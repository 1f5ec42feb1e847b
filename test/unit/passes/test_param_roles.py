"""No pass reads a parameter's (Hugging Face) name: what a weight is comes from
its `#sim.role<...>` and `#sim.split<...>`, which the frontend sets. Renaming
every parameter of an imported module to an arbitrary name (keeping only the
`[start:end]` of a stacked one, the frontend's mark of a repeat's layers dim)
leaves what the sharding, pipeline, data-parallel and memory passes make of it
unchanged; and the old name tables are gone from the passes and the memory model."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from xdsl.dialects.builtin import ModuleOp, StringAttr
from xdsl.passes import PassPipeline

from charon_ir.dialects import sim
from charon_ir.frontend.roles import param_role, weight_split
from charon_ir.registry import ALL_PASSES
from charon_ir.testing import make_context, parse_module

ROOT = Path(__file__).resolve().parents[3]
MODELS = ROOT / "test" / "lit" / "passes" / "Inputs" / "models"

PIPELINES = [
    # routed experts (ep, etp = tp), the embedding and head on the vocabulary, GQA
    ("tiny-mixtral", "shard-tensor{tp=2},shard-expert{ep=2},pipeline{pp=2 microbatches=2},"
                     "data-parallel{dp=2 zero=1},memory-analysis"),
    # etp 1: the experts stay whole under tp, the ep group folds the tp ranks
    ("tiny-mixtral", "shard-tensor{tp=2 experts=false},shard-expert{ep=2 etp=1},"
                     "data-parallel{dp=2 zero=3},memory-analysis"),
    # GPT-OSS: expert biases, experts read [in, out], a router with a bias
    ("tiny-gpt-oss", "shard-tensor{tp=2},shard-expert{ep=2},data-parallel{dp=2 zero=2},memory-analysis"),
    # GPT-2: Conv1D weights [in, out], a tied embedding held by both end stages
    ("tiny-gpt", "shard-tensor{tp=2},pipeline{pp=2 microbatches=2},data-parallel{dp=2 zero=1},memory-analysis"),
    # more ranks than kv heads: a kv head shared by tp / kv_heads ranks
    ("tiny-llama", "shard-tensor{tp=4},data-parallel{dp=2 zero=1},memory-analysis"),
]

_TEXTS: dict[str, str] = {}


def _model_text(model: str) -> str:
    if model not in _TEXTS:
        _TEXTS[model] = (MODELS / f"{model}.mlir").read_text()
    return _TEXTS[model]


def _params(module: ModuleOp) -> list[sim.ParamOp]:
    return [op for op in module.body.block.ops if isinstance(op, sim.ParamOp)]


def _run(module: ModuleOp, pipeline: str) -> str:
    PassPipeline.parse_spec(ALL_PASSES, pipeline).apply(make_context(), module)
    module.verify()
    return str(module)


def _renamed(model: str, words: list[str]) -> tuple[ModuleOp, dict[str, str]]:
    """The model with each parameter named `param:<word>` (plus its stacked
    range), and the new name -> old name."""
    module = parse_module(_model_text(model))
    back: dict[str, str] = {}
    for param, word in zip(_params(module), words, strict=False):
        old = param.sym_name.data
        stacked = re.search(r"\[[^\]]*\]", old)
        new = f"param:{word}{stacked.group(0) if stacked else ''}"
        param.properties["sym_name"] = StringAttr(new)
        back[new] = old
    return module, back


def _names_back(text: str, back: dict[str, str]) -> str:
    for new in sorted(back, key=len, reverse=True):  # param:ab before param:a
        text = text.replace(new, back[new])
    return text


WORDS = st.lists(st.from_regex(r"[a-z][a-z0-9_.]{0,10}", fullmatch=True), min_size=40, max_size=40,
                 unique_by=lambda w: w)


_EXPECTED: dict[tuple[str, str], str] = {}


def _expected(model: str, pipeline: str) -> str:
    if (model, pipeline) not in _EXPECTED:
        _EXPECTED[model, pipeline] = _run(parse_module(_model_text(model)), pipeline)
    return _EXPECTED[model, pipeline]


@pytest.mark.parametrize("model, pipeline", PIPELINES, ids=[f"{m}-{i}" for i, (m, _) in enumerate(PIPELINES)])
@settings(max_examples=2, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(words=WORDS)
def test_passes_give_the_same_module_whatever_the_parameters_are_named(model, pipeline, words):
    assert len(_params(parse_module(_model_text(model)))) <= len(words)
    expected = _expected(model, pipeline)
    module, back = _renamed(model, words)
    assert _names_back(_run(module, pipeline), back) == expected


def test_the_shipped_models_carry_the_roles_the_frontend_gives():
    """The lit inputs were imported before roles existed and given theirs by
    name since; they agree with the frontend's tables (a drift would test a
    module the frontend no longer makes)."""
    for path in sorted(MODELS.glob("*.mlir")):
        for param in _params(parse_module(path.read_text())):
            name, rank = param.sym_name.data, len(sim.shape_of(param.result))
            assert (param.param_role(), param.weight_split()) == (param_role(name, rank), weight_split(name, rank)), (
                f"{path.name}: {name}")


OLD_NAME_TESTS = re.compile(
    r"\"(embed_tokens|lm_head|wte|word_embeddings|embed_out|embed_in|q_proj|k_proj|v_proj|o_proj|gate_proj|"
    r"up_proj|gate_up_proj|down_proj|c_attn|c_fc|query_key_value|dense_h_to_4h|dense_4h_to_h)(_bias)?\""
    r"|\"experts\"\s+(not\s+)?in\b|==\s*\"(experts|gate|router)\""
    r"|sym_name\.data\.split\(")
"""What passes once matched parameter names with: a Hugging Face module name in a
string literal, a test for an `experts`, `gate` or `router` part, a name cut into
its dotted parts. ("experts" alone is also a sharding tag, the experts dim's.)"""


def test_no_pass_or_memory_model_spells_a_hugging_face_module_name():
    sources = [*(ROOT / "passes").glob("*.py"), *(ROOT / "charon_ir" / "memory").glob("*.py"),
               *(ROOT / "charon_ir" / "parallel").glob("*.py"), *(ROOT / "lowering").glob("*.py")]
    assert sources
    found = [f"{p.relative_to(ROOT)}:{n}: {line.strip()}" for p in sources
             for n, line in enumerate(p.read_text().splitlines(), 1)
             if OLD_NAME_TESTS.search(line) and "sim.param" not in line]
    assert not found, "\n".join(found)


def test_a_pass_reads_the_role_not_the_name():
    """The converse: a module's weights named as Hugging Face does but with no
    role or split are split by nothing (shard-tensor refuses, naming them)."""
    text = re.sub(r" \{role = [^}]*\}", "", _model_text("tiny-llama"))
    module = parse_module(text)
    assert all(p.param_role() == sim.ParamRole.OTHER and p.weight_split() is None for p in _params(module))
    with pytest.raises(Exception, match="splits no weight"):
        _run(module, "shard-tensor{tp=2}")
