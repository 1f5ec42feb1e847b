// RUN: charon-opt %S/../lowering/Inputs/eight_layers.mlir -p 'unfuse-optimizer' | filecheck %s --check-prefix=FP16
// RUN: charon-opt %S/../lowering/Inputs/eight_layers.mlir -p 'unfuse-optimizer{loss-scale=false}' | filecheck %s --check-prefix=BF16
// RUN: charon-opt %S/../lowering/Inputs/eight_layers.mlir -p 'data-parallel{dp=4 zero=1},unfuse-optimizer' | filecheck %s --check-prefix=ZERO1
// RUN: not charon-opt %S/../lowering/Inputs/eight_layers.mlir -p 'unfuse-optimizer,unfuse-optimizer' 2>&1 | filecheck %s --check-prefix=TWICE
// RUN: not charon-opt %S/../lowering/Inputs/eight_layers.mlir -p 'unfuse-optimizer,data-parallel{dp=4 zero=1}' 2>&1 | filecheck %s --check-prefix=BEFORE-DP
// RUN: not charon-opt %S/../lowering/Inputs/eight_layers.mlir -p 'unfuse-optimizer,pipeline{pp=2}' 2>&1 | filecheck %s --check-prefix=BEFORE-PP

// The step updates 64000 + 32768 + 64000 = 160768 elements. With loss scaling
// (fp16), the gradients are copied to fp32 (6 B each), unscaled (8) and their
// norm taken (4) before the step (8 x 160768 = 1286144, which xDSL prints in hex); after it the fp32 masters are copied back to
// the model's parameters (6) and the fp16 gradient buffer zeroed (2).
// FP16:      builtin.module attributes {sim.optimizer_kernels}
// FP16:      sim.phase "optimizer" {
// FP16-NEXT:   sim.generic "main_grads_from_half"(%[[G0:.*]], %[[G1:.*]], %[[G2:.*]]) {{.*}}byte_count = 9.646080e+05
// FP16-NEXT:   sim.generic "unscale_check_finite"(%[[G0]], %[[G1]], %[[G2]]) {{.*}}byte_count = 0x4133A00000000000
// FP16-NEXT:   sim.generic "grad_norm"(%[[G0]], %[[G1]], %[[G2]]) {{.*}}byte_count = 6.430720e+05
// FP16-NEXT:   sim.optimizer_step "adamw"(%[[P0:.*]], %[[P1:.*]], %[[P2:[^ ]*]] : {{.*}} grads(%[[G0]], %[[G1]], %[[G2]] :
// FP16-NEXT:   sim.generic "params_to_half"(%[[P0]], %[[P1]], %[[P2]]) {{.*}}byte_count = 9.646080e+05
// FP16-NEXT:   sim.generic "zero_grad_buffer"(%[[G0]], %[[G1]], %[[G2]]) {{.*}}byte_count = 3.215360e+05
// FP16-NEXT:   sim.yield

// bf16: the fp32 gradient accumulation buffer is the main gradient; no copy, no
// unscale, and zeroing it is 4 B per element.
// BF16:      builtin.module attributes {sim.optimizer_kernels}
// BF16:      sim.phase "optimizer" {
// BF16-NEXT:   sim.generic "grad_norm"({{.*}}byte_count = 6.430720e+05
// BF16-NEXT:   sim.optimizer_step "adamw"
// BF16-NEXT:   sim.generic "params_to_half"({{.*}}byte_count = 9.646080e+05
// BF16-NEXT:   sim.generic "zero_grad_buffer"({{.*}}byte_count = 6.430720e+05
// BF16-NEXT:   sim.yield

// Under ZeRO the passes run on the shard the step updates (40192 elements), and
// the copy back reads the update the all-gather then sends.
// ZERO1:      sim.phase "optimizer" {
// ZERO1:        sim.generic "grad_norm"({{.*}}byte_count = 1.607680e+05
// ZERO1-NEXT:   %[[U0:.*]], %[[U1:.*]], %[[U2:.*]] = sim.optimizer_step "adamw"
// ZERO1-NEXT:   sim.generic "params_to_half"(%[[U0]], %[[U1]], %[[U2]]) {{.*}}byte_count = 2.411520e+05
// ZERO1-NEXT:   sim.generic "zero_grad_buffer"
// ZERO1-NEXT:   %[[B:.*]] = sim.generic "param_bucket"(%[[U0]], %[[U1]], %[[U2]])
// ZERO1-NEXT:   coll.all_gather %[[B]]

// TWICE: charon-opt: error: unfuse-optimizer: the optimizer step is already unfused

// The kernels are priced on the elements the step updates: data-parallel and
// pipeline, which change them, must run first.
// BEFORE-DP: charon-opt: error: data-parallel: run it before unfuse-optimizer, which prices the optimizer's kernels on the shards data-parallel makes
// BEFORE-PP: charon-opt: error: pipeline: run it before unfuse-optimizer, which prices the optimizer's kernels on each stage's parameters
