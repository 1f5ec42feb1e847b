// Two layers of 4 routed experts in a `sim.repeat`: the experts' weight stacked
// [layers, experts, in, out] (GPT-OSS's layout, read without transposition), beside a
// non-expert parameter of the same shape and a batched GEMM of two activations.
builtin.module {
  %x = sim.input "rows" : tensor<4x8x16xbf16>
  %w = sim.param "mlp.experts.gate_up_proj" {stacked, role = #sim.role<expert>, split = #sim.split<column>} : tensor<2x4x16x32xbf16>
  %o = sim.param "other.proj" {stacked} : tensor<2x4x16x32xbf16>
  %r:3 = sim.repeat 2 iter(%x : tensor<4x8x16xbf16>) slices(%w, %o : tensor<2x4x16x32xbf16>, tensor<2x4x16x32xbf16>) -> (tensor<4x8x16xbf16>, tensor<2x4x16x32xbf16>, tensor<2x4x8x8xbf16>) {
  ^bb0(%h: tensor<4x8x16xbf16>, %wl: tensor<4x16x32xbf16>, %ol: tensor<4x16x32xbf16>):
    %y = sim.matmul %h, %wl : (tensor<4x8x16xbf16>, tensor<4x16x32xbf16>) -> tensor<4x8x32xbf16>
    %z = sim.matmul %h, %ol : (tensor<4x8x16xbf16>, tensor<4x16x32xbf16>) -> tensor<4x8x32xbf16>
    %dw = sim.matmul %h, %y {transpose_lhs} : (tensor<4x8x16xbf16>, tensor<4x8x32xbf16>) -> tensor<4x16x32xbf16>
    %s = sim.matmul %h, %h {transpose_rhs} : (tensor<4x8x16xbf16>, tensor<4x8x16xbf16>) -> tensor<4x8x8xbf16>
    %dx = sim.matmul %z, %wl {transpose_rhs} : (tensor<4x8x32xbf16>, tensor<4x16x32xbf16>) -> tensor<4x8x16xbf16>
    sim.yield %dx, %dw, %s : tensor<4x8x16xbf16>, tensor<4x16x32xbf16>, tensor<4x8x8xbf16>
  }
}
