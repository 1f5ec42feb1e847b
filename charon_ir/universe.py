"""The xDSL plugin entry point: makes stock `xdsl-opt` see Charon's dialects,
passes and targets. Every entry is a lazy factory, so listing them imports nothing."""

from xdsl.universe import Universe

from charon_ir.registry import ALL_DIALECTS, ALL_PASSES, ALL_TARGETS

CHARON_UNIVERSE = Universe(
    all_dialects=ALL_DIALECTS, all_passes=ALL_PASSES, all_targets=ALL_TARGETS
)
