builtin.module attributes {sim.model = "tiny-mixtral", sim.mode = "train", sim.seq_len = 256 : i64, sim.batch = 1 : i64, sim.dtype = "bf16", sim.frontend = "charon-frontend-5", sim.hf_param_count = 140096 : i64, sim.free_ops = {aten._unsafe_view = 7 : i64, aten.clone = 3 : i64, aten.detach = 12 : i64, aten.expand = 4 : i64, aten.slice = 8 : i64, aten.split = 1 : i64, aten.t = 30 : i64, aten.transpose = 20 : i64, aten.unsqueeze = 3 : i64, aten.view = 33 : i64}, sim.generic_ops = {aten._log_softmax = 1 : i64, aten._log_softmax_backward_data = 1 : i64, aten._softmax_backward_data = 1 : i64, aten.cat = 4 : i64, aten.embedding_dense_backward = 1 : i64, aten.new_zeros = 1 : i64, aten.nll_loss_backward = 1 : i64, aten.nll_loss_forward = 1 : i64, aten.scatter = 1 : i64, aten.slice_backward = 4 : i64}} {
  %0 = sim.param "model.embed_tokens.weight" {role = #sim.role<embedding>} : tensor<128x64xbf16>
  %1 = sim.input "buffer:model.rotary_emb.inv_freq" : tensor<8xf32>
  %2 = sim.input "buffer:model.rotary_emb.original_inv_freq" : tensor<8xf32>
  %3 = sim.input "tokens" {tokens} : tensor<1x256xi64>
  %4 = sim.input "positions" : tensor<1x256xi64>
  %5 = sim.param "model.norm.weight" {role = #sim.role<norm>} : tensor<64xbf16>
  %6 = sim.param "lm_head.weight" {role = #sim.role<head>} : tensor<128x64xbf16>
  %7 = sim.input "labels" : tensor<1x256xi64>
  %8 = sim.param "model.layers[0:2].self_attn.q_proj.weight" {role = #sim.role<attention>, split = #sim.split<column>, stacked} : tensor<2x64x64xbf16>
  %9 = sim.param "model.layers[0:2].self_attn.k_proj.weight" {role = #sim.role<attention>, split = #sim.split<kv>, stacked} : tensor<2x32x64xbf16>
  %10 = sim.param "model.layers[0:2].self_attn.v_proj.weight" {role = #sim.role<attention>, split = #sim.split<kv>, stacked} : tensor<2x32x64xbf16>
  %11 = sim.param "model.layers[0:2].self_attn.o_proj.weight" {role = #sim.role<attention>, split = #sim.split<row>, stacked} : tensor<2x64x64xbf16>
  %12 = sim.param "model.layers[0:2].mlp.gate.weight" {role = #sim.role<router>, stacked} : tensor<2x4x64xbf16>
  %13 = sim.param "model.layers[0:2].mlp.experts.gate_up_proj" {role = #sim.role<expert>, split = #sim.split<column>, stacked} : tensor<2x4x128x64xbf16>
  %14 = sim.param "model.layers[0:2].mlp.experts.down_proj" {role = #sim.role<expert>, split = #sim.split<row>, stacked} : tensor<2x4x64x64xbf16>
  %15 = sim.param "model.layers[0:2].input_layernorm.weight" {role = #sim.role<norm>, stacked} : tensor<2x64xbf16>
  %16 = sim.param "model.layers[0:2].post_attention_layernorm.weight" {role = #sim.role<norm>, stacked} : tensor<2x64xbf16>
  %17 = sim.input "grad_loss" : tensor<f32>
  %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50 = sim.phase "forward" -> tensor<f32>, tensor<2x1x256x64xf32>, tensor<2x1x256x1xf32>, tensor<2x1x256x64xbf16>, tensor<2x256x64xbf16>, tensor<2x1x256x4x16xbf16>, tensor<2x1x256x2x16xbf16>, tensor<2x1x256x2x16xbf16>, tensor<2x1x256x4x16xbf16>, tensor<2x256x64xbf16>, tensor<2x1x256x64xf32>, tensor<2x1x256x1xf32>, tensor<2x1x256x64xbf16>, tensor<2x256x64xbf16>, tensor<2x256x4xf32>, tensor<2x256x2xi64>, tensor<2x256x1xf32>, tensor<2x256x2xf32>, tensor<2x4x128x64xbf16>, tensor<2x4x128x64xbf16>, tensor<2x4x128x64xbf16>, tensor<2x4x128x64xbf16>, tensor<2x4x128x64xbf16>, tensor<2x4x128x64xbf16>, tensor<2x256x2xbf16>, tensor<1x256x64xf32>, tensor<1x256x1xf32>, tensor<1x256x64xbf16>, tensor<256x64xbf16>, tensor<256x128xf32>, tensor<f32>, tensor<1x256x16xbf16>, tensor<1x256x16xbf16> {
    %51 = sim.embedding %0, %3 : (tensor<128x64xbf16>, tensor<1x256xi64>) -> tensor<1x256x64xbf16>
    %52 = sim.view %4 : tensor<1x256xi64> -> tensor<1x256x1xi64>
    %53 = sim.elementwise "cast" %52 : tensor<1x256x1xi64> -> tensor<1x256x1xf32>
    %54 = sim.elementwise "mul" %53, %1 : tensor<1x256x1xf32>, tensor<8xf32> -> tensor<1x256x8xf32>
    %55 = sim.generic "aten.cat"(%54, %54) {flop_count = 0.000000e+00 : f64, byte_count = 3.276800e+04 : f64} : (tensor<1x256x8xf32>, tensor<1x256x8xf32>) -> tensor<1x256x16xf32>
    %56 = sim.elementwise "cos" %55 : tensor<1x256x16xf32> -> tensor<1x256x16xf32>
    %57 = sim.elementwise "mul" %56 : tensor<1x256x16xf32> -> tensor<1x256x16xf32>
    %58 = sim.elementwise "sin" %55 : tensor<1x256x16xf32> -> tensor<1x256x16xf32>
    %59 = sim.elementwise "mul" %58 : tensor<1x256x16xf32> -> tensor<1x256x16xf32>
    %60 = sim.elementwise "cast" %57 : tensor<1x256x16xf32> -> tensor<1x256x16xbf16>
    %61 = sim.elementwise "cast" %59 : tensor<1x256x16xf32> -> tensor<1x256x16xbf16>
    %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86 = sim.repeat 2 iter(%51 : tensor<1x256x64xbf16>) slices(%8, %9, %10, %11, %12, %13, %14, %15, %16 : tensor<2x64x64xbf16>, tensor<2x32x64xbf16>, tensor<2x32x64xbf16>, tensor<2x64x64xbf16>, tensor<2x4x64xbf16>, tensor<2x4x128x64xbf16>, tensor<2x4x64x64xbf16>, tensor<2x64xbf16>, tensor<2x64xbf16>) -> (tensor<1x256x64xbf16>, tensor<2x1x256x64xf32>, tensor<2x1x256x1xf32>, tensor<2x1x256x64xbf16>, tensor<2x256x64xbf16>, tensor<2x1x256x4x16xbf16>, tensor<2x1x256x2x16xbf16>, tensor<2x1x256x2x16xbf16>, tensor<2x1x256x4x16xbf16>, tensor<2x256x64xbf16>, tensor<2x1x256x64xf32>, tensor<2x1x256x1xf32>, tensor<2x1x256x64xbf16>, tensor<2x256x64xbf16>, tensor<2x256x4xf32>, tensor<2x256x2xi64>, tensor<2x256x1xf32>, tensor<2x256x2xf32>, tensor<2x4x128x64xbf16>, tensor<2x4x128x64xbf16>, tensor<2x4x128x64xbf16>, tensor<2x4x128x64xbf16>, tensor<2x4x128x64xbf16>, tensor<2x4x128x64xbf16>, tensor<2x256x2xbf16>) {
    ^bb0(%87: tensor<1x256x64xbf16>, %88: tensor<64x64xbf16>, %89: tensor<32x64xbf16>, %90: tensor<32x64xbf16>, %91: tensor<64x64xbf16>, %92: tensor<4x64xbf16>, %93: tensor<4x128x64xbf16>, %94: tensor<4x64x64xbf16>, %95: tensor<64xbf16>, %96: tensor<64xbf16>):
      %97 = sim.elementwise "cast" %87 : tensor<1x256x64xbf16> -> tensor<1x256x64xf32>
      %98 = sim.elementwise "pow" %97 : tensor<1x256x64xf32> -> tensor<1x256x64xf32>
      %99 = sim.reduce "mean" %98 [2] : tensor<1x256x64xf32> -> tensor<1x256x1xf32>
      %100 = sim.elementwise "add" %99 : tensor<1x256x1xf32> -> tensor<1x256x1xf32>
      %101 = sim.elementwise "rsqrt" %100 : tensor<1x256x1xf32> -> tensor<1x256x1xf32>
      %102 = sim.elementwise "mul" %97, %101 : tensor<1x256x64xf32>, tensor<1x256x1xf32> -> tensor<1x256x64xf32>
      %103 = sim.elementwise "cast" %102 : tensor<1x256x64xf32> -> tensor<1x256x64xbf16>
      %104 = sim.elementwise "mul" %95, %103 : tensor<64xbf16>, tensor<1x256x64xbf16> -> tensor<1x256x64xbf16>
      %105 = sim.matmul %104, %88 {transpose_rhs} : (tensor<1x256x64xbf16>, tensor<64x64xbf16>) -> tensor<1x256x64xbf16>
      %106 = sim.matmul %104, %89 {transpose_rhs} : (tensor<1x256x64xbf16>, tensor<32x64xbf16>) -> tensor<1x256x32xbf16>
      %107 = sim.matmul %104, %90 {transpose_rhs} : (tensor<1x256x64xbf16>, tensor<32x64xbf16>) -> tensor<1x256x32xbf16>
      %108 = sim.view %105 {dims = [[0 : i64], [2 : i64], [1 : i64], [2 : i64]]} : tensor<1x256x64xbf16> -> tensor<1x4x256x16xbf16>
      %109 = sim.view %60 : tensor<1x256x16xbf16> -> tensor<1x1x256x16xbf16>
      %110 = sim.elementwise "mul" %108, %109 : tensor<1x4x256x16xbf16>, tensor<1x1x256x16xbf16> -> tensor<1x4x256x16xbf16>
      %111 = sim.generic "aten.slice"(%105) {flop_count = 0.000000e+00 : f64, byte_count = 0.000000e+00 : f64, view_dims = [[0 : i64], [2 : i64], [1 : i64], [2 : i64]]} : (tensor<1x256x64xbf16>) -> tensor<1x4x256x8xbf16>
      %112 = sim.elementwise "neg" %111 : tensor<1x4x256x8xbf16> -> tensor<1x4x256x8xbf16>
      %113 = sim.generic "aten.slice"(%105) {flop_count = 0.000000e+00 : f64, byte_count = 0.000000e+00 : f64, view_dims = [[0 : i64], [2 : i64], [1 : i64], [2 : i64]]} : (tensor<1x256x64xbf16>) -> tensor<1x4x256x8xbf16>
      %114 = sim.generic "aten.cat"(%112, %113) {flop_count = 0.000000e+00 : f64, byte_count = 6.553600e+04 : f64} : (tensor<1x4x256x8xbf16>, tensor<1x4x256x8xbf16>) -> tensor<1x4x256x16xbf16>
      %115 = sim.view %61 : tensor<1x256x16xbf16> -> tensor<1x1x256x16xbf16>
      %116 = sim.elementwise "mul" %114, %115 : tensor<1x4x256x16xbf16>, tensor<1x1x256x16xbf16> -> tensor<1x4x256x16xbf16>
      %117 = sim.elementwise "add" %110, %116 : tensor<1x4x256x16xbf16>, tensor<1x4x256x16xbf16> -> tensor<1x4x256x16xbf16>
      %118 = sim.view %106 {dims = [[0 : i64], [2 : i64], [1 : i64], [2 : i64]]} : tensor<1x256x32xbf16> -> tensor<1x2x256x16xbf16>
      %119 = sim.elementwise "mul" %118, %109 : tensor<1x2x256x16xbf16>, tensor<1x1x256x16xbf16> -> tensor<1x2x256x16xbf16>
      %120 = sim.generic "aten.slice"(%106) {flop_count = 0.000000e+00 : f64, byte_count = 0.000000e+00 : f64, view_dims = [[0 : i64], [2 : i64], [1 : i64], [2 : i64]]} : (tensor<1x256x32xbf16>) -> tensor<1x2x256x8xbf16>
      %121 = sim.elementwise "neg" %120 : tensor<1x2x256x8xbf16> -> tensor<1x2x256x8xbf16>
      %122 = sim.generic "aten.slice"(%106) {flop_count = 0.000000e+00 : f64, byte_count = 0.000000e+00 : f64, view_dims = [[0 : i64], [2 : i64], [1 : i64], [2 : i64]]} : (tensor<1x256x32xbf16>) -> tensor<1x2x256x8xbf16>
      %123 = sim.generic "aten.cat"(%121, %122) {flop_count = 0.000000e+00 : f64, byte_count = 3.276800e+04 : f64} : (tensor<1x2x256x8xbf16>, tensor<1x2x256x8xbf16>) -> tensor<1x2x256x16xbf16>
      %124 = sim.elementwise "mul" %123, %115 : tensor<1x2x256x16xbf16>, tensor<1x1x256x16xbf16> -> tensor<1x2x256x16xbf16>
      %125 = sim.elementwise "add" %119, %124 : tensor<1x2x256x16xbf16>, tensor<1x2x256x16xbf16> -> tensor<1x2x256x16xbf16>
      %126 = sim.view %117 {dims = [[0 : i64], [2 : i64], [1 : i64], [3 : i64]]} : tensor<1x4x256x16xbf16> -> tensor<1x256x4x16xbf16>
      %127 = sim.view %125 {dims = [[0 : i64], [2 : i64], [1 : i64], [3 : i64]]} : tensor<1x2x256x16xbf16> -> tensor<1x256x2x16xbf16>
      %128 = sim.view %107 {dims = [[0 : i64], [1 : i64], [2 : i64], [2 : i64]]} : tensor<1x256x32xbf16> -> tensor<1x256x2x16xbf16>
      %129 = sim.attention %126, %127, %128 {causal} : (tensor<1x256x4x16xbf16>, tensor<1x256x2x16xbf16>, tensor<1x256x2x16xbf16>) -> tensor<1x256x4x16xbf16>
      %130 = sim.view %129 : tensor<1x256x4x16xbf16> -> tensor<1x256x64xbf16>
      %131 = sim.matmul %130, %91 {transpose_rhs} : (tensor<1x256x64xbf16>, tensor<64x64xbf16>) -> tensor<1x256x64xbf16>
      %132 = sim.elementwise "add" %87, %131 : tensor<1x256x64xbf16>, tensor<1x256x64xbf16> -> tensor<1x256x64xbf16>
      %133 = sim.elementwise "cast" %132 : tensor<1x256x64xbf16> -> tensor<1x256x64xf32>
      %134 = sim.elementwise "pow" %133 : tensor<1x256x64xf32> -> tensor<1x256x64xf32>
      %135 = sim.reduce "mean" %134 [2] : tensor<1x256x64xf32> -> tensor<1x256x1xf32>
      %136 = sim.elementwise "add" %135 : tensor<1x256x1xf32> -> tensor<1x256x1xf32>
      %137 = sim.elementwise "rsqrt" %136 : tensor<1x256x1xf32> -> tensor<1x256x1xf32>
      %138 = sim.elementwise "mul" %133, %137 : tensor<1x256x64xf32>, tensor<1x256x1xf32> -> tensor<1x256x64xf32>
      %139 = sim.elementwise "cast" %138 : tensor<1x256x64xf32> -> tensor<1x256x64xbf16>
      %140 = sim.elementwise "mul" %96, %139 : tensor<64xbf16>, tensor<1x256x64xbf16> -> tensor<1x256x64xbf16>
      %141 = sim.matmul %140, %92 {transpose_rhs} : (tensor<1x256x64xbf16>, tensor<4x64xbf16>) -> tensor<1x256x4xbf16>
      %142 = sim.view %141 : tensor<1x256x4xbf16> -> tensor<256x4xbf16>
      %143 = sim.elementwise "cast" %142 : tensor<256x4xbf16> -> tensor<256x4xf32>
      %144 = sim.softmax %143 dim 1 : tensor<256x4xf32>
      %145, %146 = sim.topk %144 k = 2 : tensor<256x4xf32> -> (tensor<256x2xf32>, tensor<256x2xi64>)
      %147 = sim.reduce "sum" %145 [1] : tensor<256x2xf32> -> tensor<256x1xf32>
      %148 = sim.elementwise "div" %145, %147 : tensor<256x2xf32>, tensor<256x1xf32> -> tensor<256x2xf32>
      %149 = sim.view %140 : tensor<1x256x64xbf16> -> tensor<256x64xbf16>
      %150 = sim.moe_dispatch %149, %146 : (tensor<256x64xbf16>, tensor<256x2xi64>) -> tensor<4x128x64xbf16>
      %151 = sim.matmul %150, %93 {transpose_rhs} : (tensor<4x128x64xbf16>, tensor<4x128x64xbf16>) -> tensor<4x128x128xbf16>
      %152 = sim.generic "aten.split"(%151) {flop_count = 0.000000e+00 : f64, byte_count = 0.000000e+00 : f64} : (tensor<4x128x128xbf16>) -> tensor<4x128x64xbf16>
      %153 = sim.elementwise "silu" %152 : tensor<4x128x64xbf16> -> tensor<4x128x64xbf16>
      %154 = sim.generic "aten.split"(%151) {flop_count = 0.000000e+00 : f64, byte_count = 0.000000e+00 : f64} : (tensor<4x128x128xbf16>) -> tensor<4x128x64xbf16>
      %155 = sim.elementwise "mul" %153, %154 : tensor<4x128x64xbf16>, tensor<4x128x64xbf16> -> tensor<4x128x64xbf16>
      %156 = sim.matmul %155, %94 {transpose_rhs} : (tensor<4x128x64xbf16>, tensor<4x64x64xbf16>) -> tensor<4x128x64xbf16>
      %157 = sim.elementwise "cast" %148 : tensor<256x2xf32> -> tensor<256x2xbf16>
      %158 = sim.moe_combine %156, %146 weights %157 : tensor<256x2xbf16> : (tensor<4x128x64xbf16>, tensor<256x2xi64>) -> tensor<256x64xbf16>
      %159 = sim.view %158 : tensor<256x64xbf16> -> tensor<1x256x64xbf16>
      %160 = sim.elementwise "add" %132, %159 : tensor<1x256x64xbf16>, tensor<1x256x64xbf16> -> tensor<1x256x64xbf16>
      %161 = sim.view %104 : tensor<1x256x64xbf16> -> tensor<256x64xbf16>
      %162 = sim.view %129 : tensor<1x256x4x16xbf16> -> tensor<256x64xbf16>
      sim.yield %160, %97, %101, %103, %161, %126, %127, %128, %129, %162, %133, %137, %139, %149, %144, %146, %147, %145, %150, %152, %154, %153, %155, %156, %157 : tensor<1x256x64xbf16>, tensor<1x256x64xf32>, tensor<1x256x1xf32>, tensor<1x256x64xbf16>, tensor<256x64xbf16>, tensor<1x256x4x16xbf16>, tensor<1x256x2x16xbf16>, tensor<1x256x2x16xbf16>, tensor<1x256x4x16xbf16>, tensor<256x64xbf16>, tensor<1x256x64xf32>, tensor<1x256x1xf32>, tensor<1x256x64xbf16>, tensor<256x64xbf16>, tensor<256x4xf32>, tensor<256x2xi64>, tensor<256x1xf32>, tensor<256x2xf32>, tensor<4x128x64xbf16>, tensor<4x128x64xbf16>, tensor<4x128x64xbf16>, tensor<4x128x64xbf16>, tensor<4x128x64xbf16>, tensor<4x128x64xbf16>, tensor<256x2xbf16>
    }
    %163 = sim.elementwise "cast" %62 : tensor<1x256x64xbf16> -> tensor<1x256x64xf32>
    %164 = sim.elementwise "pow" %163 : tensor<1x256x64xf32> -> tensor<1x256x64xf32>
    %165 = sim.reduce "mean" %164 [2] : tensor<1x256x64xf32> -> tensor<1x256x1xf32>
    %166 = sim.elementwise "add" %165 : tensor<1x256x1xf32> -> tensor<1x256x1xf32>
    %167 = sim.elementwise "rsqrt" %166 : tensor<1x256x1xf32> -> tensor<1x256x1xf32>
    %168 = sim.elementwise "mul" %163, %167 : tensor<1x256x64xf32>, tensor<1x256x1xf32> -> tensor<1x256x64xf32>
    %169 = sim.elementwise "cast" %168 : tensor<1x256x64xf32> -> tensor<1x256x64xbf16>
    %170 = sim.elementwise "mul" %5, %169 : tensor<64xbf16>, tensor<1x256x64xbf16> -> tensor<1x256x64xbf16>
    %171 = sim.matmul %170, %6 {transpose_rhs} : (tensor<1x256x64xbf16>, tensor<128x64xbf16>) -> tensor<1x256x128xbf16>
    %172 = sim.elementwise "cast" %171 : tensor<1x256x128xbf16> -> tensor<1x256x128xf32>
    %173 = sim.view %172 : tensor<1x256x128xf32> -> tensor<256x128xf32>
    %174 = sim.generic "aten._log_softmax"(%173) {flop_count = 1.638400e+05 : f64, byte_count = 2.621440e+05 : f64} : (tensor<256x128xf32>) -> tensor<256x128xf32>
    %175 = sim.view %7 : tensor<1x256xi64> -> tensor<256xi64>
    %176, %177 = sim.generic "aten.nll_loss_forward"(%174, %175) {flop_count = 2.000000e+00 : f64, byte_count = 3.080000e+03 : f64} : (tensor<256x128xf32>, tensor<256xi64>) -> (tensor<f32>, tensor<f32>)
    %178 = sim.view %170 : tensor<1x256x64xbf16> -> tensor<256x64xbf16>
    sim.yield %176, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %163, %167, %169, %178, %174, %177, %60, %61 : tensor<f32>, tensor<2x1x256x64xf32>, tensor<2x1x256x1xf32>, tensor<2x1x256x64xbf16>, tensor<2x256x64xbf16>, tensor<2x1x256x4x16xbf16>, tensor<2x1x256x2x16xbf16>, tensor<2x1x256x2x16xbf16>, tensor<2x1x256x4x16xbf16>, tensor<2x256x64xbf16>, tensor<2x1x256x64xf32>, tensor<2x1x256x1xf32>, tensor<2x1x256x64xbf16>, tensor<2x256x64xbf16>, tensor<2x256x4xf32>, tensor<2x256x2xi64>, tensor<2x256x1xf32>, tensor<2x256x2xf32>, tensor<2x4x128x64xbf16>, tensor<2x4x128x64xbf16>, tensor<2x4x128x64xbf16>, tensor<2x4x128x64xbf16>, tensor<2x4x128x64xbf16>, tensor<2x4x128x64xbf16>, tensor<2x256x2xbf16>, tensor<1x256x64xf32>, tensor<1x256x1xf32>, tensor<1x256x64xbf16>, tensor<256x64xbf16>, tensor<256x128xf32>, tensor<f32>, tensor<1x256x16xbf16>, tensor<1x256x16xbf16>
  }
  %179, %180, %181, %182, %183, %184, %185, %186, %187, %188, %189, %190 = sim.phase "backward" -> tensor<128x64xbf16>, tensor<64xbf16>, tensor<128x64xbf16>, tensor<2x64x64xbf16>, tensor<2x32x64xbf16>, tensor<2x32x64xbf16>, tensor<2x64x64xbf16>, tensor<2x4x64xbf16>, tensor<2x4x128x64xbf16>, tensor<2x4x64x64xbf16>, tensor<2x64xbf16>, tensor<2x64xbf16> {
    %191 = sim.view %7 : tensor<1x256xi64> -> tensor<256xi64>
    %192 = sim.generic "aten.nll_loss_backward"(%17, %47, %191, %48) {flop_count = 3.276800e+04 : f64, byte_count = 2.642000e+05 : f64} : (tensor<f32>, tensor<256x128xf32>, tensor<256xi64>, tensor<f32>) -> tensor<256x128xf32>
    %193 = sim.generic "aten._log_softmax_backward_data"(%192, %47) {flop_count = 9.830400e+04 : f64, byte_count = 3.932160e+05 : f64} : (tensor<256x128xf32>, tensor<256x128xf32>) -> tensor<256x128xf32>
    %194 = sim.view %193 : tensor<256x128xf32> -> tensor<1x256x128xf32>
    %195 = sim.elementwise "cast" %194 : tensor<1x256x128xf32> -> tensor<1x256x128xbf16>
    %196 = sim.view %195 : tensor<1x256x128xbf16> -> tensor<256x128xbf16>
    %197 = sim.matmul %196, %46 {transpose_lhs} : (tensor<256x128xbf16>, tensor<256x64xbf16>) -> tensor<128x64xbf16>
    %198 = sim.matmul %195, %6 : (tensor<1x256x128xbf16>, tensor<128x64xbf16>) -> tensor<1x256x64xbf16>
    %199 = sim.elementwise "mul" %198, %5 : tensor<1x256x64xbf16>, tensor<64xbf16> -> tensor<1x256x64xbf16>
    %200 = sim.elementwise "mul" %198, %45 : tensor<1x256x64xbf16>, tensor<1x256x64xbf16> -> tensor<1x256x64xbf16>
    %201 = sim.reduce "sum" %200 [0, 1] : tensor<1x256x64xbf16> -> tensor<1x1x64xbf16>
    %202 = sim.elementwise "cast" %199 : tensor<1x256x64xbf16> -> tensor<1x256x64xf32>
    %203 = sim.elementwise "mul" %202, %43 : tensor<1x256x64xf32>, tensor<1x256x64xf32> -> tensor<1x256x64xf32>
    %204 = sim.elementwise "mul" %202, %44 : tensor<1x256x64xf32>, tensor<1x256x1xf32> -> tensor<1x256x64xf32>
    %205 = sim.reduce "sum" %203 [2] : tensor<1x256x64xf32> -> tensor<1x256x1xf32>
    %206 = sim.elementwise "pow" %44 : tensor<1x256x1xf32> -> tensor<1x256x1xf32>
    %207 = sim.elementwise "mul" %205 : tensor<1x256x1xf32> -> tensor<1x256x1xf32>
    %208 = sim.elementwise "mul" %207, %206 : tensor<1x256x1xf32>, tensor<1x256x1xf32> -> tensor<1x256x1xf32>
    %209 = sim.elementwise "div" %208 : tensor<1x256x1xf32> -> tensor<1x256x64xf32>
    %210 = sim.elementwise "pow" %43 : tensor<1x256x64xf32> -> tensor<1x256x64xf32>
    %211 = sim.elementwise "mul" %210 : tensor<1x256x64xf32> -> tensor<1x256x64xf32>
    %212 = sim.elementwise "mul" %209, %211 : tensor<1x256x64xf32>, tensor<1x256x64xf32> -> tensor<1x256x64xf32>
    %213 = sim.elementwise "add" %204, %212 : tensor<1x256x64xf32>, tensor<1x256x64xf32> -> tensor<1x256x64xf32>
    %214 = sim.elementwise "cast" %213 : tensor<1x256x64xf32> -> tensor<1x256x64xbf16>
    %215 = sim.view %201 : tensor<1x1x64xbf16> -> tensor<64xbf16>
    %216, %217, %218, %219, %220, %221, %222, %223, %224, %225 = sim.repeat 2 iter(%214 : tensor<1x256x64xbf16>) slices(%8, %9, %10, %11, %12, %13, %14, %15, %16, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42 : tensor<2x64x64xbf16>, tensor<2x32x64xbf16>, tensor<2x32x64xbf16>, tensor<2x64x64xbf16>, tensor<2x4x64xbf16>, tensor<2x4x128x64xbf16>, tensor<2x4x64x64xbf16>, tensor<2x64xbf16>, tensor<2x64xbf16>, tensor<2x1x256x64xf32>, tensor<2x1x256x1xf32>, tensor<2x1x256x64xbf16>, tensor<2x256x64xbf16>, tensor<2x1x256x4x16xbf16>, tensor<2x1x256x2x16xbf16>, tensor<2x1x256x2x16xbf16>, tensor<2x1x256x4x16xbf16>, tensor<2x256x64xbf16>, tensor<2x1x256x64xf32>, tensor<2x1x256x1xf32>, tensor<2x1x256x64xbf16>, tensor<2x256x64xbf16>, tensor<2x256x4xf32>, tensor<2x256x2xi64>, tensor<2x256x1xf32>, tensor<2x256x2xf32>, tensor<2x4x128x64xbf16>, tensor<2x4x128x64xbf16>, tensor<2x4x128x64xbf16>, tensor<2x4x128x64xbf16>, tensor<2x4x128x64xbf16>, tensor<2x4x128x64xbf16>, tensor<2x256x2xbf16>) {reverse} -> (tensor<1x256x64xbf16>, tensor<2x64x64xbf16>, tensor<2x32x64xbf16>, tensor<2x32x64xbf16>, tensor<2x64x64xbf16>, tensor<2x4x64xbf16>, tensor<2x4x128x64xbf16>, tensor<2x4x64x64xbf16>, tensor<2x64xbf16>, tensor<2x64xbf16>) {
    ^bb0(%226: tensor<1x256x64xbf16>, %227: tensor<64x64xbf16>, %228: tensor<32x64xbf16>, %229: tensor<32x64xbf16>, %230: tensor<64x64xbf16>, %231: tensor<4x64xbf16>, %232: tensor<4x128x64xbf16>, %233: tensor<4x64x64xbf16>, %234: tensor<64xbf16>, %235: tensor<64xbf16>, %236: tensor<1x256x64xf32>, %237: tensor<1x256x1xf32>, %238: tensor<1x256x64xbf16>, %239: tensor<256x64xbf16>, %240: tensor<1x256x4x16xbf16>, %241: tensor<1x256x2x16xbf16>, %242: tensor<1x256x2x16xbf16>, %243: tensor<1x256x4x16xbf16>, %244: tensor<256x64xbf16>, %245: tensor<1x256x64xf32>, %246: tensor<1x256x1xf32>, %247: tensor<1x256x64xbf16>, %248: tensor<256x64xbf16>, %249: tensor<256x4xf32>, %250: tensor<256x2xi64>, %251: tensor<256x1xf32>, %252: tensor<256x2xf32>, %253: tensor<4x128x64xbf16>, %254: tensor<4x128x64xbf16>, %255: tensor<4x128x64xbf16>, %256: tensor<4x128x64xbf16>, %257: tensor<4x128x64xbf16>, %258: tensor<4x128x64xbf16>, %259: tensor<256x2xbf16>):
      %260 = sim.view %226 : tensor<1x256x64xbf16> -> tensor<256x64xbf16>
      %261 = sim.moe_dispatch %260, %250 : (tensor<256x64xbf16>, tensor<256x2xi64>) -> tensor<4x128x64xbf16>
      %262 = sim.generic "moe_combine_weight_grad"(%258, %260, %250) {flop_count = 6.553600e+04 : f64, byte_count = 1.034240e+05 : f64} : (tensor<4x128x64xbf16>, tensor<256x64xbf16>, tensor<256x2xi64>) -> tensor<256x2xbf16>
      %263 = sim.elementwise "cast" %262 : tensor<256x2xbf16> -> tensor<256x2xf32>
      %264 = sim.matmul %257, %261 {transpose_lhs} : (tensor<4x128x64xbf16>, tensor<4x128x64xbf16>) -> tensor<4x64x64xbf16>
      %265 = sim.matmul %261, %233 : (tensor<4x128x64xbf16>, tensor<4x64x64xbf16>) -> tensor<4x128x64xbf16>
      %266 = sim.elementwise "mul" %265, %256 : tensor<4x128x64xbf16>, tensor<4x128x64xbf16> -> tensor<4x128x64xbf16>
      %267 = sim.elementwise "mul" %265, %255 : tensor<4x128x64xbf16>, tensor<4x128x64xbf16> -> tensor<4x128x64xbf16>
      %268 = sim.elementwise "silu_grad" %267, %254 : tensor<4x128x64xbf16>, tensor<4x128x64xbf16> -> tensor<4x128x64xbf16>
      %269 = sim.generic "aten.cat"(%268, %266) {flop_count = 0.000000e+00 : f64, byte_count = 2.621440e+05 : f64} : (tensor<4x128x64xbf16>, tensor<4x128x64xbf16>) -> tensor<4x128x128xbf16>
      %270 = sim.matmul %253, %269 {transpose_lhs} : (tensor<4x128x64xbf16>, tensor<4x128x128xbf16>) -> tensor<4x64x128xbf16>
      %271 = sim.matmul %269, %232 : (tensor<4x128x128xbf16>, tensor<4x128x64xbf16>) -> tensor<4x128x64xbf16>
      %272 = sim.moe_combine %271, %250 : (tensor<4x128x64xbf16>, tensor<256x2xi64>) -> tensor<256x64xbf16>
      %273 = sim.elementwise "div" %252, %251 : tensor<256x2xf32>, tensor<256x1xf32> -> tensor<256x2xf32>
      %274 = sim.elementwise "div" %273, %251 : tensor<256x2xf32>, tensor<256x1xf32> -> tensor<256x2xf32>
      %275 = sim.elementwise "neg" %263 : tensor<256x2xf32> -> tensor<256x2xf32>
      %276 = sim.elementwise "mul" %275, %274 : tensor<256x2xf32>, tensor<256x2xf32> -> tensor<256x2xf32>
      %277 = sim.elementwise "div" %263, %251 : tensor<256x2xf32>, tensor<256x1xf32> -> tensor<256x2xf32>
      %278 = sim.reduce "sum" %276 [1] : tensor<256x2xf32> -> tensor<256x1xf32>
      %279 = sim.elementwise "add" %277, %278 : tensor<256x2xf32>, tensor<256x1xf32> -> tensor<256x2xf32>
      %280 = sim.generic "aten.new_zeros"() {flop_count = 0.000000e+00 : f64, byte_count = 4.096000e+03 : f64} : () -> tensor<256x4xf32>
      %281 = sim.generic "aten.scatter"(%280, %250, %279) {flop_count = 0.000000e+00 : f64, byte_count = 1.433600e+04 : f64} : (tensor<256x4xf32>, tensor<256x2xi64>, tensor<256x2xf32>) -> tensor<256x4xf32>
      %282 = sim.generic "aten._softmax_backward_data"(%281, %249) {flop_count = 3.072000e+03 : f64, byte_count = 1.228800e+04 : f64} : (tensor<256x4xf32>, tensor<256x4xf32>) -> tensor<256x4xf32>
      %283 = sim.elementwise "cast" %282 : tensor<256x4xf32> -> tensor<256x4xbf16>
      %284 = sim.matmul %283, %248 {transpose_lhs} : (tensor<256x4xbf16>, tensor<256x64xbf16>) -> tensor<4x64xbf16>
      %285 = sim.matmul %283, %231 : (tensor<256x4xbf16>, tensor<4x64xbf16>) -> tensor<256x64xbf16>
      %286 = sim.elementwise "add" %272, %285 : tensor<256x64xbf16>, tensor<256x64xbf16> -> tensor<256x64xbf16>
      %287 = sim.view %286 : tensor<256x64xbf16> -> tensor<1x256x64xbf16>
      %288 = sim.elementwise "mul" %287, %235 : tensor<1x256x64xbf16>, tensor<64xbf16> -> tensor<1x256x64xbf16>
      %289 = sim.elementwise "mul" %287, %247 : tensor<1x256x64xbf16>, tensor<1x256x64xbf16> -> tensor<1x256x64xbf16>
      %290 = sim.reduce "sum" %289 [0, 1] : tensor<1x256x64xbf16> -> tensor<1x1x64xbf16>
      %291 = sim.elementwise "cast" %288 : tensor<1x256x64xbf16> -> tensor<1x256x64xf32>
      %292 = sim.elementwise "mul" %291, %245 : tensor<1x256x64xf32>, tensor<1x256x64xf32> -> tensor<1x256x64xf32>
      %293 = sim.elementwise "mul" %291, %246 : tensor<1x256x64xf32>, tensor<1x256x1xf32> -> tensor<1x256x64xf32>
      %294 = sim.reduce "sum" %292 [2] : tensor<1x256x64xf32> -> tensor<1x256x1xf32>
      %295 = sim.elementwise "pow" %246 : tensor<1x256x1xf32> -> tensor<1x256x1xf32>
      %296 = sim.elementwise "mul" %294 : tensor<1x256x1xf32> -> tensor<1x256x1xf32>
      %297 = sim.elementwise "mul" %296, %295 : tensor<1x256x1xf32>, tensor<1x256x1xf32> -> tensor<1x256x1xf32>
      %298 = sim.elementwise "div" %297 : tensor<1x256x1xf32> -> tensor<1x256x64xf32>
      %299 = sim.elementwise "pow" %245 : tensor<1x256x64xf32> -> tensor<1x256x64xf32>
      %300 = sim.elementwise "mul" %299 : tensor<1x256x64xf32> -> tensor<1x256x64xf32>
      %301 = sim.elementwise "mul" %298, %300 : tensor<1x256x64xf32>, tensor<1x256x64xf32> -> tensor<1x256x64xf32>
      %302 = sim.elementwise "add" %293, %301 : tensor<1x256x64xf32>, tensor<1x256x64xf32> -> tensor<1x256x64xf32>
      %303 = sim.elementwise "cast" %302 : tensor<1x256x64xf32> -> tensor<1x256x64xbf16>
      %304 = sim.elementwise "add" %226, %303 : tensor<1x256x64xbf16>, tensor<1x256x64xbf16> -> tensor<1x256x64xbf16>
      %305 = sim.view %304 : tensor<1x256x64xbf16> -> tensor<256x64xbf16>
      %306 = sim.matmul %305, %244 {transpose_lhs} : (tensor<256x64xbf16>, tensor<256x64xbf16>) -> tensor<64x64xbf16>
      %307 = sim.matmul %304, %230 : (tensor<1x256x64xbf16>, tensor<64x64xbf16>) -> tensor<1x256x64xbf16>
      %308 = sim.view %307 : tensor<1x256x64xbf16> -> tensor<1x256x4x16xbf16>
      %309, %310, %311 = sim.attention_grad %240, %241, %242, %243, %308 {causal} : (tensor<1x256x4x16xbf16>, tensor<1x256x2x16xbf16>, tensor<1x256x2x16xbf16>, tensor<1x256x4x16xbf16>, tensor<1x256x4x16xbf16>) -> (tensor<1x256x4x16xbf16>, tensor<1x256x2x16xbf16>, tensor<1x256x2x16xbf16>)
      %312 = sim.view %310 {dims = [[0 : i64], [2 : i64], [1 : i64], [3 : i64]]} : tensor<1x256x2x16xbf16> -> tensor<1x2x256x16xbf16>
      %313 = sim.view %50 : tensor<1x256x16xbf16> -> tensor<1x1x256x16xbf16>
      %314 = sim.elementwise "mul" %312, %313 : tensor<1x2x256x16xbf16>, tensor<1x1x256x16xbf16> -> tensor<1x2x256x16xbf16>
      %315 = sim.generic "aten.slice"(%314) {flop_count = 0.000000e+00 : f64, byte_count = 0.000000e+00 : f64} : (tensor<1x2x256x16xbf16>) -> tensor<1x2x256x8xbf16>
      %316 = sim.elementwise "neg" %315 : tensor<1x2x256x8xbf16> -> tensor<1x2x256x8xbf16>
      %317 = sim.generic "aten.slice_backward"(%316) {flop_count = 0.000000e+00 : f64, byte_count = 2.457600e+04 : f64} : (tensor<1x2x256x8xbf16>) -> tensor<1x2x256x16xbf16>
      %318 = sim.generic "aten.slice"(%314) {flop_count = 0.000000e+00 : f64, byte_count = 0.000000e+00 : f64} : (tensor<1x2x256x16xbf16>) -> tensor<1x2x256x8xbf16>
      %319 = sim.generic "aten.slice_backward"(%318) {flop_count = 0.000000e+00 : f64, byte_count = 2.457600e+04 : f64} : (tensor<1x2x256x8xbf16>) -> tensor<1x2x256x16xbf16>
      %320 = sim.elementwise "add" %317, %319 : tensor<1x2x256x16xbf16>, tensor<1x2x256x16xbf16> -> tensor<1x2x256x16xbf16>
      %321 = sim.view %49 : tensor<1x256x16xbf16> -> tensor<1x1x256x16xbf16>
      %322 = sim.elementwise "mul" %312, %321 : tensor<1x2x256x16xbf16>, tensor<1x1x256x16xbf16> -> tensor<1x2x256x16xbf16>
      %323 = sim.elementwise "add" %320, %322 : tensor<1x2x256x16xbf16>, tensor<1x2x256x16xbf16> -> tensor<1x2x256x16xbf16>
      %324 = sim.view %309 {dims = [[0 : i64], [2 : i64], [1 : i64], [3 : i64]]} : tensor<1x256x4x16xbf16> -> tensor<1x4x256x16xbf16>
      %325 = sim.elementwise "mul" %324, %313 : tensor<1x4x256x16xbf16>, tensor<1x1x256x16xbf16> -> tensor<1x4x256x16xbf16>
      %326 = sim.generic "aten.slice"(%325) {flop_count = 0.000000e+00 : f64, byte_count = 0.000000e+00 : f64} : (tensor<1x4x256x16xbf16>) -> tensor<1x4x256x8xbf16>
      %327 = sim.elementwise "neg" %326 : tensor<1x4x256x8xbf16> -> tensor<1x4x256x8xbf16>
      %328 = sim.generic "aten.slice_backward"(%327) {flop_count = 0.000000e+00 : f64, byte_count = 4.915200e+04 : f64} : (tensor<1x4x256x8xbf16>) -> tensor<1x4x256x16xbf16>
      %329 = sim.generic "aten.slice"(%325) {flop_count = 0.000000e+00 : f64, byte_count = 0.000000e+00 : f64} : (tensor<1x4x256x16xbf16>) -> tensor<1x4x256x8xbf16>
      %330 = sim.generic "aten.slice_backward"(%329) {flop_count = 0.000000e+00 : f64, byte_count = 4.915200e+04 : f64} : (tensor<1x4x256x8xbf16>) -> tensor<1x4x256x16xbf16>
      %331 = sim.elementwise "add" %328, %330 : tensor<1x4x256x16xbf16>, tensor<1x4x256x16xbf16> -> tensor<1x4x256x16xbf16>
      %332 = sim.elementwise "mul" %324, %321 : tensor<1x4x256x16xbf16>, tensor<1x1x256x16xbf16> -> tensor<1x4x256x16xbf16>
      %333 = sim.elementwise "add" %331, %332 : tensor<1x4x256x16xbf16>, tensor<1x4x256x16xbf16> -> tensor<1x4x256x16xbf16>
      %334 = sim.view %311 {dims = [[0 : i64, 1 : i64], [2 : i64, 3 : i64]]} : tensor<1x256x2x16xbf16> -> tensor<256x32xbf16>
      %335 = sim.matmul %334, %239 {transpose_lhs} : (tensor<256x32xbf16>, tensor<256x64xbf16>) -> tensor<32x64xbf16>
      %336 = sim.matmul %334, %229 : (tensor<256x32xbf16>, tensor<32x64xbf16>) -> tensor<256x64xbf16>
      %337 = sim.view %323 {dims = [[0 : i64, 2 : i64], [1 : i64, 3 : i64]]} : tensor<1x2x256x16xbf16> -> tensor<256x32xbf16>
      %338 = sim.matmul %337, %239 {transpose_lhs} : (tensor<256x32xbf16>, tensor<256x64xbf16>) -> tensor<32x64xbf16>
      %339 = sim.matmul %337, %228 : (tensor<256x32xbf16>, tensor<32x64xbf16>) -> tensor<256x64xbf16>
      %340 = sim.view %336 : tensor<256x64xbf16> -> tensor<1x256x64xbf16>
      %341 = sim.view %339 : tensor<256x64xbf16> -> tensor<1x256x64xbf16>
      %342 = sim.elementwise "add" %340, %341 : tensor<1x256x64xbf16>, tensor<1x256x64xbf16> -> tensor<1x256x64xbf16>
      %343 = sim.view %333 {dims = [[0 : i64, 2 : i64], [1 : i64, 3 : i64]]} : tensor<1x4x256x16xbf16> -> tensor<256x64xbf16>
      %344 = sim.matmul %343, %239 {transpose_lhs} : (tensor<256x64xbf16>, tensor<256x64xbf16>) -> tensor<64x64xbf16>
      %345 = sim.matmul %343, %227 : (tensor<256x64xbf16>, tensor<64x64xbf16>) -> tensor<256x64xbf16>
      %346 = sim.view %345 : tensor<256x64xbf16> -> tensor<1x256x64xbf16>
      %347 = sim.elementwise "add" %342, %346 : tensor<1x256x64xbf16>, tensor<1x256x64xbf16> -> tensor<1x256x64xbf16>
      %348 = sim.elementwise "mul" %347, %234 : tensor<1x256x64xbf16>, tensor<64xbf16> -> tensor<1x256x64xbf16>
      %349 = sim.elementwise "mul" %347, %238 : tensor<1x256x64xbf16>, tensor<1x256x64xbf16> -> tensor<1x256x64xbf16>
      %350 = sim.reduce "sum" %349 [0, 1] : tensor<1x256x64xbf16> -> tensor<1x1x64xbf16>
      %351 = sim.elementwise "cast" %348 : tensor<1x256x64xbf16> -> tensor<1x256x64xf32>
      %352 = sim.elementwise "mul" %351, %236 : tensor<1x256x64xf32>, tensor<1x256x64xf32> -> tensor<1x256x64xf32>
      %353 = sim.elementwise "mul" %351, %237 : tensor<1x256x64xf32>, tensor<1x256x1xf32> -> tensor<1x256x64xf32>
      %354 = sim.reduce "sum" %352 [2] : tensor<1x256x64xf32> -> tensor<1x256x1xf32>
      %355 = sim.elementwise "pow" %237 : tensor<1x256x1xf32> -> tensor<1x256x1xf32>
      %356 = sim.elementwise "mul" %354 : tensor<1x256x1xf32> -> tensor<1x256x1xf32>
      %357 = sim.elementwise "mul" %356, %355 : tensor<1x256x1xf32>, tensor<1x256x1xf32> -> tensor<1x256x1xf32>
      %358 = sim.elementwise "div" %357 : tensor<1x256x1xf32> -> tensor<1x256x64xf32>
      %359 = sim.elementwise "pow" %236 : tensor<1x256x64xf32> -> tensor<1x256x64xf32>
      %360 = sim.elementwise "mul" %359 : tensor<1x256x64xf32> -> tensor<1x256x64xf32>
      %361 = sim.elementwise "mul" %358, %360 : tensor<1x256x64xf32>, tensor<1x256x64xf32> -> tensor<1x256x64xf32>
      %362 = sim.elementwise "add" %353, %361 : tensor<1x256x64xf32>, tensor<1x256x64xf32> -> tensor<1x256x64xf32>
      %363 = sim.elementwise "cast" %362 : tensor<1x256x64xf32> -> tensor<1x256x64xbf16>
      %364 = sim.elementwise "add" %304, %363 : tensor<1x256x64xbf16>, tensor<1x256x64xbf16> -> tensor<1x256x64xbf16>
      %365 = sim.view %270 {dims = [[0 : i64], [2 : i64], [1 : i64]]} : tensor<4x64x128xbf16> -> tensor<4x128x64xbf16>
      %366 = sim.view %264 {dims = [[0 : i64], [2 : i64], [1 : i64]]} : tensor<4x64x64xbf16> -> tensor<4x64x64xbf16>
      %367 = sim.view %350 : tensor<1x1x64xbf16> -> tensor<64xbf16>
      %368 = sim.view %290 : tensor<1x1x64xbf16> -> tensor<64xbf16>
      sim.yield %364, %344, %338, %335, %306, %284, %365, %366, %367, %368 : tensor<1x256x64xbf16>, tensor<64x64xbf16>, tensor<32x64xbf16>, tensor<32x64xbf16>, tensor<64x64xbf16>, tensor<4x64xbf16>, tensor<4x128x64xbf16>, tensor<4x64x64xbf16>, tensor<64xbf16>, tensor<64xbf16>
    }
    %369 = sim.generic "aten.embedding_dense_backward"(%216, %3) {flop_count = 0.000000e+00 : f64, byte_count = 5.120000e+04 : f64} : (tensor<1x256x64xbf16>, tensor<1x256xi64>) -> tensor<128x64xbf16>
    sim.yield %369, %215, %197, %217, %218, %219, %220, %221, %222, %223, %224, %225 : tensor<128x64xbf16>, tensor<64xbf16>, tensor<128x64xbf16>, tensor<2x64x64xbf16>, tensor<2x32x64xbf16>, tensor<2x32x64xbf16>, tensor<2x64x64xbf16>, tensor<2x4x64xbf16>, tensor<2x4x128x64xbf16>, tensor<2x4x64x64xbf16>, tensor<2x64xbf16>, tensor<2x64xbf16>
  }
  sim.phase "optimizer" {
    sim.optimizer_step "adamw"(%0, %5, %6, %8, %9, %10, %11, %12, %13, %14, %15, %16 : tensor<128x64xbf16>, tensor<64xbf16>, tensor<128x64xbf16>, tensor<2x64x64xbf16>, tensor<2x32x64xbf16>, tensor<2x32x64xbf16>, tensor<2x64x64xbf16>, tensor<2x4x64xbf16>, tensor<2x4x128x64xbf16>, tensor<2x4x64x64xbf16>, tensor<2x64xbf16>, tensor<2x64xbf16>) grads(%179, %180, %181, %182, %183, %184, %185, %186, %187, %188, %189, %190 : tensor<128x64xbf16>, tensor<64xbf16>, tensor<128x64xbf16>, tensor<2x64x64xbf16>, tensor<2x32x64xbf16>, tensor<2x32x64xbf16>, tensor<2x64x64xbf16>, tensor<2x4x64xbf16>, tensor<2x4x128x64xbf16>, tensor<2x4x64x64xbf16>, tensor<2x64xbf16>, tensor<2x64xbf16>)
    sim.yield
  }
}
