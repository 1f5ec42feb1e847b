// RUN: charon-opt %s | charon-opt | filecheck %s
// RUN: charon-opt %s --print-op-generic | charon-opt | filecheck %s
// RUN: charon-opt %s --print-op-generic | filecheck %s --check-prefix=GENERIC

// The pipeline and data-parallel passes' settings, on the module (#sim.pipeline's
// fields in any order on input).
// memory-analysis's report: a #sim.memory per physical stage (bytes at the peak);
// the parallelising passes' replicated FLOPs, printed to the last digit; the
// target (#sim.target, its cluster's text optional).
// CHECK: builtin.module attributes {sim.pipeline = #sim.pipeline<pp = 2, vpp = 2, schedule = "interleaved", microbatches = 8, layers = [1, 2, 0, 3]>, sim.data_parallel = #sim.data_parallel<dp = 4, zero = 1, bucket_mb = 25, overlap = true, overlap_param_gather = true>, sim.memory = [#sim.memory<stage = 0, params = 100, grads = 100, optimizer = 600, activations = 2000, saved_per_microbatch = 500, in_flight = 4, comm_buffers = 8, weight_grad_residual = 0>], sim.replicated_flops = #sim.replicated_flops<"shard-tensor" = 42500.0, "sequence-parallel" = -1.0e+20>, sim.target = #sim.target<hardware = "H100-SXM5-80GB", gpus = 16, gpus_per_node = 8, cluster = "name = \22two\22 nodes = 2">}
builtin.module attributes {sim.pipeline = #sim.pipeline<schedule = "interleaved", pp = 2, vpp = 2, microbatches = 8, layers = [1, 2, 0, 3]>, sim.data_parallel = #sim.data_parallel<dp = 4, zero = 1, bucket_mb = 25, overlap = true, overlap_param_gather = true>, sim.memory = [#sim.memory<in_flight = 4, stage = 0, params = 100, grads = 100, optimizer = 600, activations = 2000, saved_per_microbatch = 500, comm_buffers = 8, weight_grad_residual = 0>], sim.replicated_flops = #sim.replicated_flops<"shard-tensor" = 4.25e+04, "sequence-parallel" = -1.0e+20>, sim.target = #sim.target<gpus_per_node = 8, hardware = "H100-SXM5-80GB", cluster = "name = \22two\22 nodes = 2", gpus = 16>} {
  %ids = sim.input "tokens" {tokens} : tensor<2x16xi64>
  %table = sim.param "embed" : tensor<1000x64xbf16>
  %ws = sim.param "layers.w" {stacked} : tensor<3x64x64xbf16>
  %wn = sim.param "norm.w" : tensor<64xbf16>
  // CHECK:      %[[IDS:.*]] = sim.input "tokens" {tokens} : tensor<2x16xi64>
  // CHECK-NEXT: %[[TABLE:.*]] = sim.param "embed" : tensor<1000x64xbf16>
  // CHECK-NEXT: %[[WS:.*]] = sim.param "layers.w" {stacked} : tensor<3x64x64xbf16>
  // CHECK-NEXT: %[[WN:.*]] = sim.param "norm.w" : tensor<64xbf16>
  // GENERIC: "sim.input"() <{sym_name = "tokens", tokens}> : () -> tensor<2x16xi64>

  %f:2 = sim.phase "forward" -> tensor<2x16x64xbf16>, tensor<3x2x16x64xbf16> {
    %x = sim.embedding %table, %ids : (tensor<1000x64xbf16>, tensor<2x16xi64>) -> tensor<2x16x64xbf16>
    %r:2 = sim.repeat 3 iter(%x : tensor<2x16x64xbf16>) slices(%ws : tensor<3x64x64xbf16>) -> (tensor<2x16x64xbf16>, tensor<3x2x16x64xbf16>) {
    ^bb0(%h: tensor<2x16x64xbf16>, %w: tensor<64x64xbf16>):
      %n = sim.norm "rms" %h, %wn : tensor<2x16x64xbf16>, tensor<64xbf16>
      %y = sim.matmul %n, %w {transpose_rhs} : (tensor<2x16x64xbf16>, tensor<64x64xbf16>) -> tensor<2x16x64xbf16>
      %q = sim.view %y : tensor<2x16x64xbf16> -> tensor<2x16x4x16xbf16>
      %kv = sim.view %n : tensor<2x16x64xbf16> -> tensor<2x16x4x16xbf16>
      %k = sim.generic "aten.slice"(%kv) {flop_count = 0.0 : f64, byte_count = 0.0 : f64} : (tensor<2x16x4x16xbf16>) -> tensor<2x16x2x16xbf16>
      %a0 = sim.attention %q, %k, %k {causal} : (tensor<2x16x4x16xbf16>, tensor<2x16x2x16xbf16>, tensor<2x16x2x16xbf16>) -> tensor<2x16x4x16xbf16>
      %a = sim.attention %a0, %k, %k {causal, window = 8 : i64} : (tensor<2x16x4x16xbf16>, tensor<2x16x2x16xbf16>, tensor<2x16x2x16xbf16>) -> tensor<2x16x4x16xbf16>
      %ac = sim.attention %a, %k, %k {causal, chunk = 4 : i64} : (tensor<2x16x4x16xbf16>, tensor<2x16x2x16xbf16>, tensor<2x16x2x16xbf16>) -> tensor<2x16x4x16xbf16>
      %s = sim.softmax %ac dim 3 : tensor<2x16x4x16xbf16>
      %o = sim.view %s : tensor<2x16x4x16xbf16> -> tensor<2x16x64xbf16>
      %z = sim.elementwise "add" %o, %h : tensor<2x16x64xbf16>, tensor<2x16x64xbf16> -> tensor<2x16x64xbf16>
      sim.yield %z, %n : tensor<2x16x64xbf16>, tensor<2x16x64xbf16>
    }
    sim.yield %r#0, %r#1 : tensor<2x16x64xbf16>, tensor<3x2x16x64xbf16>
  }
  // CHECK:      %[[F0:.*]], %[[F1:.*]] = sim.phase "forward" -> tensor<2x16x64xbf16>, tensor<3x2x16x64xbf16> {
  // CHECK-NEXT:   %[[X:.*]] = sim.embedding %[[TABLE]], %[[IDS]] : (tensor<1000x64xbf16>, tensor<2x16xi64>) -> tensor<2x16x64xbf16>
  // CHECK-NEXT:   %[[R0:.*]], %[[R1:.*]] = sim.repeat 3 iter(%[[X]] : tensor<2x16x64xbf16>) slices(%[[WS]] : tensor<3x64x64xbf16>) -> (tensor<2x16x64xbf16>, tensor<3x2x16x64xbf16>) {
  // CHECK-NEXT:   ^{{.*}}(%[[H:.*]]: tensor<2x16x64xbf16>, %[[W:.*]]: tensor<64x64xbf16>):
  // CHECK-NEXT:     %[[N:.*]] = sim.norm "rms" %[[H]], %[[WN]] : tensor<2x16x64xbf16>, tensor<64xbf16>
  // CHECK-NEXT:     %[[Y:.*]] = sim.matmul %[[N]], %[[W]] {transpose_rhs} : (tensor<2x16x64xbf16>, tensor<64x64xbf16>) -> tensor<2x16x64xbf16>
  // CHECK-NEXT:     %[[Q:.*]] = sim.view %[[Y]] : tensor<2x16x64xbf16> -> tensor<2x16x4x16xbf16>
  // CHECK-NEXT:     %[[KV:.*]] = sim.view %[[N]]
  // CHECK-NEXT:     %[[K:.*]] = sim.generic "aten.slice"(%[[KV]]) {flop_count = 0.000000e+00 : f64, byte_count = 0.000000e+00 : f64} : (tensor<2x16x4x16xbf16>) -> tensor<2x16x2x16xbf16>
  // CHECK-NEXT:     %[[A0:.*]] = sim.attention %[[Q]], %[[K]], %[[K]] {causal}
  // CHECK-NEXT:     %[[A:.*]] = sim.attention %[[A0]], %[[K]], %[[K]] {causal, window = 8 : i64}
  // CHECK-NEXT:     %[[AC:.*]] = sim.attention %[[A]], %[[K]], %[[K]] {causal, chunk = 4 : i64}
  // CHECK-NEXT:     %[[S:.*]] = sim.softmax %[[AC]] dim 3 : tensor<2x16x4x16xbf16>
  // CHECK-NEXT:     %[[O:.*]] = sim.view %[[S]]
  // CHECK-NEXT:     %[[Z:.*]] = sim.elementwise "add" %[[O]], %[[H]] : tensor<2x16x64xbf16>, tensor<2x16x64xbf16> -> tensor<2x16x64xbf16>
  // CHECK-NEXT:     sim.yield %[[Z]], %[[N]] : tensor<2x16x64xbf16>, tensor<2x16x64xbf16>
  // CHECK-NEXT:   }
  // CHECK-NEXT:   sim.yield %[[R0]], %[[R1]]
  // GENERIC: "sim.repeat"(%{{.*}}, %{{.*}}) <{count = 3 : i64, operandSegmentSizes = array<i32: 1, 1>}>
  // GENERIC: "sim.attention"({{.*}}) <{causal, chunk = 4 : i64}>

  %b:2 = sim.phase "backward" -> tensor<3x64x64xbf16>, tensor<64xbf16> {
    %dy = sim.elementwise "fill" %f#0 : tensor<2x16x64xbf16> -> tensor<2x16x64xbf16>
    %rb:2 = sim.repeat 3 iter(%dy : tensor<2x16x64xbf16>) slices(%f#1 : tensor<3x2x16x64xbf16>) {reverse} -> (tensor<2x16x64xbf16>, tensor<3x64x64xbf16>) {
    ^bb0(%g: tensor<2x16x64xbf16>, %n: tensor<2x16x64xbf16>):
      %dw = sim.matmul %g, %n {transpose_lhs} : (tensor<2x16x64xbf16>, tensor<2x16x64xbf16>) -> tensor<2x64x64xbf16>
      %dwsum = sim.reduce "sum" %dw [0] : tensor<2x64x64xbf16> -> tensor<64x64xbf16>
      %qg = sim.view %g : tensor<2x16x64xbf16> -> tensor<2x16x4x16xbf16>
      %kg = sim.view %n : tensor<2x16x64xbf16> -> tensor<2x16x4x16xbf16>
      %dq, %dk, %dv = sim.attention_grad %qg, %kg, %kg, %qg, %qg {causal, flash} : (tensor<2x16x4x16xbf16>, tensor<2x16x4x16xbf16>, tensor<2x16x4x16xbf16>, tensor<2x16x4x16xbf16>, tensor<2x16x4x16xbf16>) -> (tensor<2x16x4x16xbf16>, tensor<2x16x4x16xbf16>, tensor<2x16x4x16xbf16>)
      %dx = sim.view %dq : tensor<2x16x4x16xbf16> -> tensor<2x16x64xbf16>
      sim.yield %dx, %dwsum : tensor<2x16x64xbf16>, tensor<64x64xbf16>
    }
    %dwn = sim.reduce "sum" %rb#0 [0, 1] : tensor<2x16x64xbf16> -> tensor<64xbf16>
    sim.yield %rb#1, %dwn : tensor<3x64x64xbf16>, tensor<64xbf16>
  }
  // CHECK:      sim.repeat 3 iter(%{{.*}} : tensor<2x16x64xbf16>) slices(%[[F1]] : tensor<3x2x16x64xbf16>) {reverse} -> (tensor<2x16x64xbf16>, tensor<3x64x64xbf16>) {
  // CHECK:        sim.matmul %{{.*}}, %{{.*}} {transpose_lhs} : (tensor<2x16x64xbf16>, tensor<2x16x64xbf16>) -> tensor<2x64x64xbf16>
  // CHECK-NEXT:   sim.reduce "sum" %{{.*}} [0] : tensor<2x64x64xbf16> -> tensor<64x64xbf16>
  // CHECK:        sim.attention_grad {{.*}} {causal, flash}
  // CHECK:      sim.reduce "sum" %{{.*}} [0, 1] : tensor<2x16x64xbf16> -> tensor<64xbf16>

  sim.phase "optimizer" {
    sim.optimizer_step "adamw" (%ws, %wn : tensor<3x64x64xbf16>, tensor<64xbf16>) grads (%b#0, %b#1 : tensor<3x64x64xbf16>, tensor<64xbf16>)
    sim.yield
  }
  // CHECK:      sim.phase "optimizer" {
  // CHECK-NEXT:   sim.optimizer_step "adamw"(%[[WS]], %[[WN]] : tensor<3x64x64xbf16>, tensor<64xbf16>) grads(%{{.*}}, %{{.*}} : tensor<3x64x64xbf16>, tensor<64xbf16>)
  // CHECK-NEXT:   sim.yield
  // CHECK-NEXT: }

  // A view that permutes says which input dims each result dim is made of
  // (seq == heads here: sizes alone cannot tell the transpose from a reshape).
  %hs = sim.input "heads_first" : tensor<2x16x16x4xbf16>
  %sh = sim.view %hs {dims = [[0], [2], [1], [3]]} : tensor<2x16x16x4xbf16> -> tensor<2x16x16x4xbf16>
  // CHECK:      %[[HS:.*]] = sim.input "heads_first"
  // CHECK-NEXT: sim.view %[[HS]] {dims = {{\[}}[0 : i64], [2 : i64], [1 : i64], [3 : i64]]} : tensor<2x16x16x4xbf16> -> tensor<2x16x16x4xbf16>
  // GENERIC:    "sim.view"(%{{.*}}) <{dims = {{\[}}[0 : i64], [2 : i64], [1 : i64], [3 : i64]]}>
  // A slicing view of a transposed tensor (a generic: the element count changes)
  // says the same in view_dims.
  %half = sim.generic "aten.slice"(%hs) {flop_count = 0.0 : f64, byte_count = 0.0 : f64, view_dims = [[0], [2], [1], [3]]} : (tensor<2x16x16x4xbf16>) -> tensor<2x16x16x2xbf16>
  // CHECK-NEXT: sim.generic "aten.slice"(%[[HS]]) {{.*}}view_dims = {{\[}}[0 : i64], [2 : i64], [1 : i64], [3 : i64]]{{.*}} : (tensor<2x16x16x4xbf16>) -> tensor<2x16x16x2xbf16>
  // GENERIC:    "sim.generic"(%{{.*}}) <{{{.*}}view_dims = {{\[}}[0 : i64], [2 : i64], [1 : i64], [3 : i64]]{{.*}}}>

  // Each parameter's role (`#sim.role<...>`) and tensor-parallel split
  // (`#sim.split<...>`), set by the frontend; absent: other, not split.
  %emb = sim.param "tok" {role = #sim.role<embedding>} : tensor<1000x64xbf16>
  %wat = sim.param "a" {role = #sim.role<attention>, split = #sim.split<column>} : tensor<64x64xbf16>
  %wkv = sim.param "kv" {role = #sim.role<attention>, split = #sim.split<kv>} : tensor<32x64xbf16>
  %wml = sim.param "m" {role = #sim.role<mlp>, split = #sim.split<row>} : tensor<64x128xbf16>
  %wro = sim.param "r" {role = #sim.role<router>} : tensor<8x64xbf16>
  %wex = sim.param "x" {role = #sim.role<expert>, split = #sim.split<column>} : tensor<8x128x64xbf16>
  %wsh = sim.param "s" {role = #sim.role<shared_expert>} : tensor<128x64xbf16>
  %wno = sim.param "n" {role = #sim.role<norm>} : tensor<64xbf16>
  %whd = sim.param "h" {role = #sim.role<head>} : tensor<1000x64xbf16>
  %wot = sim.param "o" {role = #sim.role<other>} : tensor<64xbf16>
  // CHECK:      sim.param "tok" {role = #sim.role<embedding>} : tensor<1000x64xbf16>
  // CHECK-NEXT: sim.param "a" {role = #sim.role<attention>, split = #sim.split<column>} : tensor<64x64xbf16>
  // CHECK-NEXT: sim.param "kv" {role = #sim.role<attention>, split = #sim.split<kv>} : tensor<32x64xbf16>
  // CHECK-NEXT: sim.param "m" {role = #sim.role<mlp>, split = #sim.split<row>} : tensor<64x128xbf16>
  // CHECK-NEXT: sim.param "r" {role = #sim.role<router>} : tensor<8x64xbf16>
  // CHECK-NEXT: sim.param "x" {role = #sim.role<expert>, split = #sim.split<column>} : tensor<8x128x64xbf16>
  // CHECK-NEXT: sim.param "s" {role = #sim.role<shared_expert>} : tensor<128x64xbf16>
  // CHECK-NEXT: sim.param "n" {role = #sim.role<norm>} : tensor<64xbf16>
  // CHECK-NEXT: sim.param "h" {role = #sim.role<head>} : tensor<1000x64xbf16>
  // CHECK-NEXT: sim.param "o" {role = #sim.role<other>} : tensor<64xbf16>
  // GENERIC:    "sim.param"() <{sym_name = "x", role = #sim.role<expert>, split = #sim.split<column>}> : () -> tensor<8x128x64xbf16>
  // A priced op: `cost-annotate`'s #sim.cost under `sim.cost`, its fields in any
  // order on input, printed in their own order (time_s, flops, bytes, engine),
  // each float to the last digit (it parses back to the same double) and the
  // engine an escaped string literal.
  %ca = sim.input "ca" : tensor<4x8xbf16>
  %cb = sim.elementwise "add" %ca, %ca {sim.cost = #sim.cost<engine = "analytic", bytes = 192, flops = 32, time_s = 2.0000001234567e-06>} : tensor<4x8xbf16>, tensor<4x8xbf16> -> tensor<4x8xbf16>
  // CHECK:      %[[CB:.*]] = sim.elementwise "add" %{{.*}}, %{{.*}} {sim.cost = #sim.cost<time_s = 2.0000001234567e-06, flops = 32.0, bytes = 192.0, engine = "analytic">} : tensor<4x8xbf16>, tensor<4x8xbf16> -> tensor<4x8xbf16>
  // GENERIC:    "sim.elementwise"(%{{.*}}, %{{.*}}) <{kind = #sim<elementwise_kind "add">}> {sim.cost = #sim.cost<time_s = 2.0000001234567e-06, flops = 32.0, bytes = 192.0, engine = "analytic">}
  %cc = sim.elementwise "add" %ca, %ca {sim.cost = #sim.cost<time_s = 1.0e-06, flops = 1.0e+20, bytes = 0, engine = "my \22own\22 \\ engine">} : tensor<4x8xbf16>, tensor<4x8xbf16> -> tensor<4x8xbf16>
  // CHECK-NEXT: sim.elementwise "add" %{{.*}}, %{{.*}} {sim.cost = #sim.cost<time_s = 1.0e-06, flops = 1.0e+20, bytes = 0.0, engine = "my \22own\22 \\ engine">}
  // A flash attention may name the kernel that runs it (`#sim<attention_kernel ...>`).
  %aq = sim.input "aq" : tensor<1x16x8x64xbf16>
  %ak = sim.input "ak" : tensor<1x16x4x64xbf16>
  %ao = sim.attention %aq, %ak, %ak {causal, flash, kernel = #sim<attention_kernel "flash3">} : (tensor<1x16x8x64xbf16>, tensor<1x16x4x64xbf16>, tensor<1x16x4x64xbf16>) -> tensor<1x16x8x64xbf16>
  // CHECK:      sim.attention %{{.*}}, %{{.*}}, %{{.*}} {causal, flash, kernel = #sim<attention_kernel "flash3">} : (tensor<1x16x8x64xbf16>, tensor<1x16x4x64xbf16>, tensor<1x16x4x64xbf16>) -> tensor<1x16x8x64xbf16>
  // GENERIC:    "sim.attention"(%{{.*}}, %{{.*}}, %{{.*}}) <{causal, flash, kernel = #sim<attention_kernel "flash3">}>
  // Op kinds are enum attributes (#sim<phase_kind ...>, #sim<norm_kind ...>, ...),
  // printed as the string literal they always were; a bare word parses too.
  %kx = sim.input "kx" : tensor<4x8xbf16>
  %kw = sim.param "kw" : tensor<8xbf16>
  %kn = sim.norm layer %kx, %kw : tensor<4x8xbf16>, tensor<8xbf16>
  %km = sim.reduce max %kn [1] : tensor<4x8xbf16> -> tensor<4xbf16>
  %ke = sim.elementwise rms_norm_grad %kx, %kn, %kw : tensor<4x8xbf16>, tensor<4x8xbf16>, tensor<8xbf16> -> tensor<4x8xbf16>
  sim.phase decode {
    sim.optimizer_step sgd (%kw : tensor<8xbf16>) grads (%kw : tensor<8xbf16>)
    sim.yield
  }
  // CHECK:      %[[KX:.*]] = sim.input "kx" : tensor<4x8xbf16>
  // CHECK-NEXT: %[[KW:.*]] = sim.param "kw" : tensor<8xbf16>
  // CHECK-NEXT: %[[KN:.*]] = sim.norm "layer" %[[KX]], %[[KW]] : tensor<4x8xbf16>, tensor<8xbf16>
  // CHECK-NEXT: %{{.*}} = sim.reduce "max" %[[KN]] [1] : tensor<4x8xbf16> -> tensor<4xbf16>
  // CHECK-NEXT: %{{.*}} = sim.elementwise "rms_norm_grad" %[[KX]], %[[KN]], %[[KW]] : tensor<4x8xbf16>, tensor<4x8xbf16>, tensor<8xbf16> -> tensor<4x8xbf16>
  // CHECK-NEXT: sim.phase "decode" {
  // CHECK-NEXT:   sim.optimizer_step "sgd"(%[[KW]] : tensor<8xbf16>) grads(%[[KW]] : tensor<8xbf16>)
  // CHECK-NEXT:   sim.yield
  // CHECK-NEXT: }
  // GENERIC:      "sim.norm"(%{{.*}}, %{{.*}}) <{kind = #sim<norm_kind "layer">}>
  // GENERIC-NEXT: "sim.reduce"(%{{.*}}) <{kind = #sim<reduce_kind "max">, dims = array<i64: 1>}>
  // GENERIC-NEXT: "sim.elementwise"(%{{.*}}, %{{.*}}, %{{.*}}) <{kind = #sim<elementwise_kind "rms_norm_grad">}>
  // GENERIC-NEXT: "sim.phase"() <{kind = #sim<phase_kind "decode">}> ({
  // GENERIC-NEXT:   "sim.optimizer_step"(%{{.*}}, %{{.*}}) <{kind = #sim<optimizer_kind "sgd">, operandSegmentSizes = array<i32: 1, 1>}>
  // The recompute pass's marks (`sim.recompute`, #sim<recompute ...>) and the policy
  // it records on the module (#sim<recompute_policy ...>); a bare word parses too.
  %rx = sim.input "rx" : tensor<4x8xbf16>
  %ry = sim.elementwise "exp" %rx {sim.recompute = #sim<recompute "selective">} : tensor<4x8xbf16> -> tensor<4x8xbf16>
  %rz = sim.elementwise exp %ry {sim.recompute = #sim<recompute full>} : tensor<4x8xbf16> -> tensor<4x8xbf16>
  %ro = sim.elementwise "exp" %rz {sim.recompute = #sim<recompute "selective-op">} : tensor<4x8xbf16> -> tensor<4x8xbf16>
  builtin.module attributes {sim.recompute_policy = #sim<recompute_policy none>} {
  }
  builtin.module attributes {sim.recompute_policy = #sim<recompute_policy "selective-op">} {
  }
  // CHECK:      %[[RX:.*]] = sim.input "rx" : tensor<4x8xbf16>
  // CHECK-NEXT: %[[RY:.*]] = sim.elementwise "exp" %[[RX]] {sim.recompute = #sim<recompute "selective">} : tensor<4x8xbf16> -> tensor<4x8xbf16>
  // CHECK-NEXT: %[[RZ:.*]] = sim.elementwise "exp" %[[RY]] {sim.recompute = #sim<recompute "full">} : tensor<4x8xbf16> -> tensor<4x8xbf16>
  // CHECK-NEXT: %{{.*}} = sim.elementwise "exp" %[[RZ]] {sim.recompute = #sim<recompute "selective-op">} : tensor<4x8xbf16> -> tensor<4x8xbf16>
  // CHECK-NEXT: builtin.module attributes {sim.recompute_policy = #sim<recompute_policy "none">} {
  // CHECK:      builtin.module attributes {sim.recompute_policy = #sim<recompute_policy "selective-op">} {
  // GENERIC:      "sim.elementwise"(%{{.*}}) <{kind = #sim<elementwise_kind "exp">}> {sim.recompute = #sim<recompute "selective">}
  // GENERIC-NEXT: "sim.elementwise"(%{{.*}}) <{kind = #sim<elementwise_kind "exp">}> {sim.recompute = #sim<recompute "full">}
  // GENERIC-NEXT: "sim.elementwise"(%{{.*}}) <{kind = #sim<elementwise_kind "exp">}> {sim.recompute = #sim<recompute "selective-op">}
  // GENERIC:      }) {sim.recompute_policy = #sim<recompute_policy "none">} : () -> ()
  // GENERIC:      }) {sim.recompute_policy = #sim<recompute_policy "selective-op">} : () -> ()
  // A value another pipeline stage holds (the pipeline pass's, gone once it is done).
  %away = sim.off_stage : tensor<4x8xbf16>
  // CHECK:      sim.off_stage : tensor<4x8xbf16>
  // GENERIC:    "sim.off_stage"() : () -> tensor<4x8xbf16>
}
// GENERIC: }) {sim.pipeline = #sim.pipeline<pp = 2, vpp = 2, schedule = "interleaved", microbatches = 8, layers = [1, 2, 0, 3]>, sim.data_parallel = #sim.data_parallel<dp = 4, zero = 1, bucket_mb = 25, overlap = true, overlap_param_gather = true>, sim.memory = [#sim.memory<stage = 0, params = 100, grads = 100, optimizer = 600, activations = 2000, saved_per_microbatch = 500, in_flight = 4, comm_buffers = 8, weight_grad_residual = 0>], sim.replicated_flops = #sim.replicated_flops<"shard-tensor" = 42500.0, "sequence-parallel" = -1.0e+20>, sim.target = #sim.target<hardware = "H100-SXM5-80GB", gpus = 16, gpus_per_node = 8, cluster = "name = \22two\22 nodes = 2">} : () -> ()
