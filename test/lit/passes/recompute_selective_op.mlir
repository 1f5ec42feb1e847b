// RUN: charon-opt %S/Inputs/models/tiny-llama.mlir -p 'fuse,recompute{policy=selective-op}' | filecheck %s
// RUN: charon-opt %S/Inputs/models/tiny-llama.mlir -p 'fuse,recompute{policy=selective-op}' | charon-opt | filecheck %s
// RUN: charon-opt %S/Inputs/models/tiny-llama.mlir -p 'fuse,recompute{policy=selective-op},recompute{policy=selective-op}' | filecheck %s
// RUN: charon-opt %S/Inputs/models/tiny-llama.mlir -p 'recompute{policy=selective-op}' | filecheck %s --check-prefix=MATH
// RUN: not charon-opt %S/Inputs/models/tiny-llama.mlir -p 'recompute{policy=selective-op modules=mlp}' 2>&1 | filecheck %s --check-prefix=BAD-MODULES
// RUN: not charon-opt %examples/mlp.mlir -p 'recompute{policy=selective-op}' 2>&1 | filecheck %s --check-prefix=NO-LAYERS

// torchtitan's op-level selective activation checkpointing of a Llama block
// (wq, wk, wv, flash attention, wo, w1, w3, w2): the forward saves the layer
// input and the outputs of the 1st, 3rd, 5th and 7th matmul and of the flash
// attention, w2's too though no backward op reads it (the policy's cache holds
// it until the layer's backward); the backward re-runs the rest, from the
// saved values, before its first op that reads one, and stops at the last value
// it reads (the closing residual add is not re-run). Running it twice changes
// nothing.

// CHECK:      builtin.module attributes {{.*}}sim.recompute_policy = #sim<recompute_policy "selective-op">}
// CHECK:      sim.phase "forward"
// CHECK:        sim.repeat 2
// CHECK-NEXT:   ^bb0(%[[X:[^:]*]]: tensor<1x24x64xbf16>,
// CHECK-NOT:      sim.recompute
// CHECK:          %[[WQ:[^ ]*]] = sim.matmul
// CHECK-NEXT:     %[[WK:[^ ]*]] = sim.matmul
// CHECK-NEXT:     %[[WV:[^ ]*]] = sim.matmul
// CHECK:          %[[ATT:[^ ]*]] = sim.attention {{.*}} {causal, flash}
// CHECK:          %[[WO:[^ ]*]] = sim.matmul
// CHECK:          %[[W1:[^ ]*]] = sim.matmul
// CHECK-NEXT:     %[[W3:[^ ]*]] = sim.matmul
// CHECK-NEXT:     %[[SWIGLU:[^ ]*]] = sim.generic "fused.swiglu"
// CHECK-NEXT:     %[[W2:[^ ]*]] = sim.matmul
// CHECK-NEXT:     %[[OUT:[^ ]*]] = sim.elementwise "add"
// CHECK:          sim.yield %[[OUT]], %[[X]], %[[ATT]], %[[W1]], %[[WQ]], %[[WV]], %[[W2]] :
// CHECK:      sim.phase "backward"
// CHECK:        sim.repeat 2
// CHECK-NEXT:   ^bb0(%[[G:[^:]*]]: tensor<1x24x64xbf16>, %{{[^:]*}}: tensor<64x64xbf16>, %[[PWK:[^:]*]]: tensor<32x64xbf16>, %{{[^:]*}}: tensor<32x64xbf16>, %[[PWO:[^:]*]]: tensor<64x64xbf16>, %{{[^:]*}}: tensor<128x64xbf16>, %[[PW3:[^:]*]]: tensor<128x64xbf16>, %{{[^:]*}}: tensor<64x128xbf16>, %[[LN1:[^:]*]]: tensor<64xbf16>, %{{[^:]*}}: tensor<64xbf16>, %[[SX:[^:]*]]: tensor<1x24x64xbf16>, %[[SATT:[^:]*]]: tensor<1x24x4x16xbf16>, %[[SW1:[^:]*]]: tensor<1x24x128xbf16>, %{{[^:]*}}: tensor<1x24x128xbf16>, %[[SWQ:[^:]*]]: tensor<1x24x64xbf16>, %[[SWV:[^:]*]]: tensor<1x24x32xbf16>, %[[SW2:[^:]*]]: tensor<1x24x64xbf16>):
// CHECK-NEXT:     sim.view %[[G]] :
// CHECK-NEXT:     %{{[^,]*}}, %[[N1:[^ ]*]] = sim.generic "fused.rms_norm"(%[[SX]], %[[LN1]]) {sim.recompute = #sim<recompute "selective-op">
// CHECK-NEXT:     %[[RK:[^ ]*]] = sim.matmul %[[N1]], %[[PWK]] {sim.recompute = #sim<recompute "selective-op">
// CHECK:          sim.generic "fused.rope"({{[^,]*}}, {{[^,]*}}, %[[SWQ]], {{[^)]*}}) {sim.recompute = #sim<recompute "selective-op">
// CHECK:          sim.generic "fused.rope"({{[^,]*}}, {{[^,]*}}, %[[RK]], {{[^)]*}}) {sim.recompute = #sim<recompute "selective-op">
// CHECK:          sim.view %[[SWV]] {sim.recompute = #sim<recompute "selective-op">}
// CHECK-NOT:      sim.attention
// CHECK:          %[[AO:[^ ]*]] = sim.view %[[SATT]] {sim.recompute = #sim<recompute "selective-op">}
// CHECK-NEXT:     %[[RO:[^ ]*]] = sim.matmul %[[AO]], %[[PWO]] {sim.recompute = #sim<recompute "selective-op">
// CHECK-NEXT:     %[[H:[^ ]*]] = sim.elementwise "add" %[[SX]], %[[RO]] {sim.recompute = #sim<recompute "selective-op">}
// CHECK-NEXT:     %{{[^,]*}}, %[[N2:[^ ]*]] = sim.generic "fused.rms_norm"(%[[H]], {{[^)]*}}) {sim.recompute = #sim<recompute "selective-op">
// CHECK-NEXT:     %[[R3:[^ ]*]] = sim.matmul %[[N2]], %[[PW3]] {sim.recompute = #sim<recompute "selective-op">
// CHECK-NEXT:     sim.generic "fused.swiglu"(%[[SW1]], %[[R3]]) {sim.recompute = #sim<recompute "selective-op">
// CHECK-NOT:      sim.elementwise "add" {{.*}} {sim.recompute
// CHECK-NOT:      %[[SW2]]
// CHECK:          sim.yield
// CHECK:      sim.phase "optimizer"

// The math attention (not fused: bmm and softmax, not in torchtitan's save
// list) is re-run, from the saved wv output and the re-made q and k.
// MATH:       sim.phase "backward"
// MATH:         sim.attention %{{[^,]*}}, %{{[^,]*}}, %{{[^ ]*}} {sim.recompute = #sim<recompute "selective-op">, causal}
// MATH:         sim.attention_grad

// BAD-MODULES:     charon-opt: error: recompute: option 'modules' needs policy=selective, got policy=selective-op
// BAD-MODULES-NOT: Traceback
// NO-LAYERS:       charon-opt: error: recompute: option 'policy=selective-op' needs the layers as a forward sim.repeat whose saved outputs a reverse sim.repeat in backward reads; the step has none
// NO-LAYERS-NOT:   Traceback
