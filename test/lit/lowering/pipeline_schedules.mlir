// Golden per-stage orders of micro-batches: F = a forward, B = a backward (under
// zb-h1 its input gradients only, W its weight gradients), digits are the model
// chunk; the loop counts are the exact schedule.
// RUN: charon-opt %S/Inputs/eight_layers.mlir -p 'pipeline{pp=4 microbatches=8},set-target{hardware=H100 gpus=4},cost-annotate,lower-to-events' | filecheck %s --check-prefix=1F1B
// RUN: charon-opt %S/Inputs/eight_layers.mlir -p 'pipeline{pp=4 vpp=2 schedule=interleaved microbatches=8},set-target{hardware=H100 gpus=4},cost-annotate,lower-to-events' | filecheck %s --check-prefix=INTERLEAVED
// RUN: charon-opt %S/Inputs/eight_layers.mlir -p 'pipeline{pp=4 schedule=gpipe microbatches=8},set-target{hardware=H100 gpus=4},cost-annotate,lower-to-events' | filecheck %s --check-prefix=GPIPE
// RUN: charon-opt %S/Inputs/eight_layers.mlir -p 'pipeline{pp=4 schedule=zb-h1 microbatches=8},set-target{hardware=H100 gpus=4},cost-annotate,lower-to-events' | filecheck %s --check-prefix=ZBH1

// One-forward-one-backward: stage s warms up with pp - s - 1 forwards, then alternates, then drains.
// 1F1B-LABEL: event.program @stage0 ranks 1
// 1F1B:       event.loop 3 iter({{.*}}) attributes {label = "F0"}
// 1F1B:       event.comm "send" on @comm_pp_send {{.*}} channel = "act", src = 0 : i64, dst = 1 : i64
// 1F1B:       event.loop 5 iter({{.*}}) attributes {label = "F0,B0"}
// 1F1B:       event.loop 3 iter({{.*}}) attributes {label = "B0"}
// 1F1B:       event.compute "optimizer_step"
// 1F1B-LABEL: event.program @stage1 ranks 1
// 1F1B:       event.loop 2 iter({{.*}}) attributes {label = "F0"}
// 1F1B:       event.comm "recv" on @comm_pp_recv {{.*}} channel = "act", src = 0 : i64, dst = 1 : i64
// 1F1B:       event.loop 6 iter({{.*}}) attributes {label = "F0,B0"}
// 1F1B:       event.loop 2 iter({{.*}}) attributes {label = "B0"}
// 1F1B-LABEL: event.program @stage2 ranks 1
// 1F1B:       event.loop 1 iter({{.*}}) attributes {label = "F0"}
// 1F1B:       event.loop 7 iter({{.*}}) attributes {label = "F0,B0"}
// 1F1B:       event.loop 1 iter({{.*}}) attributes {label = "B0"}
// 1F1B-LABEL: event.program @stage3 ranks 1
// 1F1B-NOT:   label = "F0"}
// 1F1B:       event.loop 8 iter({{.*}}) attributes {label = "F0,B0"}
// 1F1B-NOT:   label = "B0"}

// Interleaved, Megatron-LM order: stage 0 warms up with (pp - 1) * 2 + (vpp - 1) * pp
// = 10 forwards over chunks 0, 1, 0.
// INTERLEAVED-LABEL: event.program @stage0
// INTERLEAVED:       event.loop 4 iter({{.*}}) attributes {label = "F0"}
// INTERLEAVED:       event.loop 4 iter({{.*}}) attributes {label = "F1"}
// INTERLEAVED:       event.loop 2 iter({{.*}}) attributes {label = "F0"}
// INTERLEAVED:       event.loop 2 iter({{.*}}) attributes {label = "F0,B1"}
// INTERLEAVED:       event.loop 2 iter({{.*}}) attributes {label = "F1,B1"}
// INTERLEAVED:       event.loop 2 iter({{.*}}) attributes {label = "F1,B0"}
// INTERLEAVED:       event.loop 2 iter({{.*}}) attributes {label = "B0"}
// INTERLEAVED:       event.loop 4 iter({{.*}}) attributes {label = "B1"}
// INTERLEAVED:       event.loop 4 iter({{.*}}) attributes {label = "B0"}
// INTERLEAVED-LABEL: event.program @stage3
// INTERLEAVED:       event.loop 4 iter({{.*}}) attributes {label = "F0"}
// INTERLEAVED:       event.loop 4 iter({{.*}}) attributes {label = "F1,B1"}
// INTERLEAVED:       event.loop 4 iter({{.*}}) attributes {label = "F0,B0"}
// INTERLEAVED:       event.loop 4 iter({{.*}}) attributes {label = "F1,B1"}
// INTERLEAVED:       event.loop 4 iter({{.*}}) attributes {label = "B0"}

// GPipe: every forward, then every backward, on every stage.
// GPIPE-COUNT-4: attributes {label = "F0"}
// GPIPE-NOT:     label = "F0,B0"

// ZB-H1: 1F1B's forwards and input-gradient backwards (B); stage s lets its
// weight-gradient items (W) trail its B's by s micro-batches, then drains them.
// ZBH1-LABEL: event.program @stage0
// ZBH1:       event.loop 3 iter({{.*}}) attributes {label = "F0"}
// ZBH1:       event.loop 5 iter({{.*}}) attributes {label = "F0,B0,W0"}
// ZBH1:       event.comm "recv" on @comm_pp_recv {{.*}} channel = "grad"
// ZBH1:       event.wait({{.*}}) {item = #event<item B>}
// ZBH1:       event.wait({{.*}}) {item = #event<item W>}
// ZBH1:       event.loop 3 iter({{.*}}) attributes {label = "B0,W0"}
// ZBH1:       event.compute "optimizer_step"
// ZBH1-LABEL: event.program @stage1
// ZBH1:       event.loop 2 iter({{.*}}) attributes {label = "F0"}
// ZBH1:       event.loop 2 iter({{.*}}) attributes {label = "F0,B0"}
// ZBH1:       event.loop 4 iter({{.*}}) attributes {label = "W0,F0,B0"}
// ZBH1:       event.loop 2 iter({{.*}}) attributes {label = "W0,B0"}
// ZBH1:       event.loop 2 iter({{.*}}) attributes {label = "W0"}
// The B item sends the gradient on; the W item that drains sends nothing.
// ZBH1-NOT:   event.comm "send"
// ZBH1:       event.compute "optimizer_step"
// ZBH1-LABEL: event.program @stage2
// ZBH1:       event.loop 1 iter({{.*}}) attributes {label = "F0"}
// ZBH1:       event.loop 3 iter({{.*}}) attributes {label = "F0,B0"}
// ZBH1:       event.loop 4 iter({{.*}}) attributes {label = "W0,F0,B0"}
// ZBH1:       event.loop 1 iter({{.*}}) attributes {label = "W0"}
// ZBH1:       event.loop 1 iter({{.*}}) attributes {label = "B0"}
// ZBH1:       event.loop 3 iter({{.*}}) attributes {label = "W0"}
// ZBH1-LABEL: event.program @stage3
// ZBH1:       event.loop 4 iter({{.*}}) attributes {label = "F0,B0"}
// ZBH1:       event.loop 4 iter({{.*}}) attributes {label = "W0,F0,B0"}
// ZBH1:       event.loop 4 iter({{.*}}) attributes {label = "W0"}
