"""`fused_cross_entropy`: the loss as Transformer Engine's parallel cross entropy,
set by the megatron-bridge preset, off elsewhere, a flag and a fuse option."""

from charon_ir.api import TrainingConfig, configure, pass_plan


def fuse_options(**options) -> dict:
    config = TrainingConfig(model="llama-3.1-8b", gpus=8, seq_len=256, **options)
    return dict(pass_plan(config))["fuse"]


def test_fuse_option():
    assert fuse_options(fused_cross_entropy=True) == {"attention": True, "loss": True}
    assert fuse_options() == {"attention": True}


def test_presets():
    bridge, report = configure("llama-3.1-8b", "megatron-bridge", gpus=8)
    assert bridge.fused_cross_entropy and report["settings"]["fused_cross_entropy"]["from"] == "framework megatron-bridge"
    for name in ("megatron-core", "nemo-24.07", "megatron-lm-2022", "fsdp2", "none"):
        config, _ = configure("llama-3.1-8b", name, gpus=8)
        assert not config.fused_cross_entropy, name
    given, report = configure("llama-3.1-8b", "megatron-bridge", gpus=8, fused_cross_entropy=False)
    assert not given.fused_cross_entropy and report["settings"]["fused_cross_entropy"]["from"] == "flag"
