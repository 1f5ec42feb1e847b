// A tiny MoE layer (32 tokens, hidden 64, 8 experts, top-2, expert ffn 32), forward and backward (test/lit/passes/shard_expert.mlir's input).
builtin.module {
  %x = sim.input "hidden" : tensor<32x64xbf16>
  %wr = sim.param "mlp.gate.weight" {role = #sim.role<router>} : tensor<8x64xbf16>
  %wgu = sim.param "mlp.experts.gate_up_proj" {role = #sim.role<expert>, split = #sim.split<column>} : tensor<8x64x64xbf16>
  %wd = sim.param "mlp.experts.down_proj" {role = #sim.role<expert>, split = #sim.split<row>} : tensor<8x64x32xbf16>
  %f:9 = sim.phase "forward" -> tensor<32x2xbf16>, tensor<32x2xi64>, tensor<8x8x64xbf16>, tensor<8x8x32xbf16>, tensor<8x8x32xbf16>, tensor<8x8x32xbf16>, tensor<8x8x32xbf16>, tensor<8x8x64xbf16>, tensor<32x64xbf16> {
    %s = sim.matmul %x, %wr {transpose_rhs} : (tensor<32x64xbf16>, tensor<8x64xbf16>) -> tensor<32x8xbf16>
    %p = sim.softmax %s dim 1 : tensor<32x8xbf16>
    %w, %i = sim.topk %p k = 2 : tensor<32x8xbf16> -> (tensor<32x2xbf16>, tensor<32x2xi64>)
    %xd = sim.moe_dispatch %x, %i : (tensor<32x64xbf16>, tensor<32x2xi64>) -> tensor<8x8x64xbf16>
    %gu = sim.matmul %xd, %wgu {transpose_rhs} : (tensor<8x8x64xbf16>, tensor<8x64x64xbf16>) -> tensor<8x8x64xbf16>
    %g = sim.generic "aten.split"(%gu) {flop_count = 0.0 : f64, byte_count = 0.0 : f64} : (tensor<8x8x64xbf16>) -> tensor<8x8x32xbf16>
    %u = sim.generic "aten.split"(%gu) {flop_count = 0.0 : f64, byte_count = 0.0 : f64} : (tensor<8x8x64xbf16>) -> tensor<8x8x32xbf16>
    %a = sim.elementwise "silu" %g : tensor<8x8x32xbf16> -> tensor<8x8x32xbf16>
    %m = sim.elementwise "mul" %a, %u : tensor<8x8x32xbf16>, tensor<8x8x32xbf16> -> tensor<8x8x32xbf16>
    %y = sim.matmul %m, %wd {transpose_rhs} : (tensor<8x8x32xbf16>, tensor<8x64x32xbf16>) -> tensor<8x8x64xbf16>
    %out = sim.moe_combine %y, %i weights %w : tensor<32x2xbf16> : (tensor<8x8x64xbf16>, tensor<32x2xi64>) -> tensor<32x64xbf16>
    sim.yield %w, %i, %xd, %g, %u, %a, %m, %y, %out : tensor<32x2xbf16>, tensor<32x2xi64>, tensor<8x8x64xbf16>, tensor<8x8x32xbf16>, tensor<8x8x32xbf16>, tensor<8x8x32xbf16>, tensor<8x8x32xbf16>, tensor<8x8x64xbf16>, tensor<32x64xbf16>
  }
  %b:3 = sim.phase "backward" -> tensor<8x64x64xbf16>, tensor<8x64x32xbf16>, tensor<32x64xbf16> {
    %dy = sim.elementwise "fill" %f#8 : tensor<32x64xbf16> -> tensor<32x64xbf16>
    %dye = sim.moe_dispatch %dy, %f#1 : (tensor<32x64xbf16>, tensor<32x2xi64>) -> tensor<8x8x64xbf16>
    %dw = sim.generic "moe_combine_weight_grad"(%f#7, %dy, %f#1) {flop_count = 8192.0 : f64, byte_count = 0.0 : f64} : (tensor<8x8x64xbf16>, tensor<32x64xbf16>, tensor<32x2xi64>) -> tensor<32x2xbf16>
    %dwd = sim.matmul %dye, %f#6 {transpose_lhs} : (tensor<8x8x64xbf16>, tensor<8x8x32xbf16>) -> tensor<8x64x32xbf16>
    %dm = sim.matmul %dye, %wd : (tensor<8x8x64xbf16>, tensor<8x64x32xbf16>) -> tensor<8x8x32xbf16>
    %da = sim.elementwise "mul" %dm, %f#4 : tensor<8x8x32xbf16>, tensor<8x8x32xbf16> -> tensor<8x8x32xbf16>
    %du = sim.elementwise "mul" %dm, %f#5 : tensor<8x8x32xbf16>, tensor<8x8x32xbf16> -> tensor<8x8x32xbf16>
    %dg = sim.elementwise "silu_grad" %da, %f#3 : tensor<8x8x32xbf16>, tensor<8x8x32xbf16> -> tensor<8x8x32xbf16>
    %dgu = sim.generic "aten.cat"(%dg, %du) {flop_count = 0.0 : f64, byte_count = 0.0 : f64} : (tensor<8x8x32xbf16>, tensor<8x8x32xbf16>) -> tensor<8x8x64xbf16>
    %dwgu = sim.matmul %dgu, %f#2 {transpose_lhs} : (tensor<8x8x64xbf16>, tensor<8x8x64xbf16>) -> tensor<8x64x64xbf16>
    %dxd = sim.matmul %dgu, %wgu : (tensor<8x8x64xbf16>, tensor<8x64x64xbf16>) -> tensor<8x8x64xbf16>
    %dx = sim.moe_combine %dxd, %f#1 : (tensor<8x8x64xbf16>, tensor<32x2xi64>) -> tensor<32x64xbf16>
    sim.yield %dwgu, %dwd, %dx : tensor<8x64x64xbf16>, tensor<8x64x32xbf16>, tensor<32x64xbf16>
  }
  sim.phase "optimizer" {
    sim.optimizer_step "adamw" (%wgu, %wd : tensor<8x64x64xbf16>, tensor<8x64x32xbf16>) grads (%b#0, %b#1 : tensor<8x64x64xbf16>, tensor<8x64x32xbf16>)
    sim.yield
  }
}

