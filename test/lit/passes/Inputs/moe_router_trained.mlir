// The routed-experts MLP of parallel/examples.py with the router weight trained too:
// a dense parameter beside the experts (input of data_parallel.mlir's EP run).
builtin.module {
  %x = sim.input "hidden" : tensor<64x32xbf16>
  %wr = sim.param "mlp.gate.weight" {role = #sim.role<router>} : tensor<8x32xbf16>
  %wgu = sim.param "mlp.experts.gate_up_proj" {role = #sim.role<expert>, split = #sim.split<column>} : tensor<8x96x32xbf16>
  %wd = sim.param "mlp.experts.down_proj" {role = #sim.role<expert>, split = #sim.split<row>} : tensor<8x32x48xbf16>
  %f, %f_1, %f_2, %f_3, %f_4, %f_5, %f_6, %f_7, %f_8 = sim.phase "forward" -> tensor<64x2xbf16>, tensor<64x2xi64>, tensor<8x16x32xbf16>, tensor<8x16x48xbf16>, tensor<8x16x48xbf16>, tensor<8x16x48xbf16>, tensor<8x16x48xbf16>, tensor<8x16x32xbf16>, tensor<64x32xbf16> {
    %s = sim.matmul %x, %wr {transpose_rhs} : (tensor<64x32xbf16>, tensor<8x32xbf16>) -> tensor<64x8xbf16>
    %p = sim.softmax %s dim 1 : tensor<64x8xbf16>
    %w, %i = sim.topk %p k = 2 : tensor<64x8xbf16> -> (tensor<64x2xbf16>, tensor<64x2xi64>)
    %xd = sim.moe_dispatch %x, %i : (tensor<64x32xbf16>, tensor<64x2xi64>) -> tensor<8x16x32xbf16>
    %gu = sim.matmul %xd, %wgu {transpose_rhs} : (tensor<8x16x32xbf16>, tensor<8x96x32xbf16>) -> tensor<8x16x96xbf16>
    %g = sim.generic "aten.split"(%gu) {flop_count = 0.000000e+00 : f64, byte_count = 0.000000e+00 : f64} : (tensor<8x16x96xbf16>) -> tensor<8x16x48xbf16>
    %u = sim.generic "aten.split"(%gu) {flop_count = 0.000000e+00 : f64, byte_count = 0.000000e+00 : f64} : (tensor<8x16x96xbf16>) -> tensor<8x16x48xbf16>
    %a = sim.elementwise "silu" %g : tensor<8x16x48xbf16> -> tensor<8x16x48xbf16>
    %m = sim.elementwise "mul" %a, %u : tensor<8x16x48xbf16>, tensor<8x16x48xbf16> -> tensor<8x16x48xbf16>
    %y = sim.matmul %m, %wd {transpose_rhs} : (tensor<8x16x48xbf16>, tensor<8x32x48xbf16>) -> tensor<8x16x32xbf16>
    %out = sim.moe_combine %y, %i weights %w : tensor<64x2xbf16> : (tensor<8x16x32xbf16>, tensor<64x2xi64>) -> tensor<64x32xbf16>
    sim.yield %w, %i, %xd, %g, %u, %a, %m, %y, %out : tensor<64x2xbf16>, tensor<64x2xi64>, tensor<8x16x32xbf16>, tensor<8x16x48xbf16>, tensor<8x16x48xbf16>, tensor<8x16x48xbf16>, tensor<8x16x48xbf16>, tensor<8x16x32xbf16>, tensor<64x32xbf16>
  }
  %b, %b_1, %b_2, %b_3 = sim.phase "backward" -> tensor<8x32xbf16>, tensor<8x96x32xbf16>, tensor<8x32x48xbf16>, tensor<64x32xbf16> {
    %dy = sim.elementwise "fill" %f_8 : tensor<64x32xbf16> -> tensor<64x32xbf16>
    %dye = sim.moe_dispatch %dy, %f_1 : (tensor<64x32xbf16>, tensor<64x2xi64>) -> tensor<8x16x32xbf16>
    %dw = sim.generic "moe_combine_weight_grad"(%f_7, %dy, %f_1) {flop_count = 8.192000e+03 : f64, byte_count = 0.000000e+00 : f64} : (tensor<8x16x32xbf16>, tensor<64x32xbf16>, tensor<64x2xi64>) -> tensor<64x2xbf16>
    %dwr = sim.generic "router_weight_grad"(%dw, %x) {flop_count = 0.000000e+00 : f64, byte_count = 0.000000e+00 : f64} : (tensor<64x2xbf16>, tensor<64x32xbf16>) -> tensor<8x32xbf16>
    %dwd = sim.matmul %dye, %f_6 {transpose_lhs} : (tensor<8x16x32xbf16>, tensor<8x16x48xbf16>) -> tensor<8x32x48xbf16>
    %dm = sim.matmul %dye, %wd : (tensor<8x16x32xbf16>, tensor<8x32x48xbf16>) -> tensor<8x16x48xbf16>
    %da = sim.elementwise "mul" %dm, %f_4 : tensor<8x16x48xbf16>, tensor<8x16x48xbf16> -> tensor<8x16x48xbf16>
    %du = sim.elementwise "mul" %dm, %f_5 : tensor<8x16x48xbf16>, tensor<8x16x48xbf16> -> tensor<8x16x48xbf16>
    %dg = sim.elementwise "silu_grad" %da, %f_3 : tensor<8x16x48xbf16>, tensor<8x16x48xbf16> -> tensor<8x16x48xbf16>
    %dgu = sim.generic "aten.cat"(%dg, %du) {flop_count = 0.000000e+00 : f64, byte_count = 0.000000e+00 : f64} : (tensor<8x16x48xbf16>, tensor<8x16x48xbf16>) -> tensor<8x16x96xbf16>
    %dwgu = sim.matmul %dgu, %f_2 {transpose_lhs} : (tensor<8x16x96xbf16>, tensor<8x16x32xbf16>) -> tensor<8x96x32xbf16>
    %dxd = sim.matmul %dgu, %wgu : (tensor<8x16x96xbf16>, tensor<8x96x32xbf16>) -> tensor<8x16x32xbf16>
    %dx = sim.moe_combine %dxd, %f_1 : (tensor<8x16x32xbf16>, tensor<64x2xi64>) -> tensor<64x32xbf16>
    sim.yield %dwr, %dwgu, %dwd, %dx : tensor<8x32xbf16>, tensor<8x96x32xbf16>, tensor<8x32x48xbf16>, tensor<64x32xbf16>
  }
  sim.phase "optimizer" {
    sim.optimizer_step "adamw"(%wr, %wgu, %wd : tensor<8x32xbf16>, tensor<8x96x32xbf16>, tensor<8x32x48xbf16>) grads(%b, %b_1, %b_2 : tensor<8x32xbf16>, tensor<8x96x32xbf16>, tensor<8x32x48xbf16>)
    sim.yield
  }
}
