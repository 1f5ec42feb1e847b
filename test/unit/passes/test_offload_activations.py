"""offload-activations and what memory-analysis makes of it: Megatron-Core's CPU
activation offloading (Transformer Engine's AsyncDoubleBufferGroupOffloadHandler)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp

from charon_ir.dialects import sim
from charon_ir.errors import CharonError
from charon_ir.memory import allocations, analyze_memory
from charon_ir.memory.liveness import Roots, layer_saved_values, offloaded_layer_bytes
from charon_ir.memory.megatron_reference import GptShape, gpt_module, gpt_step
from charon_ir.passes.cost_annotate import CostAnnotatePass
from charon_ir.passes.offload_activations import OffloadActivationsPass
from charon_ir.passes.recompute import RecomputePass
from charon_ir.passes.set_target import SetTargetPass
from charon_ir.testing import parse_module


def offloaded(shape: GptShape, layers: int) -> ModuleOp:
    module = gpt_module(shape)
    OffloadActivationsPass(layers=layers).apply(Context(), module)
    return module


def one_layer_saved(shape: GptShape) -> int:
    """What one layer saves for its backward, read off the unmarked step."""
    ((forward, _),) = sim.layer_repeat_pairs(gpt_module(shape).body.block)
    return offloaded_layer_bytes(forward, Roots())


SHAPES = st.builds(GptShape, s=st.sampled_from([64, 128, 256]), b=st.sampled_from([1, 2]),
                   h=st.sampled_from([128, 256]), a=st.sampled_from([4, 8]), layers=st.integers(2, 10))


def test_the_first_layers_are_marked_on_both_repeats():
    module = offloaded(GptShape(layers=6), 2)
    ((forward, backward),) = sim.layer_repeat_pairs(module.body.block)
    for rep in (forward, backward):
        assert sim.cpu_offload_of(rep) == sim.CpuOffloadAttr(2, 0, 6, 2)
    assert sim.offloaded_layers(forward) == 2


def test_zero_layers_changes_nothing():
    module = offloaded(GptShape(), 0)
    assert str(module) == str(gpt_module(GptShape()))


@pytest.mark.parametrize(("layers", "offload", "windows"), [
    (4, 3, [1, 2, 3]), (5, 3, [1, 3, 4]), (10, 2, [4, 9]), (8, 1, [7]), (7, 6, [1, 2, 3, 4, 5, 6]),
    (8, 3, [2, 5, 7]),
])
def test_windows_are_transformer_engines_layer_window_map(layers, offload, windows):
    """layer_window_map[i] = (L // N)(i + 1) - 1, plus i + 1 for the first L % N
    groups and that remainder after: the last copy is waited for after the last
    layer's forward."""
    assert sim.offload_windows(layers, offload) == windows
    assert windows[-1] == layers - 1


@pytest.mark.parametrize(("layers", "message"), [
    (-1, "option 'layers' must be >= 0, got -1"),
    (4, "option 'layers' (4) must be less than the step's 4 layers"),
    (9, "option 'layers' (9) must be less than the step's 4 layers"),
])
def test_bad_counts_are_one_line(layers, message):
    with pytest.raises(CharonError, match=message.replace("(", r"\(").replace(")", r"\)")):
        offloaded(GptShape(layers=4), layers)


def test_recompute_is_refused_as_megatron_core_refuses_it():
    module = gpt_module(GptShape())
    RecomputePass(policy="full").apply(Context(), module)
    with pytest.raises(CharonError, match="does not work when activation recomputation is enabled"):
        OffloadActivationsPass(layers=1).apply(Context(), module)


@settings(max_examples=15, deadline=None)
@given(shape=SHAPES, data=st.data())
def test_host_bytes_are_the_offloaded_layers_saved_bytes(shape, data):
    n = data.draw(st.integers(0, shape.layers - 1))
    (plain,) = analyze_memory(gpt_module(shape))
    (mem,) = analyze_memory(offloaded(shape, n))
    per_layer = one_layer_saved(shape)
    assert mem.host_activations == n * per_layer
    # what leaves the GPU is exactly what reaches the host
    assert mem.saved_per_microbatch + mem.host_activations == plain.saved_per_microbatch


@settings(max_examples=10, deadline=None)
@given(shape=SHAPES)
def test_the_gpu_activation_peak_never_grows_with_more_layers_offloaded(shape):
    peaks = [analyze_memory(offloaded(shape, n))[0] for n in range(shape.layers)]
    for fewer, more in zip(peaks, peaks[1:]):
        assert more.activations <= fewer.activations
        assert more.saved_per_microbatch < fewer.saved_per_microbatch
        assert more.peak <= fewer.peak


@settings(max_examples=10, deadline=None)
@given(shape=SHAPES, data=st.data())
def test_one_offloaded_layer_is_on_the_gpu_while_the_last_layer_runs(shape, data):
    """The double buffer: with N >= 1 offloaded, the forward's last layer runs
    beside the chunk's last offloaded layer (its copy not yet waited for) and the
    backward's first beside it reloaded: L - N + 1 layers' saved bytes at the
    layers' peak, against L without offloading, so the peak drops by at most N - 1
    layers (more only where the peak is outside the layers, e.g. at the loss)."""
    n = data.draw(st.integers(1, shape.layers - 1))
    per_layer = one_layer_saved(shape)
    (plain,) = analyze_memory(gpt_module(shape))
    (mem,) = analyze_memory(offloaded(shape, n))
    assert plain.activations - mem.activations <= n * per_layer
    assert mem.activations >= plain.activations - n * per_layer
    assert plain.activations - mem.activations >= 0


@settings(max_examples=8, deadline=None)
@given(shape=SHAPES, data=st.data())
def test_offloading_never_adds_flops(shape, data):
    n = data.draw(st.integers(0, shape.layers - 1))

    def flops(module: ModuleOp) -> float:
        SetTargetPass(hardware="H100-SXM5-80GB", gpus=1).apply(Context(), module)
        CostAnnotatePass().apply(Context(), module)
        total = 0.0
        for op in module.walk():
            cost = op.attributes.get(sim.COST_ATTR)
            if isinstance(cost, sim.CostAttr):
                total += cost.flops.data
        return total

    assert flops(offloaded(shape, n)) == flops(gpt_module(shape))


@settings(max_examples=8, deadline=None)
@given(shape=SHAPES, data=st.data())
def test_the_same_input_gives_the_same_output_byte_for_byte(shape, data):
    n = data.draw(st.integers(0, shape.layers - 1))
    first, second = offloaded(shape, n), offloaded(shape, n)
    assert str(first) == str(second)
    assert analyze_memory(first) == analyze_memory(second)


def with_activation(shape: GptShape, activation: str) -> ModuleOp:
    """The GPT reference step with its MLP's GeLU as `activation`: "gelu" (an
    unfused GeLU), "bias_act" (Megatron's `bias_gelu_impl`, `fused.bias_act`) or
    "swiglu" (Megatron's `bias_swiglu_impl`, `fused.swiglu`)."""
    text = gpt_step(shape)
    if activation != "gelu":
        f1 = f"tensor<{shape.b}x{shape.s}x{4 * shape.h}xbf16>"
        old = f'%gl = sim.elementwise "gelu" %f1 : {f1} -> {f1}'
        assert old in text
        operands, types = ("%f1, %f1", f"{f1}, {f1}") if activation == "swiglu" else ("%f1", f1)
        text = text.replace(old, f'%gl = sim.generic "fused.{activation}"({operands}) '
                                 f'{{flop_count = 1.0 : f64, byte_count = 1.0 : f64}} : ({types}) -> {f1}')
    return parse_module(text)


def saved_by_name(module: ModuleOp) -> dict[str, tuple[int, bool]]:
    """What one layer saves, by the name of the first value yielded of each
    storage: (bytes, whether Transformer Engine's handler moves it to the host)."""
    ((forward, _),) = sim.layer_repeat_pairs(module.body.block)
    roots = Roots()
    term = forward.body.block.last_op
    moved = roots.offloadable(forward)
    n_iter = len(forward.iter_init)
    by_root = {}
    for v in term.values[n_iter:]:  # views of one storage count once
        by_root.setdefault(roots.root(v), v.name_hint)
    return {name: (roots.iteration_size(key), key in moved) for key, name in by_root.items()}


def test_a_gelu_layer_keeps_its_gelu_input_and_dropout_masks_on_the_gpu():
    """Megatron's `bias_gelu_impl` and an unfused GeLU save their input untagged;
    dropout masks are untagged: Transformer Engine's handler leaves them on the
    GPU. The GEMM inputs, the norms' inputs and the attention's tensors go."""
    shape = GptShape(layers=2)
    for activation in ("gelu", "bias_act"):
        saved = saved_by_name(with_activation(shape, activation))
        kept = {name for name, (_, moved) in saved.items() if not moved}
        assert kept == {"f1", "m1", "m2"}
        ((forward, _),) = sim.layer_repeat_pairs(with_activation(shape, activation).body.block)
        assert offloaded_layer_bytes(forward, Roots()) == sum(n for n, moved in saved.values() if moved)


def test_a_swiglu_layer_offloads_its_input():
    """Megatron's `bias_swiglu_impl` tags its input (fused_bias_swiglu.py) when
    CPU offloading is on: it goes to the host with the rest."""
    saved = saved_by_name(with_activation(GptShape(layers=2), "swiglu"))
    assert saved["f1"][1]
    assert {name for name, (_, moved) in saved.items() if not moved} == {"m1", "m2"}


def test_what_stays_on_the_gpu_is_counted_there():
    """A GeLU step with layers offloaded: each offloaded layer keeps its GeLU input
    and dropout masks on the GPU, which the saved bytes count."""
    shape = GptShape(layers=4)
    module = with_activation(shape, "bias_act")
    OffloadActivationsPass(layers=2).apply(Context(), module)
    (plain,) = analyze_memory(with_activation(shape, "bias_act"))
    (mem,) = analyze_memory(module)
    stays = sum(n for n, moved in saved_by_name(with_activation(shape, "bias_act")).values() if not moved)
    assert stays > 0
    ((forward, _),) = sim.layer_repeat_pairs(with_activation(shape, "bias_act").body.block)
    assert mem.host_activations == 2 * offloaded_layer_bytes(forward, Roots())
    assert mem.saved_per_microbatch == plain.saved_per_microbatch - mem.host_activations


@settings(max_examples=15, deadline=None)
@given(shape=SHAPES, activation=st.sampled_from(["gelu", "bias_act", "swiglu"]), data=st.data())
def test_host_bytes_never_exceed_what_the_layers_save(shape, activation, data):
    n = data.draw(st.integers(1, shape.layers - 1))
    module = with_activation(shape, activation)
    ((forward, _),) = sim.layer_repeat_pairs(module.body.block)
    layer_saved = sum(n for _, n in layer_saved_values(forward))
    assert 0 < offloaded_layer_bytes(forward, Roots()) <= layer_saved
    OffloadActivationsPass(layers=n).apply(Context(), module)
    (mem,) = analyze_memory(module)
    assert mem.host_activations <= n * layer_saved


@pytest.mark.parametrize("fp8", [False, True])
def test_the_allocator_replay_sends_what_the_analysis_sends(monkeypatch, fp8):
    """The caching-allocator replay frees, at each offloaded layer's copy, the
    blocks of what memory-analysis counts on the host for it (fp8 casts
    included): a GeLU layer's GeLU input and dropout masks stay allocated."""
    sent: list[int] = []
    real = allocations._Sequence.offload

    def offload(self, layer):
        host = real(self, layer)
        sent.append(sum(host.sizes.values()))
        return host

    monkeypatch.setattr(allocations._Sequence, "offload", offload)
    shape, n = GptShape(layers=4), 2
    module = offloaded(shape, n)
    (mem,) = analyze_memory(module, fp8=fp8, replay=True)
    # the first layer's input is the step's sim.input, a block of no chunk's
    # (the analysis counts it with the layer): the others send exactly theirs
    first, second = sent
    assert second * n == mem.host_activations
    assert first == second - shape.b * shape.s * shape.h * 2
    ((forward, _),) = sim.layer_repeat_pairs(gpt_module(shape).body.block)
    assert mem.host_activations < n * sum(size for _, size in layer_saved_values(forward))
