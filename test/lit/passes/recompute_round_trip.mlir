// RUN: charon-opt %s -p 'recompute{policy=full}' | charon-opt | filecheck %s
// RUN: charon-opt %S/Inputs/models/tiny-llama.mlir -p 'recompute{policy=full}' | charon-opt | filecheck %s --check-prefix=ROPE
// RUN: charon-opt %S/Inputs/models/tiny-llama.mlir -p 'fuse,recompute{policy=full}' | charon-opt | filecheck %s --check-prefix=FUSED
// RUN: charon-opt %S/Inputs/models/tiny-llama.mlir -p 'pipeline{pp=2},recompute{policy=full}' | charon-opt | filecheck %s --check-prefix=PP

// Full recompute clones each forward layer body into the backward phase. What
// the body reads from the forward phase's own region (values computed before the
// repeat, sliced operands the phase computes) the clone reads through the forward
// phase's results: the output parses back (`| charon-opt`), which it did not when
// the clone read the forward phase's values directly (xDSL checks no dominance;
// `sim.phase`'s verifier now does the scoping part).

// A layer that adds a bias the forward phase computes (its gradient does not
// need it, so the forward did not yield it) and drops out with masks the forward
// phase draws for every layer at once (a sliced operand computed in the phase).
// CHECK:      %{{[^,]*}}, %[[XS:[^,]*]], %[[MASKS:[^,]*]], %[[BIAS:[^ ]*]] = sim.phase "forward" -> tensor<1x8x16xbf16>, tensor<2x1x8x16xbf16>, tensor<2x1x8x16xi8>, tensor<1x8x16xbf16> {
// CHECK-NEXT:   %[[B:[^ ]*]] = sim.elementwise "cast"
// CHECK-NEXT:   %[[M:[^ ]*]] = sim.generic "bernoulli"
// CHECK-NEXT:   sim.repeat 2 iter(%{{[^ ]*}} : tensor<1x8x16xbf16>) slices(%{{[^,]*}}, %[[M]] : tensor<2x16x16xbf16>, tensor<2x1x8x16xi8>) {sim.recompute = #sim<recompute "full">}
// CHECK:        sim.yield %{{[^,]*}}, %{{[^,]*}}, %[[M]], %[[B]] : tensor<1x8x16xbf16>, tensor<2x1x8x16xbf16>, tensor<2x1x8x16xi8>, tensor<1x8x16xbf16>
// CHECK-NEXT: }
// CHECK-NEXT: sim.phase "backward"
// CHECK-NEXT:   sim.repeat 2 iter(%{{[^ ]*}} : tensor<1x8x16xbf16>) slices(%{{[^,]*}}, %[[MASKS]], %[[XS]] : tensor<2x16x16xbf16>, tensor<2x1x8x16xi8>, tensor<2x1x8x16xbf16>) {reverse}
// CHECK-NEXT:   ^bb0(%{{[^:]*}}: tensor<1x8x16xbf16>, %[[W:[^:]*]]: tensor<16x16xbf16>, %[[MB:[^:]*]]: tensor<1x8x16xi8>, %[[X:[^:]*]]: tensor<1x8x16xbf16>):
// CHECK-NEXT:     %[[H:[^ ]*]] = sim.matmul %[[X]], %[[W]] {sim.recompute = #sim<recompute "full">}
// CHECK-NEXT:     %[[HB:[^ ]*]] = sim.elementwise "add" %[[H]], %[[BIAS]] {sim.recompute = #sim<recompute "full">}
// CHECK-NEXT:     sim.elementwise "dropout" %[[HB]], %[[MB]] {sim.recompute = #sim<recompute "full">}
// CHECK-NOT:    sim.recompute
// CHECK:      sim.phase "optimizer"

// Llama: RoPE's cos/sin tables are computed in the forward phase before the layer
// repeat; the recomputed layers read them as the forward phase's results.
// ROPE:       %[[COS:[0-9]+]], %[[SIN:[0-9]+]], %[[XS:[0-9]+]] = sim.phase "forward"
// ROPE:         %[[COSF:[0-9]+]] = sim.elementwise "cast" %{{[0-9]+}} : tensor<1x24x16xf32> -> tensor<1x24x16xbf16>
// ROPE-NEXT:    %[[SINF:[0-9]+]] = sim.elementwise "cast" %{{[0-9]+}} : tensor<1x24x16xf32> -> tensor<1x24x16xbf16>
// ROPE:         sim.view %[[COSF]] : tensor<1x24x16xbf16> -> tensor<1x1x24x16xbf16>
// ROPE:         sim.yield {{.*}}, %[[COSF]], %[[SINF]], %{{[0-9]+}} : {{.*}}, tensor<1x24x16xbf16>, tensor<1x24x16xbf16>, tensor<2x1x24x64xbf16>
// ROPE:       sim.phase "backward"
// ROPE-NOT:     %[[COSF]]{{[,) ]}}
// ROPE:         sim.repeat 2 iter(%{{[0-9]+}} : tensor<1x24x64xbf16>) slices({{.*}}, %[[XS]] : {{.*}}) {reverse}
// ROPE-NOT:     %[[COSF]]{{[,) ]}}
// ROPE:         sim.view %[[COS]] {sim.recompute = #sim<recompute "full">} : tensor<1x24x16xbf16> -> tensor<1x1x24x16xbf16>
// ROPE-NOT:     %[[SINF]]{{[,) ]}}
// ROPE:         sim.view %[[SIN]] {sim.recompute = #sim<recompute "full">} : tensor<1x24x16xbf16> -> tensor<1x1x24x16xbf16>
// ROPE-NOT:     %[[COSF]]{{[,) ]}}
// ROPE-NOT:     %[[SINF]]{{[,) ]}}
// ROPE:       sim.phase "optimizer"

// The same with `fuse`: the fused RoPE kernels of the clone read the tables the
// forward phase yields.
// FUSED:      %{{[0-9]+}}, %[[XS:[0-9]+]], {{.*}}, %[[COS:[0-9]+]], %[[SIN:[0-9]+]] = sim.phase "forward"
// FUSED:      sim.phase "backward"
// FUSED:        sim.repeat 2 iter(%{{[0-9]+}} : tensor<1x24x64xbf16>) slices({{.*}}, %[[XS]] : {{.*}}) {reverse}
// FUSED:        %[[C:[0-9]+]] = sim.view %[[COS]] {sim.recompute = #sim<recompute "full">} : tensor<1x24x16xbf16> -> tensor<1x1x24x16xbf16>
// FUSED-NEXT:   %[[S:[0-9]+]] = sim.view %[[SIN]] {sim.recompute = #sim<recompute "full">} : tensor<1x24x16xbf16> -> tensor<1x1x24x16xbf16>
// FUSED-NEXT:   sim.generic "fused.rope"(%{{[0-9]+}}, %[[C]], %{{[0-9]+}}, %[[S]]) {sim.recompute = #sim<recompute "full">,
// FUSED:      sim.phase "optimizer"

// After pipeline: each stage computes its own tables and its backward reads them
// through its forward phase's results.
// PP:         sim.stage [0]
// PP:           %[[COS0:[0-9]+]], %[[SIN0:[0-9]+]], %[[XS0:[0-9]+]] = sim.phase "forward"
// PP:           sim.phase "backward"
// PP:             sim.repeat 1 iter(%{{[0-9]+}} : tensor<1x24x64xbf16>) slices({{.*}}, %[[XS0]] : {{.*}}) {reverse}
// PP:             sim.view %[[COS0]] {sim.recompute = #sim<recompute "full">}
// PP:             sim.view %[[SIN0]] {sim.recompute = #sim<recompute "full">}
// PP:         sim.stage [1]
// PP:           %[[COS1:[0-9]+]], %[[SIN1:[0-9]+]], %[[XS1:[0-9]+]] = sim.phase "forward"
// PP:           sim.phase "backward"
// PP:             sim.repeat 1 iter(%{{[0-9]+}} : tensor<1x24x64xbf16>) slices({{.*}}, %[[XS1]] : {{.*}}) {reverse}
// PP:             sim.view %[[COS1]] {sim.recompute = #sim<recompute "full">}
// PP:             sim.view %[[SIN1]] {sim.recompute = #sim<recompute "full">}

builtin.module {
  %x0 = sim.input "hidden" : tensor<1x8x16xbf16>
  %gin = sim.input "grad_hidden" : tensor<1x8x16xbf16>
  %pos = sim.input "positions" : tensor<1x8x16xf32>
  %p_w = sim.param "layers.w" : tensor<2x16x16xbf16>
  %f:3 = sim.phase "forward" -> tensor<1x8x16xbf16>, tensor<2x1x8x16xbf16>, tensor<2x1x8x16xi8> {
    %bias = sim.elementwise "cast" %pos : tensor<1x8x16xf32> -> tensor<1x8x16xbf16>
    %masks = sim.generic "bernoulli"(%pos) {flop_count = 0.0 : f64, byte_count = 1.0 : f64} : (tensor<1x8x16xf32>) -> tensor<2x1x8x16xi8>
    %r:2 = sim.repeat 2 iter(%x0 : tensor<1x8x16xbf16>) slices(%p_w, %masks : tensor<2x16x16xbf16>, tensor<2x1x8x16xi8>) -> (tensor<1x8x16xbf16>, tensor<2x1x8x16xbf16>) {
    ^bb0(%x: tensor<1x8x16xbf16>, %w: tensor<16x16xbf16>, %m: tensor<1x8x16xi8>):
      %h = sim.matmul %x, %w : (tensor<1x8x16xbf16>, tensor<16x16xbf16>) -> tensor<1x8x16xbf16>
      %hb = sim.elementwise "add" %h, %bias : tensor<1x8x16xbf16>, tensor<1x8x16xbf16> -> tensor<1x8x16xbf16>
      %y = sim.elementwise "dropout" %hb, %m : tensor<1x8x16xbf16>, tensor<1x8x16xi8> -> tensor<1x8x16xbf16>
      sim.yield %y, %x : tensor<1x8x16xbf16>, tensor<1x8x16xbf16>
    }
    sim.yield %r#0, %r#1, %masks : tensor<1x8x16xbf16>, tensor<2x1x8x16xbf16>, tensor<2x1x8x16xi8>
  }
  %bw = sim.phase "backward" -> tensor<2x16x16xbf16> {
    %rb:2 = sim.repeat 2 iter(%gin : tensor<1x8x16xbf16>) slices(%p_w, %f#1, %f#2 : tensor<2x16x16xbf16>, tensor<2x1x8x16xbf16>, tensor<2x1x8x16xi8>) {reverse} -> (tensor<1x8x16xbf16>, tensor<2x16x16xbf16>) {
    ^bb0(%g: tensor<1x8x16xbf16>, %w: tensor<16x16xbf16>, %x: tensor<1x8x16xbf16>, %m: tensor<1x8x16xi8>):
      %gd = sim.elementwise "mul" %g, %m : tensor<1x8x16xbf16>, tensor<1x8x16xi8> -> tensor<1x8x16xbf16>
      %dx = sim.matmul %gd, %w {transpose_rhs} : (tensor<1x8x16xbf16>, tensor<16x16xbf16>) -> tensor<1x8x16xbf16>
      %dwb = sim.matmul %x, %gd {transpose_lhs} : (tensor<1x8x16xbf16>, tensor<1x8x16xbf16>) -> tensor<1x16x16xbf16>
      %dw = sim.reduce "sum" %dwb [0] : tensor<1x16x16xbf16> -> tensor<16x16xbf16>
      sim.yield %dx, %dw : tensor<1x8x16xbf16>, tensor<16x16xbf16>
    }
    sim.yield %rb#1 : tensor<2x16x16xbf16>
  }
  sim.phase "optimizer" {
    sim.optimizer_step "adamw"(%p_w : tensor<2x16x16xbf16>) grads(%bw : tensor<2x16x16xbf16>)
    sim.yield
  }
}
