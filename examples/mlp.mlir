// A two-layer MLP forward and backward on one GPU: x[8192, 4096] -> 16384 -> 4096.
builtin.module {
  %x = sim.input "tokens_embedded" : tensor<8192x4096xbf16>
  %w1 = sim.param "fc1.weight" {role = #sim.role<mlp>, split = #sim.split<column>} : tensor<16384x4096xbf16>
  %w2 = sim.param "fc2.weight" {role = #sim.role<mlp>, split = #sim.split<row>} : tensor<4096x16384xbf16>
  %fwd:3 = sim.phase "forward" -> tensor<8192x16384xbf16>, tensor<8192x16384xbf16>, tensor<8192x4096xbf16> {
    %h = sim.matmul %x, %w1 {transpose_rhs} : (tensor<8192x4096xbf16>, tensor<16384x4096xbf16>) -> tensor<8192x16384xbf16>
    %a = sim.elementwise "gelu" %h : tensor<8192x16384xbf16> -> tensor<8192x16384xbf16>
    %y = sim.matmul %a, %w2 {transpose_rhs} : (tensor<8192x16384xbf16>, tensor<4096x16384xbf16>) -> tensor<8192x4096xbf16>
    sim.yield %h, %a, %y : tensor<8192x16384xbf16>, tensor<8192x16384xbf16>, tensor<8192x4096xbf16>
  }
  %bwd:2 = sim.phase "backward" -> tensor<16384x4096xbf16>, tensor<4096x16384xbf16> {
    %dy = sim.elementwise "fill" %fwd#2 : tensor<8192x4096xbf16> -> tensor<8192x4096xbf16>
    %dw2 = sim.matmul %dy, %fwd#1 {transpose_lhs} : (tensor<8192x4096xbf16>, tensor<8192x16384xbf16>) -> tensor<4096x16384xbf16>
    %da = sim.matmul %dy, %w2 : (tensor<8192x4096xbf16>, tensor<4096x16384xbf16>) -> tensor<8192x16384xbf16>
    %dh = sim.elementwise "gelu_grad" %da, %fwd#0 : tensor<8192x16384xbf16>, tensor<8192x16384xbf16> -> tensor<8192x16384xbf16>
    %dw1 = sim.matmul %dh, %x {transpose_lhs} : (tensor<8192x16384xbf16>, tensor<8192x4096xbf16>) -> tensor<16384x4096xbf16>
    sim.yield %dw1, %dw2 : tensor<16384x4096xbf16>, tensor<4096x16384xbf16>
  }
  sim.phase "optimizer" {
    sim.optimizer_step "adamw" (%w1, %w2 : tensor<16384x4096xbf16>, tensor<4096x16384xbf16>) grads (%bwd#0, %bwd#1 : tensor<16384x4096xbf16>, tensor<4096x16384xbf16>)
    sim.yield
  }
}
