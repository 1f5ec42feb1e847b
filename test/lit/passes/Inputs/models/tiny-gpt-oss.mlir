builtin.module attributes {sim.model = "tiny-gpt-oss", sim.mode = "train", sim.seq_len = 64 : i64, sim.batch = 1 : i64, sim.dtype = "bf16", sim.frontend = "charon-frontend-7", sim.hf_param_count = 142032 : i64, sim.free_ops = {aten._unsafe_view = 5 : i64, aten.clone = 4 : i64, aten.detach = 24 : i64, aten.expand = 5 : i64, aten.slice = 12 : i64, aten.split = 4 : i64, aten.squeeze = 4 : i64, aten.t = 55 : i64, aten.transpose = 32 : i64, aten.unsqueeze = 9 : i64, aten.view = 73 : i64}, sim.generic_ops = {aten._log_softmax = 1 : i64, aten._log_softmax_backward_data = 1 : i64, aten._softmax_backward_data = 2 : i64, aten.cat = 8 : i64, aten.embedding_dense_backward = 1 : i64, aten.new_zeros = 2 : i64, aten.nll_loss_backward = 1 : i64, aten.nll_loss_forward = 1 : i64, aten.scalar_tensor = 4 : i64, aten.scatter = 2 : i64, aten.slice_backward = 4 : i64}} {
  %0 = sim.param "model.embed_tokens.weight" {role = #sim.role<embedding>} : tensor<128x64xbf16>
  %1 = sim.input "buffer:model.rotary_emb.inv_freq" : tensor<8xf32>
  %2 = sim.input "buffer:model.rotary_emb.original_inv_freq" : tensor<8xf32>
  %3 = sim.input "tokens" {tokens} : tensor<1x64xi64>
  %4 = sim.input "positions" : tensor<1x64xi64>
  %5 = sim.param "model.norm.weight" {role = #sim.role<norm>} : tensor<64xbf16>
  %6 = sim.param "lm_head.weight" {role = #sim.role<head>} : tensor<128x64xbf16>
  %7 = sim.input "labels" : tensor<1x64xi64>
  %8 = sim.param "model.layers[0:1].self_attn.sinks" {role = #sim.role<attention>, stacked} : tensor<1x4xbf16>
  %9 = sim.param "model.layers[0:1].self_attn.q_proj.weight" {role = #sim.role<attention>, split = #sim.split<column>, stacked} : tensor<1x64x64xbf16>
  %10 = sim.param "model.layers[0:1].self_attn.q_proj.bias" {role = #sim.role<attention>, split = #sim.split<column>, stacked} : tensor<1x64xbf16>
  %11 = sim.param "model.layers[0:1].self_attn.k_proj.weight" {role = #sim.role<attention>, split = #sim.split<kv>, stacked} : tensor<1x32x64xbf16>
  %12 = sim.param "model.layers[0:1].self_attn.k_proj.bias" {role = #sim.role<attention>, split = #sim.split<kv>, stacked} : tensor<1x32xbf16>
  %13 = sim.param "model.layers[0:1].self_attn.v_proj.weight" {role = #sim.role<attention>, split = #sim.split<kv>, stacked} : tensor<1x32x64xbf16>
  %14 = sim.param "model.layers[0:1].self_attn.v_proj.bias" {role = #sim.role<attention>, split = #sim.split<kv>, stacked} : tensor<1x32xbf16>
  %15 = sim.param "model.layers[0:1].self_attn.o_proj.weight" {role = #sim.role<attention>, split = #sim.split<row>, stacked} : tensor<1x64x64xbf16>
  %16 = sim.param "model.layers[0:1].self_attn.o_proj.bias" {role = #sim.role<attention>, stacked} : tensor<1x64xbf16>
  %17 = sim.param "model.layers[0:1].mlp.router.weight" {role = #sim.role<router>, stacked} : tensor<1x4x64xbf16>
  %18 = sim.param "model.layers[0:1].mlp.router.bias" {role = #sim.role<router>, stacked} : tensor<1x4xbf16>
  %19 = sim.param "model.layers[0:1].mlp.experts.gate_up_proj" {role = #sim.role<expert>, split = #sim.split<column>, stacked} : tensor<1x4x64x128xbf16>
  %20 = sim.param "model.layers[0:1].mlp.experts.gate_up_proj_bias" {role = #sim.role<expert>, split = #sim.split<column>, stacked} : tensor<1x4x128xbf16>
  %21 = sim.param "model.layers[0:1].mlp.experts.down_proj" {role = #sim.role<expert>, split = #sim.split<row>, stacked} : tensor<1x4x64x64xbf16>
  %22 = sim.param "model.layers[0:1].mlp.experts.down_proj_bias" {role = #sim.role<expert>, split = #sim.split<row>, stacked} : tensor<1x4x64xbf16>
  %23 = sim.param "model.layers[0:1].input_layernorm.weight" {role = #sim.role<norm>, stacked} : tensor<1x64xbf16>
  %24 = sim.param "model.layers[0:1].post_attention_layernorm.weight" {role = #sim.role<norm>, stacked} : tensor<1x64xbf16>
  %25 = sim.param "model.layers[1:2].self_attn.sinks" {role = #sim.role<attention>, stacked} : tensor<1x4xbf16>
  %26 = sim.param "model.layers[1:2].self_attn.q_proj.weight" {role = #sim.role<attention>, split = #sim.split<column>, stacked} : tensor<1x64x64xbf16>
  %27 = sim.param "model.layers[1:2].self_attn.q_proj.bias" {role = #sim.role<attention>, split = #sim.split<column>, stacked} : tensor<1x64xbf16>
  %28 = sim.param "model.layers[1:2].self_attn.k_proj.weight" {role = #sim.role<attention>, split = #sim.split<kv>, stacked} : tensor<1x32x64xbf16>
  %29 = sim.param "model.layers[1:2].self_attn.k_proj.bias" {role = #sim.role<attention>, split = #sim.split<kv>, stacked} : tensor<1x32xbf16>
  %30 = sim.param "model.layers[1:2].self_attn.v_proj.weight" {role = #sim.role<attention>, split = #sim.split<kv>, stacked} : tensor<1x32x64xbf16>
  %31 = sim.param "model.layers[1:2].self_attn.v_proj.bias" {role = #sim.role<attention>, split = #sim.split<kv>, stacked} : tensor<1x32xbf16>
  %32 = sim.param "model.layers[1:2].self_attn.o_proj.weight" {role = #sim.role<attention>, split = #sim.split<row>, stacked} : tensor<1x64x64xbf16>
  %33 = sim.param "model.layers[1:2].self_attn.o_proj.bias" {role = #sim.role<attention>, stacked} : tensor<1x64xbf16>
  %34 = sim.param "model.layers[1:2].mlp.router.weight" {role = #sim.role<router>, stacked} : tensor<1x4x64xbf16>
  %35 = sim.param "model.layers[1:2].mlp.router.bias" {role = #sim.role<router>, stacked} : tensor<1x4xbf16>
  %36 = sim.param "model.layers[1:2].mlp.experts.gate_up_proj" {role = #sim.role<expert>, split = #sim.split<column>, stacked} : tensor<1x4x64x128xbf16>
  %37 = sim.param "model.layers[1:2].mlp.experts.gate_up_proj_bias" {role = #sim.role<expert>, split = #sim.split<column>, stacked} : tensor<1x4x128xbf16>
  %38 = sim.param "model.layers[1:2].mlp.experts.down_proj" {role = #sim.role<expert>, split = #sim.split<row>, stacked} : tensor<1x4x64x64xbf16>
  %39 = sim.param "model.layers[1:2].mlp.experts.down_proj_bias" {role = #sim.role<expert>, split = #sim.split<row>, stacked} : tensor<1x4x64xbf16>
  %40 = sim.param "model.layers[1:2].input_layernorm.weight" {role = #sim.role<norm>, stacked} : tensor<1x64xbf16>
  %41 = sim.param "model.layers[1:2].post_attention_layernorm.weight" {role = #sim.role<norm>, stacked} : tensor<1x64xbf16>
  %42 = sim.input "grad_loss" : tensor<f32>
  %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, %96, %97, %98, %99 = sim.phase "forward" -> tensor<f32>, tensor<1x1x64x64xf32>, tensor<1x1x64x1xf32>, tensor<1x1x64x64xf32>, tensor<1x64x64xbf16>, tensor<1x1x64x4x16xbf16>, tensor<1x1x64x2x16xbf16>, tensor<1x1x64x2x16xbf16>, tensor<1x1x64x4x16xbf16>, tensor<1x64x64xbf16>, tensor<1x1x64x64xf32>, tensor<1x1x64x1xf32>, tensor<1x1x64x64xf32>, tensor<1x64x64xbf16>, tensor<1x64x4xi64>, tensor<1x64x4xbf16>, tensor<1x4x64x64xbf16>, tensor<1x4x64x64xbf16>, tensor<1x4x64x64xbf16>, tensor<1x4x64x64xbf16>, tensor<1x4x64x64xbf16>, tensor<1x4x64x64xbf16>, tensor<1x4x64x64xbf16>, tensor<1x4x64x64xbf16>, tensor<1x4x64x64xbf16>, tensor<1x1x64x64xf32>, tensor<1x1x64x1xf32>, tensor<1x1x64x64xf32>, tensor<1x64x64xbf16>, tensor<1x1x64x4x16xbf16>, tensor<1x1x64x2x16xbf16>, tensor<1x1x64x2x16xbf16>, tensor<1x1x64x4x16xbf16>, tensor<1x64x64xbf16>, tensor<1x1x64x64xf32>, tensor<1x1x64x1xf32>, tensor<1x1x64x64xf32>, tensor<1x64x64xbf16>, tensor<1x64x4xi64>, tensor<1x64x4xbf16>, tensor<1x4x64x64xbf16>, tensor<1x4x64x64xbf16>, tensor<1x4x64x64xbf16>, tensor<1x4x64x64xbf16>, tensor<1x4x64x64xbf16>, tensor<1x4x64x64xbf16>, tensor<1x4x64x64xbf16>, tensor<1x4x64x64xbf16>, tensor<1x4x64x64xbf16>, tensor<1x64x64xf32>, tensor<1x64x1xf32>, tensor<1x64x64xf32>, tensor<64x64xbf16>, tensor<64x128xf32>, tensor<f32>, tensor<1x64x8xbf16>, tensor<1x64x8xbf16> {
    %100 = sim.embedding %0, %3 : (tensor<128x64xbf16>, tensor<1x64xi64>) -> tensor<1x64x64xbf16>
    %101 = sim.view %4 : tensor<1x64xi64> -> tensor<1x64x1xi64>
    %102 = sim.elementwise "cast" %101 : tensor<1x64x1xi64> -> tensor<1x64x1xf32>
    %103 = sim.elementwise "mul" %102, %1 : tensor<1x64x1xf32>, tensor<8xf32> -> tensor<1x64x8xf32>
    %104 = sim.elementwise "cos" %103 : tensor<1x64x8xf32> -> tensor<1x64x8xf32>
    %105 = sim.elementwise "mul" %104 : tensor<1x64x8xf32> -> tensor<1x64x8xf32>
    %106 = sim.elementwise "sin" %103 : tensor<1x64x8xf32> -> tensor<1x64x8xf32>
    %107 = sim.elementwise "mul" %106 : tensor<1x64x8xf32> -> tensor<1x64x8xf32>
    %108 = sim.elementwise "cast" %105 : tensor<1x64x8xf32> -> tensor<1x64x8xbf16>
    %109 = sim.elementwise "cast" %107 : tensor<1x64x8xf32> -> tensor<1x64x8xbf16>
    %110, %111, %112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127, %128, %129, %130, %131, %132, %133, %134 = sim.repeat 1 iter(%100 : tensor<1x64x64xbf16>) slices(%8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24 : tensor<1x4xbf16>, tensor<1x64x64xbf16>, tensor<1x64xbf16>, tensor<1x32x64xbf16>, tensor<1x32xbf16>, tensor<1x32x64xbf16>, tensor<1x32xbf16>, tensor<1x64x64xbf16>, tensor<1x64xbf16>, tensor<1x4x64xbf16>, tensor<1x4xbf16>, tensor<1x4x64x128xbf16>, tensor<1x4x128xbf16>, tensor<1x4x64x64xbf16>, tensor<1x4x64xbf16>, tensor<1x64xbf16>, tensor<1x64xbf16>) -> (tensor<1x64x64xbf16>, tensor<1x1x64x64xf32>, tensor<1x1x64x1xf32>, tensor<1x1x64x64xf32>, tensor<1x64x64xbf16>, tensor<1x1x64x4x16xbf16>, tensor<1x1x64x2x16xbf16>, tensor<1x1x64x2x16xbf16>, tensor<1x1x64x4x16xbf16>, tensor<1x64x64xbf16>, tensor<1x1x64x64xf32>, tensor<1x1x64x1xf32>, tensor<1x1x64x64xf32>, tensor<1x64x64xbf16>, tensor<1x64x4xi64>, tensor<1x64x4xbf16>, tensor<1x4x64x64xbf16>, tensor<1x4x64x64xbf16>, tensor<1x4x64x64xbf16>, tensor<1x4x64x64xbf16>, tensor<1x4x64x64xbf16>, tensor<1x4x64x64xbf16>, tensor<1x4x64x64xbf16>, tensor<1x4x64x64xbf16>, tensor<1x4x64x64xbf16>) {
    ^bb0(%135: tensor<1x64x64xbf16>, %136: tensor<4xbf16>, %137: tensor<64x64xbf16>, %138: tensor<64xbf16>, %139: tensor<32x64xbf16>, %140: tensor<32xbf16>, %141: tensor<32x64xbf16>, %142: tensor<32xbf16>, %143: tensor<64x64xbf16>, %144: tensor<64xbf16>, %145: tensor<4x64xbf16>, %146: tensor<4xbf16>, %147: tensor<4x64x128xbf16>, %148: tensor<4x128xbf16>, %149: tensor<4x64x64xbf16>, %150: tensor<4x64xbf16>, %151: tensor<64xbf16>, %152: tensor<64xbf16>):
      %153 = sim.elementwise "cast" %135 : tensor<1x64x64xbf16> -> tensor<1x64x64xf32>
      %154 = sim.elementwise "pow" %153 : tensor<1x64x64xf32> -> tensor<1x64x64xf32>
      %155 = sim.reduce "mean" %154 [2] : tensor<1x64x64xf32> -> tensor<1x64x1xf32>
      %156 = sim.elementwise "add" %155 : tensor<1x64x1xf32> -> tensor<1x64x1xf32>
      %157 = sim.elementwise "rsqrt" %156 : tensor<1x64x1xf32> -> tensor<1x64x1xf32>
      %158 = sim.elementwise "mul" %153, %157 : tensor<1x64x64xf32>, tensor<1x64x1xf32> -> tensor<1x64x64xf32>
      %159 = sim.elementwise "mul" %151, %158 : tensor<64xbf16>, tensor<1x64x64xf32> -> tensor<1x64x64xf32>
      %160 = sim.elementwise "cast" %159 : tensor<1x64x64xf32> -> tensor<1x64x64xbf16>
      %161 = sim.matmul %160, %137 {transpose_rhs} : (tensor<1x64x64xbf16>, tensor<64x64xbf16>) -> tensor<1x64x64xbf16>
      %162 = sim.elementwise "add" %161, %138 : tensor<1x64x64xbf16>, tensor<64xbf16> -> tensor<1x64x64xbf16>
      %163 = sim.matmul %160, %139 {transpose_rhs} : (tensor<1x64x64xbf16>, tensor<32x64xbf16>) -> tensor<1x64x32xbf16>
      %164 = sim.elementwise "add" %163, %140 : tensor<1x64x32xbf16>, tensor<32xbf16> -> tensor<1x64x32xbf16>
      %165 = sim.matmul %160, %141 {transpose_rhs} : (tensor<1x64x64xbf16>, tensor<32x64xbf16>) -> tensor<1x64x32xbf16>
      %166 = sim.elementwise "add" %165, %142 : tensor<1x64x32xbf16>, tensor<32xbf16> -> tensor<1x64x32xbf16>
      %167 = sim.generic "aten.split"(%162) {flop_count = 0.000000e+00 : f64, byte_count = 0.000000e+00 : f64} : (tensor<1x64x64xbf16>) -> tensor<1x4x64x8xbf16>
      %168 = sim.view %108 : tensor<1x64x8xbf16> -> tensor<1x1x64x8xbf16>
      %169 = sim.elementwise "mul" %167, %168 : tensor<1x4x64x8xbf16>, tensor<1x1x64x8xbf16> -> tensor<1x4x64x8xbf16>
      %170 = sim.generic "aten.split"(%162) {flop_count = 0.000000e+00 : f64, byte_count = 0.000000e+00 : f64} : (tensor<1x64x64xbf16>) -> tensor<1x4x64x8xbf16>
      %171 = sim.view %109 : tensor<1x64x8xbf16> -> tensor<1x1x64x8xbf16>
      %172 = sim.elementwise "mul" %170, %171 : tensor<1x4x64x8xbf16>, tensor<1x1x64x8xbf16> -> tensor<1x4x64x8xbf16>
      %173 = sim.elementwise "sub" %169, %172 : tensor<1x4x64x8xbf16>, tensor<1x4x64x8xbf16> -> tensor<1x4x64x8xbf16>
      %174 = sim.elementwise "mul" %170, %168 : tensor<1x4x64x8xbf16>, tensor<1x1x64x8xbf16> -> tensor<1x4x64x8xbf16>
      %175 = sim.elementwise "mul" %167, %171 : tensor<1x4x64x8xbf16>, tensor<1x1x64x8xbf16> -> tensor<1x4x64x8xbf16>
      %176 = sim.elementwise "add" %174, %175 : tensor<1x4x64x8xbf16>, tensor<1x4x64x8xbf16> -> tensor<1x4x64x8xbf16>
      %177 = sim.generic "aten.cat"(%173, %176) {flop_count = 0.000000e+00 : f64, byte_count = 1.638400e+04 : f64} : (tensor<1x4x64x8xbf16>, tensor<1x4x64x8xbf16>) -> tensor<1x4x64x16xbf16>
      %178 = sim.generic "aten.split"(%164) {flop_count = 0.000000e+00 : f64, byte_count = 0.000000e+00 : f64} : (tensor<1x64x32xbf16>) -> tensor<1x2x64x8xbf16>
      %179 = sim.elementwise "mul" %178, %168 : tensor<1x2x64x8xbf16>, tensor<1x1x64x8xbf16> -> tensor<1x2x64x8xbf16>
      %180 = sim.generic "aten.split"(%164) {flop_count = 0.000000e+00 : f64, byte_count = 0.000000e+00 : f64} : (tensor<1x64x32xbf16>) -> tensor<1x2x64x8xbf16>
      %181 = sim.elementwise "mul" %180, %171 : tensor<1x2x64x8xbf16>, tensor<1x1x64x8xbf16> -> tensor<1x2x64x8xbf16>
      %182 = sim.elementwise "sub" %179, %181 : tensor<1x2x64x8xbf16>, tensor<1x2x64x8xbf16> -> tensor<1x2x64x8xbf16>
      %183 = sim.elementwise "mul" %180, %168 : tensor<1x2x64x8xbf16>, tensor<1x1x64x8xbf16> -> tensor<1x2x64x8xbf16>
      %184 = sim.elementwise "mul" %178, %171 : tensor<1x2x64x8xbf16>, tensor<1x1x64x8xbf16> -> tensor<1x2x64x8xbf16>
      %185 = sim.elementwise "add" %183, %184 : tensor<1x2x64x8xbf16>, tensor<1x2x64x8xbf16> -> tensor<1x2x64x8xbf16>
      %186 = sim.generic "aten.cat"(%182, %185) {flop_count = 0.000000e+00 : f64, byte_count = 8.192000e+03 : f64} : (tensor<1x2x64x8xbf16>, tensor<1x2x64x8xbf16>) -> tensor<1x2x64x16xbf16>
      %187 = sim.view %177 {dims = [[0 : i64], [2 : i64], [1 : i64], [3 : i64]]} : tensor<1x4x64x16xbf16> -> tensor<1x64x4x16xbf16>
      %188 = sim.view %186 {dims = [[0 : i64], [2 : i64], [1 : i64], [3 : i64]]} : tensor<1x2x64x16xbf16> -> tensor<1x64x2x16xbf16>
      %189 = sim.view %166 {dims = [[0 : i64], [1 : i64], [2 : i64], [2 : i64]]} : tensor<1x64x32xbf16> -> tensor<1x64x2x16xbf16>
      %190 = sim.attention %187, %188, %189 {causal, window = 128 : i64} : (tensor<1x64x4x16xbf16>, tensor<1x64x2x16xbf16>, tensor<1x64x2x16xbf16>) -> tensor<1x64x4x16xbf16>
      %191 = sim.view %190 : tensor<1x64x4x16xbf16> -> tensor<1x64x64xbf16>
      %192 = sim.matmul %191, %143 {transpose_rhs} : (tensor<1x64x64xbf16>, tensor<64x64xbf16>) -> tensor<1x64x64xbf16>
      %193 = sim.elementwise "add" %192, %144 : tensor<1x64x64xbf16>, tensor<64xbf16> -> tensor<1x64x64xbf16>
      %194 = sim.elementwise "add" %135, %193 : tensor<1x64x64xbf16>, tensor<1x64x64xbf16> -> tensor<1x64x64xbf16>
      %195 = sim.elementwise "cast" %194 : tensor<1x64x64xbf16> -> tensor<1x64x64xf32>
      %196 = sim.elementwise "pow" %195 : tensor<1x64x64xf32> -> tensor<1x64x64xf32>
      %197 = sim.reduce "mean" %196 [2] : tensor<1x64x64xf32> -> tensor<1x64x1xf32>
      %198 = sim.elementwise "add" %197 : tensor<1x64x1xf32> -> tensor<1x64x1xf32>
      %199 = sim.elementwise "rsqrt" %198 : tensor<1x64x1xf32> -> tensor<1x64x1xf32>
      %200 = sim.elementwise "mul" %195, %199 : tensor<1x64x64xf32>, tensor<1x64x1xf32> -> tensor<1x64x64xf32>
      %201 = sim.elementwise "mul" %152, %200 : tensor<64xbf16>, tensor<1x64x64xf32> -> tensor<1x64x64xf32>
      %202 = sim.elementwise "cast" %201 : tensor<1x64x64xf32> -> tensor<1x64x64xbf16>
      %203 = sim.matmul %202, %145 {transpose_rhs} : (tensor<1x64x64xbf16>, tensor<4x64xbf16>) -> tensor<1x64x4xbf16>
      %204 = sim.elementwise "add" %203, %146 : tensor<1x64x4xbf16>, tensor<4xbf16> -> tensor<1x64x4xbf16>
      %205 = sim.view %204 : tensor<1x64x4xbf16> -> tensor<64x4xbf16>
      %206, %207 = sim.topk %205 k = 4 : tensor<64x4xbf16> -> (tensor<64x4xbf16>, tensor<64x4xi64>)
      %208 = sim.softmax %206 dim 1 : tensor<64x4xbf16>
      %209 = sim.view %202 : tensor<1x64x64xbf16> -> tensor<64x64xbf16>
      %210 = sim.moe_dispatch %209, %207 : (tensor<64x64xbf16>, tensor<64x4xi64>) -> tensor<4x64x64xbf16>
      %211 = sim.matmul %210, %147 : (tensor<4x64x64xbf16>, tensor<4x64x128xbf16>) -> tensor<4x64x128xbf16>
      %212 = sim.view %148 : tensor<4x128xbf16> -> tensor<4x1x128xbf16>
      %213 = sim.elementwise "add" %211, %212 : tensor<4x64x128xbf16>, tensor<4x1x128xbf16> -> tensor<4x64x128xbf16>
      %214 = sim.generic "aten.slice"(%213) {flop_count = 0.000000e+00 : f64, byte_count = 0.000000e+00 : f64} : (tensor<4x64x128xbf16>) -> tensor<4x64x64xbf16>
      %215 = sim.elementwise "clamp" %214 : tensor<4x64x64xbf16> -> tensor<4x64x64xbf16>
      %216 = sim.generic "aten.slice"(%213) {flop_count = 0.000000e+00 : f64, byte_count = 0.000000e+00 : f64} : (tensor<4x64x128xbf16>) -> tensor<4x64x64xbf16>
      %217 = sim.elementwise "clamp" %216 : tensor<4x64x64xbf16> -> tensor<4x64x64xbf16>
      %218 = sim.elementwise "mul" %215 : tensor<4x64x64xbf16> -> tensor<4x64x64xbf16>
      %219 = sim.elementwise "sigmoid" %218 : tensor<4x64x64xbf16> -> tensor<4x64x64xbf16>
      %220 = sim.elementwise "mul" %215, %219 : tensor<4x64x64xbf16>, tensor<4x64x64xbf16> -> tensor<4x64x64xbf16>
      %221 = sim.elementwise "add" %217 : tensor<4x64x64xbf16> -> tensor<4x64x64xbf16>
      %222 = sim.elementwise "mul" %221, %220 : tensor<4x64x64xbf16>, tensor<4x64x64xbf16> -> tensor<4x64x64xbf16>
      %223 = sim.matmul %222, %149 : (tensor<4x64x64xbf16>, tensor<4x64x64xbf16>) -> tensor<4x64x64xbf16>
      %224 = sim.view %150 : tensor<4x64xbf16> -> tensor<4x1x64xbf16>
      %225 = sim.elementwise "add" %223, %224 : tensor<4x64x64xbf16>, tensor<4x1x64xbf16> -> tensor<4x64x64xbf16>
      %226 = sim.moe_combine %225, %207 weights %208 : tensor<64x4xbf16> : (tensor<4x64x64xbf16>, tensor<64x4xi64>) -> tensor<64x64xbf16>
      %227 = sim.view %226 : tensor<64x64xbf16> -> tensor<1x64x64xbf16>
      %228 = sim.elementwise "add" %194, %227 : tensor<1x64x64xbf16>, tensor<1x64x64xbf16> -> tensor<1x64x64xbf16>
      %229 = sim.view %160 : tensor<1x64x64xbf16> -> tensor<64x64xbf16>
      %230 = sim.view %190 : tensor<1x64x4x16xbf16> -> tensor<64x64xbf16>
      sim.yield %228, %153, %157, %158, %229, %187, %188, %189, %190, %230, %195, %199, %200, %209, %207, %208, %210, %214, %216, %215, %219, %220, %221, %222, %225 : tensor<1x64x64xbf16>, tensor<1x64x64xf32>, tensor<1x64x1xf32>, tensor<1x64x64xf32>, tensor<64x64xbf16>, tensor<1x64x4x16xbf16>, tensor<1x64x2x16xbf16>, tensor<1x64x2x16xbf16>, tensor<1x64x4x16xbf16>, tensor<64x64xbf16>, tensor<1x64x64xf32>, tensor<1x64x1xf32>, tensor<1x64x64xf32>, tensor<64x64xbf16>, tensor<64x4xi64>, tensor<64x4xbf16>, tensor<4x64x64xbf16>, tensor<4x64x64xbf16>, tensor<4x64x64xbf16>, tensor<4x64x64xbf16>, tensor<4x64x64xbf16>, tensor<4x64x64xbf16>, tensor<4x64x64xbf16>, tensor<4x64x64xbf16>, tensor<4x64x64xbf16>
    }
    %231, %232, %233, %234, %235, %236, %237, %238, %239, %240, %241, %242, %243, %244, %245, %246, %247, %248, %249, %250, %251, %252, %253, %254, %255 = sim.repeat 1 iter(%110 : tensor<1x64x64xbf16>) slices(%25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41 : tensor<1x4xbf16>, tensor<1x64x64xbf16>, tensor<1x64xbf16>, tensor<1x32x64xbf16>, tensor<1x32xbf16>, tensor<1x32x64xbf16>, tensor<1x32xbf16>, tensor<1x64x64xbf16>, tensor<1x64xbf16>, tensor<1x4x64xbf16>, tensor<1x4xbf16>, tensor<1x4x64x128xbf16>, tensor<1x4x128xbf16>, tensor<1x4x64x64xbf16>, tensor<1x4x64xbf16>, tensor<1x64xbf16>, tensor<1x64xbf16>) -> (tensor<1x64x64xbf16>, tensor<1x1x64x64xf32>, tensor<1x1x64x1xf32>, tensor<1x1x64x64xf32>, tensor<1x64x64xbf16>, tensor<1x1x64x4x16xbf16>, tensor<1x1x64x2x16xbf16>, tensor<1x1x64x2x16xbf16>, tensor<1x1x64x4x16xbf16>, tensor<1x64x64xbf16>, tensor<1x1x64x64xf32>, tensor<1x1x64x1xf32>, tensor<1x1x64x64xf32>, tensor<1x64x64xbf16>, tensor<1x64x4xi64>, tensor<1x64x4xbf16>, tensor<1x4x64x64xbf16>, tensor<1x4x64x64xbf16>, tensor<1x4x64x64xbf16>, tensor<1x4x64x64xbf16>, tensor<1x4x64x64xbf16>, tensor<1x4x64x64xbf16>, tensor<1x4x64x64xbf16>, tensor<1x4x64x64xbf16>, tensor<1x4x64x64xbf16>) {
    ^bb0(%256: tensor<1x64x64xbf16>, %257: tensor<4xbf16>, %258: tensor<64x64xbf16>, %259: tensor<64xbf16>, %260: tensor<32x64xbf16>, %261: tensor<32xbf16>, %262: tensor<32x64xbf16>, %263: tensor<32xbf16>, %264: tensor<64x64xbf16>, %265: tensor<64xbf16>, %266: tensor<4x64xbf16>, %267: tensor<4xbf16>, %268: tensor<4x64x128xbf16>, %269: tensor<4x128xbf16>, %270: tensor<4x64x64xbf16>, %271: tensor<4x64xbf16>, %272: tensor<64xbf16>, %273: tensor<64xbf16>):
      %274 = sim.elementwise "cast" %256 : tensor<1x64x64xbf16> -> tensor<1x64x64xf32>
      %275 = sim.elementwise "pow" %274 : tensor<1x64x64xf32> -> tensor<1x64x64xf32>
      %276 = sim.reduce "mean" %275 [2] : tensor<1x64x64xf32> -> tensor<1x64x1xf32>
      %277 = sim.elementwise "add" %276 : tensor<1x64x1xf32> -> tensor<1x64x1xf32>
      %278 = sim.elementwise "rsqrt" %277 : tensor<1x64x1xf32> -> tensor<1x64x1xf32>
      %279 = sim.elementwise "mul" %274, %278 : tensor<1x64x64xf32>, tensor<1x64x1xf32> -> tensor<1x64x64xf32>
      %280 = sim.elementwise "mul" %272, %279 : tensor<64xbf16>, tensor<1x64x64xf32> -> tensor<1x64x64xf32>
      %281 = sim.elementwise "cast" %280 : tensor<1x64x64xf32> -> tensor<1x64x64xbf16>
      %282 = sim.matmul %281, %258 {transpose_rhs} : (tensor<1x64x64xbf16>, tensor<64x64xbf16>) -> tensor<1x64x64xbf16>
      %283 = sim.elementwise "add" %282, %259 : tensor<1x64x64xbf16>, tensor<64xbf16> -> tensor<1x64x64xbf16>
      %284 = sim.matmul %281, %260 {transpose_rhs} : (tensor<1x64x64xbf16>, tensor<32x64xbf16>) -> tensor<1x64x32xbf16>
      %285 = sim.elementwise "add" %284, %261 : tensor<1x64x32xbf16>, tensor<32xbf16> -> tensor<1x64x32xbf16>
      %286 = sim.matmul %281, %262 {transpose_rhs} : (tensor<1x64x64xbf16>, tensor<32x64xbf16>) -> tensor<1x64x32xbf16>
      %287 = sim.elementwise "add" %286, %263 : tensor<1x64x32xbf16>, tensor<32xbf16> -> tensor<1x64x32xbf16>
      %288 = sim.generic "aten.split"(%283) {flop_count = 0.000000e+00 : f64, byte_count = 0.000000e+00 : f64} : (tensor<1x64x64xbf16>) -> tensor<1x4x64x8xbf16>
      %289 = sim.view %108 : tensor<1x64x8xbf16> -> tensor<1x1x64x8xbf16>
      %290 = sim.elementwise "mul" %288, %289 : tensor<1x4x64x8xbf16>, tensor<1x1x64x8xbf16> -> tensor<1x4x64x8xbf16>
      %291 = sim.generic "aten.split"(%283) {flop_count = 0.000000e+00 : f64, byte_count = 0.000000e+00 : f64} : (tensor<1x64x64xbf16>) -> tensor<1x4x64x8xbf16>
      %292 = sim.view %109 : tensor<1x64x8xbf16> -> tensor<1x1x64x8xbf16>
      %293 = sim.elementwise "mul" %291, %292 : tensor<1x4x64x8xbf16>, tensor<1x1x64x8xbf16> -> tensor<1x4x64x8xbf16>
      %294 = sim.elementwise "sub" %290, %293 : tensor<1x4x64x8xbf16>, tensor<1x4x64x8xbf16> -> tensor<1x4x64x8xbf16>
      %295 = sim.elementwise "mul" %291, %289 : tensor<1x4x64x8xbf16>, tensor<1x1x64x8xbf16> -> tensor<1x4x64x8xbf16>
      %296 = sim.elementwise "mul" %288, %292 : tensor<1x4x64x8xbf16>, tensor<1x1x64x8xbf16> -> tensor<1x4x64x8xbf16>
      %297 = sim.elementwise "add" %295, %296 : tensor<1x4x64x8xbf16>, tensor<1x4x64x8xbf16> -> tensor<1x4x64x8xbf16>
      %298 = sim.generic "aten.cat"(%294, %297) {flop_count = 0.000000e+00 : f64, byte_count = 1.638400e+04 : f64} : (tensor<1x4x64x8xbf16>, tensor<1x4x64x8xbf16>) -> tensor<1x4x64x16xbf16>
      %299 = sim.generic "aten.split"(%285) {flop_count = 0.000000e+00 : f64, byte_count = 0.000000e+00 : f64} : (tensor<1x64x32xbf16>) -> tensor<1x2x64x8xbf16>
      %300 = sim.elementwise "mul" %299, %289 : tensor<1x2x64x8xbf16>, tensor<1x1x64x8xbf16> -> tensor<1x2x64x8xbf16>
      %301 = sim.generic "aten.split"(%285) {flop_count = 0.000000e+00 : f64, byte_count = 0.000000e+00 : f64} : (tensor<1x64x32xbf16>) -> tensor<1x2x64x8xbf16>
      %302 = sim.elementwise "mul" %301, %292 : tensor<1x2x64x8xbf16>, tensor<1x1x64x8xbf16> -> tensor<1x2x64x8xbf16>
      %303 = sim.elementwise "sub" %300, %302 : tensor<1x2x64x8xbf16>, tensor<1x2x64x8xbf16> -> tensor<1x2x64x8xbf16>
      %304 = sim.elementwise "mul" %301, %289 : tensor<1x2x64x8xbf16>, tensor<1x1x64x8xbf16> -> tensor<1x2x64x8xbf16>
      %305 = sim.elementwise "mul" %299, %292 : tensor<1x2x64x8xbf16>, tensor<1x1x64x8xbf16> -> tensor<1x2x64x8xbf16>
      %306 = sim.elementwise "add" %304, %305 : tensor<1x2x64x8xbf16>, tensor<1x2x64x8xbf16> -> tensor<1x2x64x8xbf16>
      %307 = sim.generic "aten.cat"(%303, %306) {flop_count = 0.000000e+00 : f64, byte_count = 8.192000e+03 : f64} : (tensor<1x2x64x8xbf16>, tensor<1x2x64x8xbf16>) -> tensor<1x2x64x16xbf16>
      %308 = sim.view %298 {dims = [[0 : i64], [2 : i64], [1 : i64], [3 : i64]]} : tensor<1x4x64x16xbf16> -> tensor<1x64x4x16xbf16>
      %309 = sim.view %307 {dims = [[0 : i64], [2 : i64], [1 : i64], [3 : i64]]} : tensor<1x2x64x16xbf16> -> tensor<1x64x2x16xbf16>
      %310 = sim.view %287 {dims = [[0 : i64], [1 : i64], [2 : i64], [2 : i64]]} : tensor<1x64x32xbf16> -> tensor<1x64x2x16xbf16>
      %311 = sim.attention %308, %309, %310 {causal} : (tensor<1x64x4x16xbf16>, tensor<1x64x2x16xbf16>, tensor<1x64x2x16xbf16>) -> tensor<1x64x4x16xbf16>
      %312 = sim.view %311 : tensor<1x64x4x16xbf16> -> tensor<1x64x64xbf16>
      %313 = sim.matmul %312, %264 {transpose_rhs} : (tensor<1x64x64xbf16>, tensor<64x64xbf16>) -> tensor<1x64x64xbf16>
      %314 = sim.elementwise "add" %313, %265 : tensor<1x64x64xbf16>, tensor<64xbf16> -> tensor<1x64x64xbf16>
      %315 = sim.elementwise "add" %256, %314 : tensor<1x64x64xbf16>, tensor<1x64x64xbf16> -> tensor<1x64x64xbf16>
      %316 = sim.elementwise "cast" %315 : tensor<1x64x64xbf16> -> tensor<1x64x64xf32>
      %317 = sim.elementwise "pow" %316 : tensor<1x64x64xf32> -> tensor<1x64x64xf32>
      %318 = sim.reduce "mean" %317 [2] : tensor<1x64x64xf32> -> tensor<1x64x1xf32>
      %319 = sim.elementwise "add" %318 : tensor<1x64x1xf32> -> tensor<1x64x1xf32>
      %320 = sim.elementwise "rsqrt" %319 : tensor<1x64x1xf32> -> tensor<1x64x1xf32>
      %321 = sim.elementwise "mul" %316, %320 : tensor<1x64x64xf32>, tensor<1x64x1xf32> -> tensor<1x64x64xf32>
      %322 = sim.elementwise "mul" %273, %321 : tensor<64xbf16>, tensor<1x64x64xf32> -> tensor<1x64x64xf32>
      %323 = sim.elementwise "cast" %322 : tensor<1x64x64xf32> -> tensor<1x64x64xbf16>
      %324 = sim.matmul %323, %266 {transpose_rhs} : (tensor<1x64x64xbf16>, tensor<4x64xbf16>) -> tensor<1x64x4xbf16>
      %325 = sim.elementwise "add" %324, %267 : tensor<1x64x4xbf16>, tensor<4xbf16> -> tensor<1x64x4xbf16>
      %326 = sim.view %325 : tensor<1x64x4xbf16> -> tensor<64x4xbf16>
      %327, %328 = sim.topk %326 k = 4 : tensor<64x4xbf16> -> (tensor<64x4xbf16>, tensor<64x4xi64>)
      %329 = sim.softmax %327 dim 1 : tensor<64x4xbf16>
      %330 = sim.view %323 : tensor<1x64x64xbf16> -> tensor<64x64xbf16>
      %331 = sim.moe_dispatch %330, %328 : (tensor<64x64xbf16>, tensor<64x4xi64>) -> tensor<4x64x64xbf16>
      %332 = sim.matmul %331, %268 : (tensor<4x64x64xbf16>, tensor<4x64x128xbf16>) -> tensor<4x64x128xbf16>
      %333 = sim.view %269 : tensor<4x128xbf16> -> tensor<4x1x128xbf16>
      %334 = sim.elementwise "add" %332, %333 : tensor<4x64x128xbf16>, tensor<4x1x128xbf16> -> tensor<4x64x128xbf16>
      %335 = sim.generic "aten.slice"(%334) {flop_count = 0.000000e+00 : f64, byte_count = 0.000000e+00 : f64} : (tensor<4x64x128xbf16>) -> tensor<4x64x64xbf16>
      %336 = sim.elementwise "clamp" %335 : tensor<4x64x64xbf16> -> tensor<4x64x64xbf16>
      %337 = sim.generic "aten.slice"(%334) {flop_count = 0.000000e+00 : f64, byte_count = 0.000000e+00 : f64} : (tensor<4x64x128xbf16>) -> tensor<4x64x64xbf16>
      %338 = sim.elementwise "clamp" %337 : tensor<4x64x64xbf16> -> tensor<4x64x64xbf16>
      %339 = sim.elementwise "mul" %336 : tensor<4x64x64xbf16> -> tensor<4x64x64xbf16>
      %340 = sim.elementwise "sigmoid" %339 : tensor<4x64x64xbf16> -> tensor<4x64x64xbf16>
      %341 = sim.elementwise "mul" %336, %340 : tensor<4x64x64xbf16>, tensor<4x64x64xbf16> -> tensor<4x64x64xbf16>
      %342 = sim.elementwise "add" %338 : tensor<4x64x64xbf16> -> tensor<4x64x64xbf16>
      %343 = sim.elementwise "mul" %342, %341 : tensor<4x64x64xbf16>, tensor<4x64x64xbf16> -> tensor<4x64x64xbf16>
      %344 = sim.matmul %343, %270 : (tensor<4x64x64xbf16>, tensor<4x64x64xbf16>) -> tensor<4x64x64xbf16>
      %345 = sim.view %271 : tensor<4x64xbf16> -> tensor<4x1x64xbf16>
      %346 = sim.elementwise "add" %344, %345 : tensor<4x64x64xbf16>, tensor<4x1x64xbf16> -> tensor<4x64x64xbf16>
      %347 = sim.moe_combine %346, %328 weights %329 : tensor<64x4xbf16> : (tensor<4x64x64xbf16>, tensor<64x4xi64>) -> tensor<64x64xbf16>
      %348 = sim.view %347 : tensor<64x64xbf16> -> tensor<1x64x64xbf16>
      %349 = sim.elementwise "add" %315, %348 : tensor<1x64x64xbf16>, tensor<1x64x64xbf16> -> tensor<1x64x64xbf16>
      %350 = sim.view %281 : tensor<1x64x64xbf16> -> tensor<64x64xbf16>
      %351 = sim.view %311 : tensor<1x64x4x16xbf16> -> tensor<64x64xbf16>
      sim.yield %349, %274, %278, %279, %350, %308, %309, %310, %311, %351, %316, %320, %321, %330, %328, %329, %331, %335, %337, %336, %340, %341, %342, %343, %346 : tensor<1x64x64xbf16>, tensor<1x64x64xf32>, tensor<1x64x1xf32>, tensor<1x64x64xf32>, tensor<64x64xbf16>, tensor<1x64x4x16xbf16>, tensor<1x64x2x16xbf16>, tensor<1x64x2x16xbf16>, tensor<1x64x4x16xbf16>, tensor<64x64xbf16>, tensor<1x64x64xf32>, tensor<1x64x1xf32>, tensor<1x64x64xf32>, tensor<64x64xbf16>, tensor<64x4xi64>, tensor<64x4xbf16>, tensor<4x64x64xbf16>, tensor<4x64x64xbf16>, tensor<4x64x64xbf16>, tensor<4x64x64xbf16>, tensor<4x64x64xbf16>, tensor<4x64x64xbf16>, tensor<4x64x64xbf16>, tensor<4x64x64xbf16>, tensor<4x64x64xbf16>
    }
    %352 = sim.elementwise "cast" %231 : tensor<1x64x64xbf16> -> tensor<1x64x64xf32>
    %353 = sim.elementwise "pow" %352 : tensor<1x64x64xf32> -> tensor<1x64x64xf32>
    %354 = sim.reduce "mean" %353 [2] : tensor<1x64x64xf32> -> tensor<1x64x1xf32>
    %355 = sim.elementwise "add" %354 : tensor<1x64x1xf32> -> tensor<1x64x1xf32>
    %356 = sim.elementwise "rsqrt" %355 : tensor<1x64x1xf32> -> tensor<1x64x1xf32>
    %357 = sim.elementwise "mul" %352, %356 : tensor<1x64x64xf32>, tensor<1x64x1xf32> -> tensor<1x64x64xf32>
    %358 = sim.elementwise "mul" %5, %357 : tensor<64xbf16>, tensor<1x64x64xf32> -> tensor<1x64x64xf32>
    %359 = sim.elementwise "cast" %358 : tensor<1x64x64xf32> -> tensor<1x64x64xbf16>
    %360 = sim.matmul %359, %6 {transpose_rhs} : (tensor<1x64x64xbf16>, tensor<128x64xbf16>) -> tensor<1x64x128xbf16>
    %361 = sim.elementwise "cast" %360 : tensor<1x64x128xbf16> -> tensor<1x64x128xf32>
    %362 = sim.view %361 : tensor<1x64x128xf32> -> tensor<64x128xf32>
    %363 = sim.generic "aten._log_softmax"(%362) {flop_count = 4.096000e+04 : f64, byte_count = 6.553600e+04 : f64} : (tensor<64x128xf32>) -> tensor<64x128xf32>
    %364 = sim.view %7 : tensor<1x64xi64> -> tensor<64xi64>
    %365, %366 = sim.generic "aten.nll_loss_forward"(%363, %364) {flop_count = 2.000000e+00 : f64, byte_count = 7.760000e+02 : f64} : (tensor<64x128xf32>, tensor<64xi64>) -> (tensor<f32>, tensor<f32>)
    %367 = sim.view %359 : tensor<1x64x64xbf16> -> tensor<64x64xbf16>
    sim.yield %365, %111, %112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127, %128, %129, %130, %131, %132, %133, %134, %232, %233, %234, %235, %236, %237, %238, %239, %240, %241, %242, %243, %244, %245, %246, %247, %248, %249, %250, %251, %252, %253, %254, %255, %352, %356, %357, %367, %363, %366, %108, %109 : tensor<f32>, tensor<1x1x64x64xf32>, tensor<1x1x64x1xf32>, tensor<1x1x64x64xf32>, tensor<1x64x64xbf16>, tensor<1x1x64x4x16xbf16>, tensor<1x1x64x2x16xbf16>, tensor<1x1x64x2x16xbf16>, tensor<1x1x64x4x16xbf16>, tensor<1x64x64xbf16>, tensor<1x1x64x64xf32>, tensor<1x1x64x1xf32>, tensor<1x1x64x64xf32>, tensor<1x64x64xbf16>, tensor<1x64x4xi64>, tensor<1x64x4xbf16>, tensor<1x4x64x64xbf16>, tensor<1x4x64x64xbf16>, tensor<1x4x64x64xbf16>, tensor<1x4x64x64xbf16>, tensor<1x4x64x64xbf16>, tensor<1x4x64x64xbf16>, tensor<1x4x64x64xbf16>, tensor<1x4x64x64xbf16>, tensor<1x4x64x64xbf16>, tensor<1x1x64x64xf32>, tensor<1x1x64x1xf32>, tensor<1x1x64x64xf32>, tensor<1x64x64xbf16>, tensor<1x1x64x4x16xbf16>, tensor<1x1x64x2x16xbf16>, tensor<1x1x64x2x16xbf16>, tensor<1x1x64x4x16xbf16>, tensor<1x64x64xbf16>, tensor<1x1x64x64xf32>, tensor<1x1x64x1xf32>, tensor<1x1x64x64xf32>, tensor<1x64x64xbf16>, tensor<1x64x4xi64>, tensor<1x64x4xbf16>, tensor<1x4x64x64xbf16>, tensor<1x4x64x64xbf16>, tensor<1x4x64x64xbf16>, tensor<1x4x64x64xbf16>, tensor<1x4x64x64xbf16>, tensor<1x4x64x64xbf16>, tensor<1x4x64x64xbf16>, tensor<1x4x64x64xbf16>, tensor<1x4x64x64xbf16>, tensor<1x64x64xf32>, tensor<1x64x1xf32>, tensor<1x64x64xf32>, tensor<64x64xbf16>, tensor<64x128xf32>, tensor<f32>, tensor<1x64x8xbf16>, tensor<1x64x8xbf16>
  }
  %368, %369, %370, %371, %372, %373, %374, %375, %376, %377, %378, %379, %380, %381, %382, %383, %384, %385, %386, %387, %388, %389, %390, %391, %392, %393, %394, %395, %396, %397, %398, %399, %400, %401, %402 = sim.phase "backward" -> tensor<128x64xbf16>, tensor<64xbf16>, tensor<128x64xbf16>, tensor<1x64x64xbf16>, tensor<1x64xbf16>, tensor<1x32x64xbf16>, tensor<1x32xbf16>, tensor<1x32x64xbf16>, tensor<1x32xbf16>, tensor<1x64x64xbf16>, tensor<1x64xbf16>, tensor<1x4x64xbf16>, tensor<1x4xbf16>, tensor<1x4x64x128xbf16>, tensor<1x4x128xbf16>, tensor<1x4x64x64xbf16>, tensor<1x4x64xbf16>, tensor<1x64xbf16>, tensor<1x64xbf16>, tensor<1x64x64xbf16>, tensor<1x64xbf16>, tensor<1x32x64xbf16>, tensor<1x32xbf16>, tensor<1x32x64xbf16>, tensor<1x32xbf16>, tensor<1x64x64xbf16>, tensor<1x64xbf16>, tensor<1x4x64xbf16>, tensor<1x4xbf16>, tensor<1x4x64x128xbf16>, tensor<1x4x128xbf16>, tensor<1x4x64x64xbf16>, tensor<1x4x64xbf16>, tensor<1x64xbf16>, tensor<1x64xbf16> {
    %403 = sim.view %7 : tensor<1x64xi64> -> tensor<64xi64>
    %404 = sim.generic "aten.nll_loss_backward"(%42, %96, %403, %97) {flop_count = 8.192000e+03 : f64, byte_count = 6.605600e+04 : f64} : (tensor<f32>, tensor<64x128xf32>, tensor<64xi64>, tensor<f32>) -> tensor<64x128xf32>
    %405 = sim.generic "aten._log_softmax_backward_data"(%404, %96) {flop_count = 2.457600e+04 : f64, byte_count = 9.830400e+04 : f64} : (tensor<64x128xf32>, tensor<64x128xf32>) -> tensor<64x128xf32>
    %406 = sim.view %405 : tensor<64x128xf32> -> tensor<1x64x128xf32>
    %407 = sim.elementwise "cast" %406 : tensor<1x64x128xf32> -> tensor<1x64x128xbf16>
    %408 = sim.view %407 : tensor<1x64x128xbf16> -> tensor<64x128xbf16>
    %409 = sim.matmul %408, %95 {transpose_lhs} : (tensor<64x128xbf16>, tensor<64x64xbf16>) -> tensor<128x64xbf16>
    %410 = sim.matmul %407, %6 : (tensor<1x64x128xbf16>, tensor<128x64xbf16>) -> tensor<1x64x64xbf16>
    %411 = sim.elementwise "cast" %410 : tensor<1x64x64xbf16> -> tensor<1x64x64xf32>
    %412 = sim.elementwise "mul" %411, %5 : tensor<1x64x64xf32>, tensor<64xbf16> -> tensor<1x64x64xf32>
    %413 = sim.elementwise "mul" %411, %94 : tensor<1x64x64xf32>, tensor<1x64x64xf32> -> tensor<1x64x64xf32>
    %414 = sim.reduce "sum" %413 [0, 1] : tensor<1x64x64xf32> -> tensor<1x1x64xf32>
    %415 = sim.view %414 : tensor<1x1x64xf32> -> tensor<64xf32>
    %416 = sim.elementwise "cast" %415 : tensor<64xf32> -> tensor<64xbf16>
    %417 = sim.elementwise "mul" %412, %92 : tensor<1x64x64xf32>, tensor<1x64x64xf32> -> tensor<1x64x64xf32>
    %418 = sim.elementwise "mul" %412, %93 : tensor<1x64x64xf32>, tensor<1x64x1xf32> -> tensor<1x64x64xf32>
    %419 = sim.reduce "sum" %417 [2] : tensor<1x64x64xf32> -> tensor<1x64x1xf32>
    %420 = sim.elementwise "pow" %93 : tensor<1x64x1xf32> -> tensor<1x64x1xf32>
    %421 = sim.elementwise "mul" %419 : tensor<1x64x1xf32> -> tensor<1x64x1xf32>
    %422 = sim.elementwise "mul" %421, %420 : tensor<1x64x1xf32>, tensor<1x64x1xf32> -> tensor<1x64x1xf32>
    %423 = sim.elementwise "div" %422 : tensor<1x64x1xf32> -> tensor<1x64x64xf32>
    %424 = sim.elementwise "pow" %92 : tensor<1x64x64xf32> -> tensor<1x64x64xf32>
    %425 = sim.elementwise "mul" %424 : tensor<1x64x64xf32> -> tensor<1x64x64xf32>
    %426 = sim.elementwise "mul" %423, %425 : tensor<1x64x64xf32>, tensor<1x64x64xf32> -> tensor<1x64x64xf32>
    %427 = sim.elementwise "add" %418, %426 : tensor<1x64x64xf32>, tensor<1x64x64xf32> -> tensor<1x64x64xf32>
    %428 = sim.elementwise "cast" %427 : tensor<1x64x64xf32> -> tensor<1x64x64xbf16>
    %429, %430, %431, %432, %433, %434, %435, %436, %437, %438, %439, %440, %441, %442, %443, %444, %445 = sim.repeat 1 iter(%428 : tensor<1x64x64xbf16>) slices(%25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91 : tensor<1x4xbf16>, tensor<1x64x64xbf16>, tensor<1x64xbf16>, tensor<1x32x64xbf16>, tensor<1x32xbf16>, tensor<1x32x64xbf16>, tensor<1x32xbf16>, tensor<1x64x64xbf16>, tensor<1x64xbf16>, tensor<1x4x64xbf16>, tensor<1x4xbf16>, tensor<1x4x64x128xbf16>, tensor<1x4x128xbf16>, tensor<1x4x64x64xbf16>, tensor<1x4x64xbf16>, tensor<1x64xbf16>, tensor<1x64xbf16>, tensor<1x1x64x64xf32>, tensor<1x1x64x1xf32>, tensor<1x1x64x64xf32>, tensor<1x64x64xbf16>, tensor<1x1x64x4x16xbf16>, tensor<1x1x64x2x16xbf16>, tensor<1x1x64x2x16xbf16>, tensor<1x1x64x4x16xbf16>, tensor<1x64x64xbf16>, tensor<1x1x64x64xf32>, tensor<1x1x64x1xf32>, tensor<1x1x64x64xf32>, tensor<1x64x64xbf16>, tensor<1x64x4xi64>, tensor<1x64x4xbf16>, tensor<1x4x64x64xbf16>, tensor<1x4x64x64xbf16>, tensor<1x4x64x64xbf16>, tensor<1x4x64x64xbf16>, tensor<1x4x64x64xbf16>, tensor<1x4x64x64xbf16>, tensor<1x4x64x64xbf16>, tensor<1x4x64x64xbf16>, tensor<1x4x64x64xbf16>) {reverse} -> (tensor<1x64x64xbf16>, tensor<1x64x64xbf16>, tensor<1x64xbf16>, tensor<1x32x64xbf16>, tensor<1x32xbf16>, tensor<1x32x64xbf16>, tensor<1x32xbf16>, tensor<1x64x64xbf16>, tensor<1x64xbf16>, tensor<1x4x64xbf16>, tensor<1x4xbf16>, tensor<1x4x64x128xbf16>, tensor<1x4x128xbf16>, tensor<1x4x64x64xbf16>, tensor<1x4x64xbf16>, tensor<1x64xbf16>, tensor<1x64xbf16>) {
    ^bb0(%446: tensor<1x64x64xbf16>, %447: tensor<4xbf16>, %448: tensor<64x64xbf16>, %449: tensor<64xbf16>, %450: tensor<32x64xbf16>, %451: tensor<32xbf16>, %452: tensor<32x64xbf16>, %453: tensor<32xbf16>, %454: tensor<64x64xbf16>, %455: tensor<64xbf16>, %456: tensor<4x64xbf16>, %457: tensor<4xbf16>, %458: tensor<4x64x128xbf16>, %459: tensor<4x128xbf16>, %460: tensor<4x64x64xbf16>, %461: tensor<4x64xbf16>, %462: tensor<64xbf16>, %463: tensor<64xbf16>, %464: tensor<1x64x64xf32>, %465: tensor<1x64x1xf32>, %466: tensor<1x64x64xf32>, %467: tensor<64x64xbf16>, %468: tensor<1x64x4x16xbf16>, %469: tensor<1x64x2x16xbf16>, %470: tensor<1x64x2x16xbf16>, %471: tensor<1x64x4x16xbf16>, %472: tensor<64x64xbf16>, %473: tensor<1x64x64xf32>, %474: tensor<1x64x1xf32>, %475: tensor<1x64x64xf32>, %476: tensor<64x64xbf16>, %477: tensor<64x4xi64>, %478: tensor<64x4xbf16>, %479: tensor<4x64x64xbf16>, %480: tensor<4x64x64xbf16>, %481: tensor<4x64x64xbf16>, %482: tensor<4x64x64xbf16>, %483: tensor<4x64x64xbf16>, %484: tensor<4x64x64xbf16>, %485: tensor<4x64x64xbf16>, %486: tensor<4x64x64xbf16>, %487: tensor<4x64x64xbf16>):
      %488 = sim.view %446 : tensor<1x64x64xbf16> -> tensor<64x64xbf16>
      %489 = sim.moe_dispatch %488, %477 : (tensor<64x64xbf16>, tensor<64x4xi64>) -> tensor<4x64x64xbf16>
      %490 = sim.generic "moe_combine_weight_grad"(%487, %488, %477) {flop_count = 3.276800e+04 : f64, byte_count = 4.352000e+04 : f64} : (tensor<4x64x64xbf16>, tensor<64x64xbf16>, tensor<64x4xi64>) -> tensor<64x4xbf16>
      %491 = sim.reduce "sum" %489 [1] : tensor<4x64x64xbf16> -> tensor<4x1x64xbf16>
      %492 = sim.matmul %486, %489 {transpose_lhs} : (tensor<4x64x64xbf16>, tensor<4x64x64xbf16>) -> tensor<4x64x64xbf16>
      %493 = sim.matmul %489, %460 {transpose_rhs} : (tensor<4x64x64xbf16>, tensor<4x64x64xbf16>) -> tensor<4x64x64xbf16>
      %494 = sim.elementwise "mul" %493, %485 : tensor<4x64x64xbf16>, tensor<4x64x64xbf16> -> tensor<4x64x64xbf16>
      %495 = sim.elementwise "mul" %493, %484 : tensor<4x64x64xbf16>, tensor<4x64x64xbf16> -> tensor<4x64x64xbf16>
      %496 = sim.elementwise "mul" %494, %482 : tensor<4x64x64xbf16>, tensor<4x64x64xbf16> -> tensor<4x64x64xbf16>
      %497 = sim.elementwise "mul" %494, %483 : tensor<4x64x64xbf16>, tensor<4x64x64xbf16> -> tensor<4x64x64xbf16>
      %498 = sim.elementwise "sigmoid_grad" %496, %483 : tensor<4x64x64xbf16>, tensor<4x64x64xbf16> -> tensor<4x64x64xbf16>
      %499 = sim.elementwise "mul" %498 : tensor<4x64x64xbf16> -> tensor<4x64x64xbf16>
      %500 = sim.elementwise "add" %497, %499 : tensor<4x64x64xbf16>, tensor<4x64x64xbf16> -> tensor<4x64x64xbf16>
      %501 = sim.generic "aten.scalar_tensor"() {flop_count = 0.000000e+00 : f64, byte_count = 2.000000e+00 : f64} : () -> tensor<bf16>
      %502 = sim.elementwise "compare" %481 : tensor<4x64x64xbf16> -> tensor<4x64x64xi1>
      %503 = sim.elementwise "compare" %481 : tensor<4x64x64xbf16> -> tensor<4x64x64xi1>
      %504 = sim.elementwise "and" %502, %503 : tensor<4x64x64xi1>, tensor<4x64x64xi1> -> tensor<4x64x64xi1>
      %505 = sim.elementwise "where" %504, %495, %501 : tensor<4x64x64xi1>, tensor<4x64x64xbf16>, tensor<bf16> -> tensor<4x64x64xbf16>
      %506 = sim.generic "aten.scalar_tensor"() {flop_count = 0.000000e+00 : f64, byte_count = 2.000000e+00 : f64} : () -> tensor<bf16>
      %507 = sim.elementwise "compare" %480 : tensor<4x64x64xbf16> -> tensor<4x64x64xi1>
      %508 = sim.elementwise "where" %507, %500, %506 : tensor<4x64x64xi1>, tensor<4x64x64xbf16>, tensor<bf16> -> tensor<4x64x64xbf16>
      %509 = sim.generic "aten.slice_backward"(%505) {flop_count = 0.000000e+00 : f64, byte_count = 9.830400e+04 : f64} : (tensor<4x64x64xbf16>) -> tensor<4x64x128xbf16>
      %510 = sim.generic "aten.slice_backward"(%508) {flop_count = 0.000000e+00 : f64, byte_count = 9.830400e+04 : f64} : (tensor<4x64x64xbf16>) -> tensor<4x64x128xbf16>
      %511 = sim.elementwise "add" %509, %510 : tensor<4x64x128xbf16>, tensor<4x64x128xbf16> -> tensor<4x64x128xbf16>
      %512 = sim.reduce "sum" %511 [1] : tensor<4x64x128xbf16> -> tensor<4x1x128xbf16>
      %513 = sim.matmul %479, %511 {transpose_lhs} : (tensor<4x64x64xbf16>, tensor<4x64x128xbf16>) -> tensor<4x64x128xbf16>
      %514 = sim.matmul %511, %458 {transpose_rhs} : (tensor<4x64x128xbf16>, tensor<4x64x128xbf16>) -> tensor<4x64x64xbf16>
      %515 = sim.moe_combine %514, %477 : (tensor<4x64x64xbf16>, tensor<64x4xi64>) -> tensor<64x64xbf16>
      %516 = sim.generic "aten._softmax_backward_data"(%490, %478) {flop_count = 7.680000e+02 : f64, byte_count = 1.536000e+03 : f64} : (tensor<64x4xbf16>, tensor<64x4xbf16>) -> tensor<64x4xbf16>
      %517 = sim.generic "aten.new_zeros"() {flop_count = 0.000000e+00 : f64, byte_count = 5.120000e+02 : f64} : () -> tensor<64x4xbf16>
      %518 = sim.generic "aten.scatter"(%517, %477, %516) {flop_count = 0.000000e+00 : f64, byte_count = 3.584000e+03 : f64} : (tensor<64x4xbf16>, tensor<64x4xi64>, tensor<64x4xbf16>) -> tensor<64x4xbf16>
      %519 = sim.matmul %518, %456 : (tensor<64x4xbf16>, tensor<4x64xbf16>) -> tensor<64x64xbf16>
      %520 = sim.matmul %518, %476 {transpose_lhs} : (tensor<64x4xbf16>, tensor<64x64xbf16>) -> tensor<4x64xbf16>
      %521 = sim.reduce "sum" %518 [0] : tensor<64x4xbf16> -> tensor<1x4xbf16>
      %522 = sim.elementwise "add" %515, %519 : tensor<64x64xbf16>, tensor<64x64xbf16> -> tensor<64x64xbf16>
      %523 = sim.view %522 : tensor<64x64xbf16> -> tensor<1x64x64xbf16>
      %524 = sim.elementwise "cast" %523 : tensor<1x64x64xbf16> -> tensor<1x64x64xf32>
      %525 = sim.elementwise "mul" %524, %463 : tensor<1x64x64xf32>, tensor<64xbf16> -> tensor<1x64x64xf32>
      %526 = sim.elementwise "mul" %524, %475 : tensor<1x64x64xf32>, tensor<1x64x64xf32> -> tensor<1x64x64xf32>
      %527 = sim.reduce "sum" %526 [0, 1] : tensor<1x64x64xf32> -> tensor<1x1x64xf32>
      %528 = sim.view %527 : tensor<1x1x64xf32> -> tensor<64xf32>
      %529 = sim.elementwise "cast" %528 : tensor<64xf32> -> tensor<64xbf16>
      %530 = sim.elementwise "mul" %525, %473 : tensor<1x64x64xf32>, tensor<1x64x64xf32> -> tensor<1x64x64xf32>
      %531 = sim.elementwise "mul" %525, %474 : tensor<1x64x64xf32>, tensor<1x64x1xf32> -> tensor<1x64x64xf32>
      %532 = sim.reduce "sum" %530 [2] : tensor<1x64x64xf32> -> tensor<1x64x1xf32>
      %533 = sim.elementwise "pow" %474 : tensor<1x64x1xf32> -> tensor<1x64x1xf32>
      %534 = sim.elementwise "mul" %532 : tensor<1x64x1xf32> -> tensor<1x64x1xf32>
      %535 = sim.elementwise "mul" %534, %533 : tensor<1x64x1xf32>, tensor<1x64x1xf32> -> tensor<1x64x1xf32>
      %536 = sim.elementwise "div" %535 : tensor<1x64x1xf32> -> tensor<1x64x64xf32>
      %537 = sim.elementwise "pow" %473 : tensor<1x64x64xf32> -> tensor<1x64x64xf32>
      %538 = sim.elementwise "mul" %537 : tensor<1x64x64xf32> -> tensor<1x64x64xf32>
      %539 = sim.elementwise "mul" %536, %538 : tensor<1x64x64xf32>, tensor<1x64x64xf32> -> tensor<1x64x64xf32>
      %540 = sim.elementwise "add" %531, %539 : tensor<1x64x64xf32>, tensor<1x64x64xf32> -> tensor<1x64x64xf32>
      %541 = sim.elementwise "cast" %540 : tensor<1x64x64xf32> -> tensor<1x64x64xbf16>
      %542 = sim.elementwise "add" %446, %541 : tensor<1x64x64xbf16>, tensor<1x64x64xbf16> -> tensor<1x64x64xbf16>
      %543 = sim.matmul %542, %454 : (tensor<1x64x64xbf16>, tensor<64x64xbf16>) -> tensor<1x64x64xbf16>
      %544 = sim.view %542 : tensor<1x64x64xbf16> -> tensor<64x64xbf16>
      %545 = sim.matmul %544, %472 {transpose_lhs} : (tensor<64x64xbf16>, tensor<64x64xbf16>) -> tensor<64x64xbf16>
      %546 = sim.reduce "sum" %544 [0] : tensor<64x64xbf16> -> tensor<1x64xbf16>
      %547 = sim.view %543 : tensor<1x64x64xbf16> -> tensor<1x64x4x16xbf16>
      %548, %549, %550 = sim.attention_grad %468, %469, %470, %471, %547 {causal} : (tensor<1x64x4x16xbf16>, tensor<1x64x2x16xbf16>, tensor<1x64x2x16xbf16>, tensor<1x64x4x16xbf16>, tensor<1x64x4x16xbf16>) -> (tensor<1x64x4x16xbf16>, tensor<1x64x2x16xbf16>, tensor<1x64x2x16xbf16>)
      %551 = sim.generic "aten.slice"(%549) {flop_count = 0.000000e+00 : f64, byte_count = 0.000000e+00 : f64, view_dims = [[0 : i64], [2 : i64], [1 : i64], [3 : i64]]} : (tensor<1x64x2x16xbf16>) -> tensor<1x2x64x8xbf16>
      %552 = sim.view %99 : tensor<1x64x8xbf16> -> tensor<1x1x64x8xbf16>
      %553 = sim.elementwise "mul" %551, %552 : tensor<1x2x64x8xbf16>, tensor<1x1x64x8xbf16> -> tensor<1x2x64x8xbf16>
      %554 = sim.view %98 : tensor<1x64x8xbf16> -> tensor<1x1x64x8xbf16>
      %555 = sim.elementwise "mul" %551, %554 : tensor<1x2x64x8xbf16>, tensor<1x1x64x8xbf16> -> tensor<1x2x64x8xbf16>
      %556 = sim.generic "aten.slice"(%549) {flop_count = 0.000000e+00 : f64, byte_count = 0.000000e+00 : f64, view_dims = [[0 : i64], [2 : i64], [1 : i64], [3 : i64]]} : (tensor<1x64x2x16xbf16>) -> tensor<1x2x64x8xbf16>
      %557 = sim.elementwise "neg" %556 : tensor<1x2x64x8xbf16> -> tensor<1x2x64x8xbf16>
      %558 = sim.elementwise "mul" %557, %552 : tensor<1x2x64x8xbf16>, tensor<1x1x64x8xbf16> -> tensor<1x2x64x8xbf16>
      %559 = sim.elementwise "add" %555, %558 : tensor<1x2x64x8xbf16>, tensor<1x2x64x8xbf16> -> tensor<1x2x64x8xbf16>
      %560 = sim.elementwise "mul" %556, %554 : tensor<1x2x64x8xbf16>, tensor<1x1x64x8xbf16> -> tensor<1x2x64x8xbf16>
      %561 = sim.elementwise "add" %553, %560 : tensor<1x2x64x8xbf16>, tensor<1x2x64x8xbf16> -> tensor<1x2x64x8xbf16>
      %562 = sim.generic "aten.cat"(%561, %559) {flop_count = 0.000000e+00 : f64, byte_count = 8.192000e+03 : f64} : (tensor<1x2x64x8xbf16>, tensor<1x2x64x8xbf16>) -> tensor<1x2x64x16xbf16>
      %563 = sim.generic "aten.slice"(%548) {flop_count = 0.000000e+00 : f64, byte_count = 0.000000e+00 : f64, view_dims = [[0 : i64], [2 : i64], [1 : i64], [3 : i64]]} : (tensor<1x64x4x16xbf16>) -> tensor<1x4x64x8xbf16>
      %564 = sim.elementwise "mul" %563, %552 : tensor<1x4x64x8xbf16>, tensor<1x1x64x8xbf16> -> tensor<1x4x64x8xbf16>
      %565 = sim.elementwise "mul" %563, %554 : tensor<1x4x64x8xbf16>, tensor<1x1x64x8xbf16> -> tensor<1x4x64x8xbf16>
      %566 = sim.generic "aten.slice"(%548) {flop_count = 0.000000e+00 : f64, byte_count = 0.000000e+00 : f64, view_dims = [[0 : i64], [2 : i64], [1 : i64], [3 : i64]]} : (tensor<1x64x4x16xbf16>) -> tensor<1x4x64x8xbf16>
      %567 = sim.elementwise "neg" %566 : tensor<1x4x64x8xbf16> -> tensor<1x4x64x8xbf16>
      %568 = sim.elementwise "mul" %567, %552 : tensor<1x4x64x8xbf16>, tensor<1x1x64x8xbf16> -> tensor<1x4x64x8xbf16>
      %569 = sim.elementwise "add" %565, %568 : tensor<1x4x64x8xbf16>, tensor<1x4x64x8xbf16> -> tensor<1x4x64x8xbf16>
      %570 = sim.elementwise "mul" %566, %554 : tensor<1x4x64x8xbf16>, tensor<1x1x64x8xbf16> -> tensor<1x4x64x8xbf16>
      %571 = sim.elementwise "add" %564, %570 : tensor<1x4x64x8xbf16>, tensor<1x4x64x8xbf16> -> tensor<1x4x64x8xbf16>
      %572 = sim.generic "aten.cat"(%571, %569) {flop_count = 0.000000e+00 : f64, byte_count = 1.638400e+04 : f64} : (tensor<1x4x64x8xbf16>, tensor<1x4x64x8xbf16>) -> tensor<1x4x64x16xbf16>
      %573 = sim.view %550 {dims = [[0 : i64, 1 : i64], [2 : i64, 3 : i64]]} : tensor<1x64x2x16xbf16> -> tensor<64x32xbf16>
      %574 = sim.matmul %573, %452 : (tensor<64x32xbf16>, tensor<32x64xbf16>) -> tensor<64x64xbf16>
      %575 = sim.matmul %573, %467 {transpose_lhs} : (tensor<64x32xbf16>, tensor<64x64xbf16>) -> tensor<32x64xbf16>
      %576 = sim.reduce "sum" %573 [0] : tensor<64x32xbf16> -> tensor<1x32xbf16>
      %577 = sim.view %562 {dims = [[0 : i64, 2 : i64], [1 : i64, 3 : i64]]} : tensor<1x2x64x16xbf16> -> tensor<64x32xbf16>
      %578 = sim.matmul %577, %450 : (tensor<64x32xbf16>, tensor<32x64xbf16>) -> tensor<64x64xbf16>
      %579 = sim.matmul %577, %467 {transpose_lhs} : (tensor<64x32xbf16>, tensor<64x64xbf16>) -> tensor<32x64xbf16>
      %580 = sim.reduce "sum" %577 [0] : tensor<64x32xbf16> -> tensor<1x32xbf16>
      %581 = sim.view %574 : tensor<64x64xbf16> -> tensor<1x64x64xbf16>
      %582 = sim.view %578 : tensor<64x64xbf16> -> tensor<1x64x64xbf16>
      %583 = sim.elementwise "add" %581, %582 : tensor<1x64x64xbf16>, tensor<1x64x64xbf16> -> tensor<1x64x64xbf16>
      %584 = sim.view %572 {dims = [[0 : i64, 2 : i64], [1 : i64, 3 : i64]]} : tensor<1x4x64x16xbf16> -> tensor<64x64xbf16>
      %585 = sim.matmul %584, %448 : (tensor<64x64xbf16>, tensor<64x64xbf16>) -> tensor<64x64xbf16>
      %586 = sim.matmul %584, %467 {transpose_lhs} : (tensor<64x64xbf16>, tensor<64x64xbf16>) -> tensor<64x64xbf16>
      %587 = sim.reduce "sum" %584 [0] : tensor<64x64xbf16> -> tensor<1x64xbf16>
      %588 = sim.view %585 : tensor<64x64xbf16> -> tensor<1x64x64xbf16>
      %589 = sim.elementwise "add" %583, %588 : tensor<1x64x64xbf16>, tensor<1x64x64xbf16> -> tensor<1x64x64xbf16>
      %590 = sim.elementwise "cast" %589 : tensor<1x64x64xbf16> -> tensor<1x64x64xf32>
      %591 = sim.elementwise "mul" %590, %462 : tensor<1x64x64xf32>, tensor<64xbf16> -> tensor<1x64x64xf32>
      %592 = sim.elementwise "mul" %590, %466 : tensor<1x64x64xf32>, tensor<1x64x64xf32> -> tensor<1x64x64xf32>
      %593 = sim.reduce "sum" %592 [0, 1] : tensor<1x64x64xf32> -> tensor<1x1x64xf32>
      %594 = sim.view %593 : tensor<1x1x64xf32> -> tensor<64xf32>
      %595 = sim.elementwise "cast" %594 : tensor<64xf32> -> tensor<64xbf16>
      %596 = sim.elementwise "mul" %591, %464 : tensor<1x64x64xf32>, tensor<1x64x64xf32> -> tensor<1x64x64xf32>
      %597 = sim.elementwise "mul" %591, %465 : tensor<1x64x64xf32>, tensor<1x64x1xf32> -> tensor<1x64x64xf32>
      %598 = sim.reduce "sum" %596 [2] : tensor<1x64x64xf32> -> tensor<1x64x1xf32>
      %599 = sim.elementwise "pow" %465 : tensor<1x64x1xf32> -> tensor<1x64x1xf32>
      %600 = sim.elementwise "mul" %598 : tensor<1x64x1xf32> -> tensor<1x64x1xf32>
      %601 = sim.elementwise "mul" %600, %599 : tensor<1x64x1xf32>, tensor<1x64x1xf32> -> tensor<1x64x1xf32>
      %602 = sim.elementwise "div" %601 : tensor<1x64x1xf32> -> tensor<1x64x64xf32>
      %603 = sim.elementwise "pow" %464 : tensor<1x64x64xf32> -> tensor<1x64x64xf32>
      %604 = sim.elementwise "mul" %603 : tensor<1x64x64xf32> -> tensor<1x64x64xf32>
      %605 = sim.elementwise "mul" %602, %604 : tensor<1x64x64xf32>, tensor<1x64x64xf32> -> tensor<1x64x64xf32>
      %606 = sim.elementwise "add" %597, %605 : tensor<1x64x64xf32>, tensor<1x64x64xf32> -> tensor<1x64x64xf32>
      %607 = sim.elementwise "cast" %606 : tensor<1x64x64xf32> -> tensor<1x64x64xbf16>
      %608 = sim.elementwise "add" %542, %607 : tensor<1x64x64xbf16>, tensor<1x64x64xbf16> -> tensor<1x64x64xbf16>
      %609 = sim.view %587 : tensor<1x64xbf16> -> tensor<64xbf16>
      %610 = sim.view %580 : tensor<1x32xbf16> -> tensor<32xbf16>
      %611 = sim.view %576 : tensor<1x32xbf16> -> tensor<32xbf16>
      %612 = sim.view %546 : tensor<1x64xbf16> -> tensor<64xbf16>
      %613 = sim.view %521 : tensor<1x4xbf16> -> tensor<4xbf16>
      %614 = sim.view %512 : tensor<4x1x128xbf16> -> tensor<4x128xbf16>
      %615 = sim.view %491 : tensor<4x1x64xbf16> -> tensor<4x64xbf16>
      sim.yield %608, %586, %609, %579, %610, %575, %611, %545, %612, %520, %613, %513, %614, %492, %615, %595, %529 : tensor<1x64x64xbf16>, tensor<64x64xbf16>, tensor<64xbf16>, tensor<32x64xbf16>, tensor<32xbf16>, tensor<32x64xbf16>, tensor<32xbf16>, tensor<64x64xbf16>, tensor<64xbf16>, tensor<4x64xbf16>, tensor<4xbf16>, tensor<4x64x128xbf16>, tensor<4x128xbf16>, tensor<4x64x64xbf16>, tensor<4x64xbf16>, tensor<64xbf16>, tensor<64xbf16>
    }
    %616, %617, %618, %619, %620, %621, %622, %623, %624, %625, %626, %627, %628, %629, %630, %631, %632 = sim.repeat 1 iter(%429 : tensor<1x64x64xbf16>) slices(%8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67 : tensor<1x4xbf16>, tensor<1x64x64xbf16>, tensor<1x64xbf16>, tensor<1x32x64xbf16>, tensor<1x32xbf16>, tensor<1x32x64xbf16>, tensor<1x32xbf16>, tensor<1x64x64xbf16>, tensor<1x64xbf16>, tensor<1x4x64xbf16>, tensor<1x4xbf16>, tensor<1x4x64x128xbf16>, tensor<1x4x128xbf16>, tensor<1x4x64x64xbf16>, tensor<1x4x64xbf16>, tensor<1x64xbf16>, tensor<1x64xbf16>, tensor<1x1x64x64xf32>, tensor<1x1x64x1xf32>, tensor<1x1x64x64xf32>, tensor<1x64x64xbf16>, tensor<1x1x64x4x16xbf16>, tensor<1x1x64x2x16xbf16>, tensor<1x1x64x2x16xbf16>, tensor<1x1x64x4x16xbf16>, tensor<1x64x64xbf16>, tensor<1x1x64x64xf32>, tensor<1x1x64x1xf32>, tensor<1x1x64x64xf32>, tensor<1x64x64xbf16>, tensor<1x64x4xi64>, tensor<1x64x4xbf16>, tensor<1x4x64x64xbf16>, tensor<1x4x64x64xbf16>, tensor<1x4x64x64xbf16>, tensor<1x4x64x64xbf16>, tensor<1x4x64x64xbf16>, tensor<1x4x64x64xbf16>, tensor<1x4x64x64xbf16>, tensor<1x4x64x64xbf16>, tensor<1x4x64x64xbf16>) {reverse} -> (tensor<1x64x64xbf16>, tensor<1x64x64xbf16>, tensor<1x64xbf16>, tensor<1x32x64xbf16>, tensor<1x32xbf16>, tensor<1x32x64xbf16>, tensor<1x32xbf16>, tensor<1x64x64xbf16>, tensor<1x64xbf16>, tensor<1x4x64xbf16>, tensor<1x4xbf16>, tensor<1x4x64x128xbf16>, tensor<1x4x128xbf16>, tensor<1x4x64x64xbf16>, tensor<1x4x64xbf16>, tensor<1x64xbf16>, tensor<1x64xbf16>) {
    ^bb0(%633: tensor<1x64x64xbf16>, %634: tensor<4xbf16>, %635: tensor<64x64xbf16>, %636: tensor<64xbf16>, %637: tensor<32x64xbf16>, %638: tensor<32xbf16>, %639: tensor<32x64xbf16>, %640: tensor<32xbf16>, %641: tensor<64x64xbf16>, %642: tensor<64xbf16>, %643: tensor<4x64xbf16>, %644: tensor<4xbf16>, %645: tensor<4x64x128xbf16>, %646: tensor<4x128xbf16>, %647: tensor<4x64x64xbf16>, %648: tensor<4x64xbf16>, %649: tensor<64xbf16>, %650: tensor<64xbf16>, %651: tensor<1x64x64xf32>, %652: tensor<1x64x1xf32>, %653: tensor<1x64x64xf32>, %654: tensor<64x64xbf16>, %655: tensor<1x64x4x16xbf16>, %656: tensor<1x64x2x16xbf16>, %657: tensor<1x64x2x16xbf16>, %658: tensor<1x64x4x16xbf16>, %659: tensor<64x64xbf16>, %660: tensor<1x64x64xf32>, %661: tensor<1x64x1xf32>, %662: tensor<1x64x64xf32>, %663: tensor<64x64xbf16>, %664: tensor<64x4xi64>, %665: tensor<64x4xbf16>, %666: tensor<4x64x64xbf16>, %667: tensor<4x64x64xbf16>, %668: tensor<4x64x64xbf16>, %669: tensor<4x64x64xbf16>, %670: tensor<4x64x64xbf16>, %671: tensor<4x64x64xbf16>, %672: tensor<4x64x64xbf16>, %673: tensor<4x64x64xbf16>, %674: tensor<4x64x64xbf16>):
      %675 = sim.view %633 : tensor<1x64x64xbf16> -> tensor<64x64xbf16>
      %676 = sim.moe_dispatch %675, %664 : (tensor<64x64xbf16>, tensor<64x4xi64>) -> tensor<4x64x64xbf16>
      %677 = sim.generic "moe_combine_weight_grad"(%674, %675, %664) {flop_count = 3.276800e+04 : f64, byte_count = 4.352000e+04 : f64} : (tensor<4x64x64xbf16>, tensor<64x64xbf16>, tensor<64x4xi64>) -> tensor<64x4xbf16>
      %678 = sim.reduce "sum" %676 [1] : tensor<4x64x64xbf16> -> tensor<4x1x64xbf16>
      %679 = sim.matmul %673, %676 {transpose_lhs} : (tensor<4x64x64xbf16>, tensor<4x64x64xbf16>) -> tensor<4x64x64xbf16>
      %680 = sim.matmul %676, %647 {transpose_rhs} : (tensor<4x64x64xbf16>, tensor<4x64x64xbf16>) -> tensor<4x64x64xbf16>
      %681 = sim.elementwise "mul" %680, %672 : tensor<4x64x64xbf16>, tensor<4x64x64xbf16> -> tensor<4x64x64xbf16>
      %682 = sim.elementwise "mul" %680, %671 : tensor<4x64x64xbf16>, tensor<4x64x64xbf16> -> tensor<4x64x64xbf16>
      %683 = sim.elementwise "mul" %681, %669 : tensor<4x64x64xbf16>, tensor<4x64x64xbf16> -> tensor<4x64x64xbf16>
      %684 = sim.elementwise "mul" %681, %670 : tensor<4x64x64xbf16>, tensor<4x64x64xbf16> -> tensor<4x64x64xbf16>
      %685 = sim.elementwise "sigmoid_grad" %683, %670 : tensor<4x64x64xbf16>, tensor<4x64x64xbf16> -> tensor<4x64x64xbf16>
      %686 = sim.elementwise "mul" %685 : tensor<4x64x64xbf16> -> tensor<4x64x64xbf16>
      %687 = sim.elementwise "add" %684, %686 : tensor<4x64x64xbf16>, tensor<4x64x64xbf16> -> tensor<4x64x64xbf16>
      %688 = sim.generic "aten.scalar_tensor"() {flop_count = 0.000000e+00 : f64, byte_count = 2.000000e+00 : f64} : () -> tensor<bf16>
      %689 = sim.elementwise "compare" %668 : tensor<4x64x64xbf16> -> tensor<4x64x64xi1>
      %690 = sim.elementwise "compare" %668 : tensor<4x64x64xbf16> -> tensor<4x64x64xi1>
      %691 = sim.elementwise "and" %689, %690 : tensor<4x64x64xi1>, tensor<4x64x64xi1> -> tensor<4x64x64xi1>
      %692 = sim.elementwise "where" %691, %682, %688 : tensor<4x64x64xi1>, tensor<4x64x64xbf16>, tensor<bf16> -> tensor<4x64x64xbf16>
      %693 = sim.generic "aten.scalar_tensor"() {flop_count = 0.000000e+00 : f64, byte_count = 2.000000e+00 : f64} : () -> tensor<bf16>
      %694 = sim.elementwise "compare" %667 : tensor<4x64x64xbf16> -> tensor<4x64x64xi1>
      %695 = sim.elementwise "where" %694, %687, %693 : tensor<4x64x64xi1>, tensor<4x64x64xbf16>, tensor<bf16> -> tensor<4x64x64xbf16>
      %696 = sim.generic "aten.slice_backward"(%692) {flop_count = 0.000000e+00 : f64, byte_count = 9.830400e+04 : f64} : (tensor<4x64x64xbf16>) -> tensor<4x64x128xbf16>
      %697 = sim.generic "aten.slice_backward"(%695) {flop_count = 0.000000e+00 : f64, byte_count = 9.830400e+04 : f64} : (tensor<4x64x64xbf16>) -> tensor<4x64x128xbf16>
      %698 = sim.elementwise "add" %696, %697 : tensor<4x64x128xbf16>, tensor<4x64x128xbf16> -> tensor<4x64x128xbf16>
      %699 = sim.reduce "sum" %698 [1] : tensor<4x64x128xbf16> -> tensor<4x1x128xbf16>
      %700 = sim.matmul %666, %698 {transpose_lhs} : (tensor<4x64x64xbf16>, tensor<4x64x128xbf16>) -> tensor<4x64x128xbf16>
      %701 = sim.matmul %698, %645 {transpose_rhs} : (tensor<4x64x128xbf16>, tensor<4x64x128xbf16>) -> tensor<4x64x64xbf16>
      %702 = sim.moe_combine %701, %664 : (tensor<4x64x64xbf16>, tensor<64x4xi64>) -> tensor<64x64xbf16>
      %703 = sim.generic "aten._softmax_backward_data"(%677, %665) {flop_count = 7.680000e+02 : f64, byte_count = 1.536000e+03 : f64} : (tensor<64x4xbf16>, tensor<64x4xbf16>) -> tensor<64x4xbf16>
      %704 = sim.generic "aten.new_zeros"() {flop_count = 0.000000e+00 : f64, byte_count = 5.120000e+02 : f64} : () -> tensor<64x4xbf16>
      %705 = sim.generic "aten.scatter"(%704, %664, %703) {flop_count = 0.000000e+00 : f64, byte_count = 3.584000e+03 : f64} : (tensor<64x4xbf16>, tensor<64x4xi64>, tensor<64x4xbf16>) -> tensor<64x4xbf16>
      %706 = sim.matmul %705, %643 : (tensor<64x4xbf16>, tensor<4x64xbf16>) -> tensor<64x64xbf16>
      %707 = sim.matmul %705, %663 {transpose_lhs} : (tensor<64x4xbf16>, tensor<64x64xbf16>) -> tensor<4x64xbf16>
      %708 = sim.reduce "sum" %705 [0] : tensor<64x4xbf16> -> tensor<1x4xbf16>
      %709 = sim.elementwise "add" %702, %706 : tensor<64x64xbf16>, tensor<64x64xbf16> -> tensor<64x64xbf16>
      %710 = sim.view %709 : tensor<64x64xbf16> -> tensor<1x64x64xbf16>
      %711 = sim.elementwise "cast" %710 : tensor<1x64x64xbf16> -> tensor<1x64x64xf32>
      %712 = sim.elementwise "mul" %711, %650 : tensor<1x64x64xf32>, tensor<64xbf16> -> tensor<1x64x64xf32>
      %713 = sim.elementwise "mul" %711, %662 : tensor<1x64x64xf32>, tensor<1x64x64xf32> -> tensor<1x64x64xf32>
      %714 = sim.reduce "sum" %713 [0, 1] : tensor<1x64x64xf32> -> tensor<1x1x64xf32>
      %715 = sim.view %714 : tensor<1x1x64xf32> -> tensor<64xf32>
      %716 = sim.elementwise "cast" %715 : tensor<64xf32> -> tensor<64xbf16>
      %717 = sim.elementwise "mul" %712, %660 : tensor<1x64x64xf32>, tensor<1x64x64xf32> -> tensor<1x64x64xf32>
      %718 = sim.elementwise "mul" %712, %661 : tensor<1x64x64xf32>, tensor<1x64x1xf32> -> tensor<1x64x64xf32>
      %719 = sim.reduce "sum" %717 [2] : tensor<1x64x64xf32> -> tensor<1x64x1xf32>
      %720 = sim.elementwise "pow" %661 : tensor<1x64x1xf32> -> tensor<1x64x1xf32>
      %721 = sim.elementwise "mul" %719 : tensor<1x64x1xf32> -> tensor<1x64x1xf32>
      %722 = sim.elementwise "mul" %721, %720 : tensor<1x64x1xf32>, tensor<1x64x1xf32> -> tensor<1x64x1xf32>
      %723 = sim.elementwise "div" %722 : tensor<1x64x1xf32> -> tensor<1x64x64xf32>
      %724 = sim.elementwise "pow" %660 : tensor<1x64x64xf32> -> tensor<1x64x64xf32>
      %725 = sim.elementwise "mul" %724 : tensor<1x64x64xf32> -> tensor<1x64x64xf32>
      %726 = sim.elementwise "mul" %723, %725 : tensor<1x64x64xf32>, tensor<1x64x64xf32> -> tensor<1x64x64xf32>
      %727 = sim.elementwise "add" %718, %726 : tensor<1x64x64xf32>, tensor<1x64x64xf32> -> tensor<1x64x64xf32>
      %728 = sim.elementwise "cast" %727 : tensor<1x64x64xf32> -> tensor<1x64x64xbf16>
      %729 = sim.elementwise "add" %633, %728 : tensor<1x64x64xbf16>, tensor<1x64x64xbf16> -> tensor<1x64x64xbf16>
      %730 = sim.matmul %729, %641 : (tensor<1x64x64xbf16>, tensor<64x64xbf16>) -> tensor<1x64x64xbf16>
      %731 = sim.view %729 : tensor<1x64x64xbf16> -> tensor<64x64xbf16>
      %732 = sim.matmul %731, %659 {transpose_lhs} : (tensor<64x64xbf16>, tensor<64x64xbf16>) -> tensor<64x64xbf16>
      %733 = sim.reduce "sum" %731 [0] : tensor<64x64xbf16> -> tensor<1x64xbf16>
      %734 = sim.view %730 : tensor<1x64x64xbf16> -> tensor<1x64x4x16xbf16>
      %735, %736, %737 = sim.attention_grad %655, %656, %657, %658, %734 {causal, window = 128 : i64} : (tensor<1x64x4x16xbf16>, tensor<1x64x2x16xbf16>, tensor<1x64x2x16xbf16>, tensor<1x64x4x16xbf16>, tensor<1x64x4x16xbf16>) -> (tensor<1x64x4x16xbf16>, tensor<1x64x2x16xbf16>, tensor<1x64x2x16xbf16>)
      %738 = sim.generic "aten.slice"(%736) {flop_count = 0.000000e+00 : f64, byte_count = 0.000000e+00 : f64, view_dims = [[0 : i64], [2 : i64], [1 : i64], [3 : i64]]} : (tensor<1x64x2x16xbf16>) -> tensor<1x2x64x8xbf16>
      %739 = sim.view %99 : tensor<1x64x8xbf16> -> tensor<1x1x64x8xbf16>
      %740 = sim.elementwise "mul" %738, %739 : tensor<1x2x64x8xbf16>, tensor<1x1x64x8xbf16> -> tensor<1x2x64x8xbf16>
      %741 = sim.view %98 : tensor<1x64x8xbf16> -> tensor<1x1x64x8xbf16>
      %742 = sim.elementwise "mul" %738, %741 : tensor<1x2x64x8xbf16>, tensor<1x1x64x8xbf16> -> tensor<1x2x64x8xbf16>
      %743 = sim.generic "aten.slice"(%736) {flop_count = 0.000000e+00 : f64, byte_count = 0.000000e+00 : f64, view_dims = [[0 : i64], [2 : i64], [1 : i64], [3 : i64]]} : (tensor<1x64x2x16xbf16>) -> tensor<1x2x64x8xbf16>
      %744 = sim.elementwise "neg" %743 : tensor<1x2x64x8xbf16> -> tensor<1x2x64x8xbf16>
      %745 = sim.elementwise "mul" %744, %739 : tensor<1x2x64x8xbf16>, tensor<1x1x64x8xbf16> -> tensor<1x2x64x8xbf16>
      %746 = sim.elementwise "add" %742, %745 : tensor<1x2x64x8xbf16>, tensor<1x2x64x8xbf16> -> tensor<1x2x64x8xbf16>
      %747 = sim.elementwise "mul" %743, %741 : tensor<1x2x64x8xbf16>, tensor<1x1x64x8xbf16> -> tensor<1x2x64x8xbf16>
      %748 = sim.elementwise "add" %740, %747 : tensor<1x2x64x8xbf16>, tensor<1x2x64x8xbf16> -> tensor<1x2x64x8xbf16>
      %749 = sim.generic "aten.cat"(%748, %746) {flop_count = 0.000000e+00 : f64, byte_count = 8.192000e+03 : f64} : (tensor<1x2x64x8xbf16>, tensor<1x2x64x8xbf16>) -> tensor<1x2x64x16xbf16>
      %750 = sim.generic "aten.slice"(%735) {flop_count = 0.000000e+00 : f64, byte_count = 0.000000e+00 : f64, view_dims = [[0 : i64], [2 : i64], [1 : i64], [3 : i64]]} : (tensor<1x64x4x16xbf16>) -> tensor<1x4x64x8xbf16>
      %751 = sim.elementwise "mul" %750, %739 : tensor<1x4x64x8xbf16>, tensor<1x1x64x8xbf16> -> tensor<1x4x64x8xbf16>
      %752 = sim.elementwise "mul" %750, %741 : tensor<1x4x64x8xbf16>, tensor<1x1x64x8xbf16> -> tensor<1x4x64x8xbf16>
      %753 = sim.generic "aten.slice"(%735) {flop_count = 0.000000e+00 : f64, byte_count = 0.000000e+00 : f64, view_dims = [[0 : i64], [2 : i64], [1 : i64], [3 : i64]]} : (tensor<1x64x4x16xbf16>) -> tensor<1x4x64x8xbf16>
      %754 = sim.elementwise "neg" %753 : tensor<1x4x64x8xbf16> -> tensor<1x4x64x8xbf16>
      %755 = sim.elementwise "mul" %754, %739 : tensor<1x4x64x8xbf16>, tensor<1x1x64x8xbf16> -> tensor<1x4x64x8xbf16>
      %756 = sim.elementwise "add" %752, %755 : tensor<1x4x64x8xbf16>, tensor<1x4x64x8xbf16> -> tensor<1x4x64x8xbf16>
      %757 = sim.elementwise "mul" %753, %741 : tensor<1x4x64x8xbf16>, tensor<1x1x64x8xbf16> -> tensor<1x4x64x8xbf16>
      %758 = sim.elementwise "add" %751, %757 : tensor<1x4x64x8xbf16>, tensor<1x4x64x8xbf16> -> tensor<1x4x64x8xbf16>
      %759 = sim.generic "aten.cat"(%758, %756) {flop_count = 0.000000e+00 : f64, byte_count = 1.638400e+04 : f64} : (tensor<1x4x64x8xbf16>, tensor<1x4x64x8xbf16>) -> tensor<1x4x64x16xbf16>
      %760 = sim.view %737 {dims = [[0 : i64, 1 : i64], [2 : i64, 3 : i64]]} : tensor<1x64x2x16xbf16> -> tensor<64x32xbf16>
      %761 = sim.matmul %760, %639 : (tensor<64x32xbf16>, tensor<32x64xbf16>) -> tensor<64x64xbf16>
      %762 = sim.matmul %760, %654 {transpose_lhs} : (tensor<64x32xbf16>, tensor<64x64xbf16>) -> tensor<32x64xbf16>
      %763 = sim.reduce "sum" %760 [0] : tensor<64x32xbf16> -> tensor<1x32xbf16>
      %764 = sim.view %749 {dims = [[0 : i64, 2 : i64], [1 : i64, 3 : i64]]} : tensor<1x2x64x16xbf16> -> tensor<64x32xbf16>
      %765 = sim.matmul %764, %637 : (tensor<64x32xbf16>, tensor<32x64xbf16>) -> tensor<64x64xbf16>
      %766 = sim.matmul %764, %654 {transpose_lhs} : (tensor<64x32xbf16>, tensor<64x64xbf16>) -> tensor<32x64xbf16>
      %767 = sim.reduce "sum" %764 [0] : tensor<64x32xbf16> -> tensor<1x32xbf16>
      %768 = sim.view %761 : tensor<64x64xbf16> -> tensor<1x64x64xbf16>
      %769 = sim.view %765 : tensor<64x64xbf16> -> tensor<1x64x64xbf16>
      %770 = sim.elementwise "add" %768, %769 : tensor<1x64x64xbf16>, tensor<1x64x64xbf16> -> tensor<1x64x64xbf16>
      %771 = sim.view %759 {dims = [[0 : i64, 2 : i64], [1 : i64, 3 : i64]]} : tensor<1x4x64x16xbf16> -> tensor<64x64xbf16>
      %772 = sim.matmul %771, %635 : (tensor<64x64xbf16>, tensor<64x64xbf16>) -> tensor<64x64xbf16>
      %773 = sim.matmul %771, %654 {transpose_lhs} : (tensor<64x64xbf16>, tensor<64x64xbf16>) -> tensor<64x64xbf16>
      %774 = sim.reduce "sum" %771 [0] : tensor<64x64xbf16> -> tensor<1x64xbf16>
      %775 = sim.view %772 : tensor<64x64xbf16> -> tensor<1x64x64xbf16>
      %776 = sim.elementwise "add" %770, %775 : tensor<1x64x64xbf16>, tensor<1x64x64xbf16> -> tensor<1x64x64xbf16>
      %777 = sim.elementwise "cast" %776 : tensor<1x64x64xbf16> -> tensor<1x64x64xf32>
      %778 = sim.elementwise "mul" %777, %649 : tensor<1x64x64xf32>, tensor<64xbf16> -> tensor<1x64x64xf32>
      %779 = sim.elementwise "mul" %777, %653 : tensor<1x64x64xf32>, tensor<1x64x64xf32> -> tensor<1x64x64xf32>
      %780 = sim.reduce "sum" %779 [0, 1] : tensor<1x64x64xf32> -> tensor<1x1x64xf32>
      %781 = sim.view %780 : tensor<1x1x64xf32> -> tensor<64xf32>
      %782 = sim.elementwise "cast" %781 : tensor<64xf32> -> tensor<64xbf16>
      %783 = sim.elementwise "mul" %778, %651 : tensor<1x64x64xf32>, tensor<1x64x64xf32> -> tensor<1x64x64xf32>
      %784 = sim.elementwise "mul" %778, %652 : tensor<1x64x64xf32>, tensor<1x64x1xf32> -> tensor<1x64x64xf32>
      %785 = sim.reduce "sum" %783 [2] : tensor<1x64x64xf32> -> tensor<1x64x1xf32>
      %786 = sim.elementwise "pow" %652 : tensor<1x64x1xf32> -> tensor<1x64x1xf32>
      %787 = sim.elementwise "mul" %785 : tensor<1x64x1xf32> -> tensor<1x64x1xf32>
      %788 = sim.elementwise "mul" %787, %786 : tensor<1x64x1xf32>, tensor<1x64x1xf32> -> tensor<1x64x1xf32>
      %789 = sim.elementwise "div" %788 : tensor<1x64x1xf32> -> tensor<1x64x64xf32>
      %790 = sim.elementwise "pow" %651 : tensor<1x64x64xf32> -> tensor<1x64x64xf32>
      %791 = sim.elementwise "mul" %790 : tensor<1x64x64xf32> -> tensor<1x64x64xf32>
      %792 = sim.elementwise "mul" %789, %791 : tensor<1x64x64xf32>, tensor<1x64x64xf32> -> tensor<1x64x64xf32>
      %793 = sim.elementwise "add" %784, %792 : tensor<1x64x64xf32>, tensor<1x64x64xf32> -> tensor<1x64x64xf32>
      %794 = sim.elementwise "cast" %793 : tensor<1x64x64xf32> -> tensor<1x64x64xbf16>
      %795 = sim.elementwise "add" %729, %794 : tensor<1x64x64xbf16>, tensor<1x64x64xbf16> -> tensor<1x64x64xbf16>
      %796 = sim.view %774 : tensor<1x64xbf16> -> tensor<64xbf16>
      %797 = sim.view %767 : tensor<1x32xbf16> -> tensor<32xbf16>
      %798 = sim.view %763 : tensor<1x32xbf16> -> tensor<32xbf16>
      %799 = sim.view %733 : tensor<1x64xbf16> -> tensor<64xbf16>
      %800 = sim.view %708 : tensor<1x4xbf16> -> tensor<4xbf16>
      %801 = sim.view %699 : tensor<4x1x128xbf16> -> tensor<4x128xbf16>
      %802 = sim.view %678 : tensor<4x1x64xbf16> -> tensor<4x64xbf16>
      sim.yield %795, %773, %796, %766, %797, %762, %798, %732, %799, %707, %800, %700, %801, %679, %802, %782, %716 : tensor<1x64x64xbf16>, tensor<64x64xbf16>, tensor<64xbf16>, tensor<32x64xbf16>, tensor<32xbf16>, tensor<32x64xbf16>, tensor<32xbf16>, tensor<64x64xbf16>, tensor<64xbf16>, tensor<4x64xbf16>, tensor<4xbf16>, tensor<4x64x128xbf16>, tensor<4x128xbf16>, tensor<4x64x64xbf16>, tensor<4x64xbf16>, tensor<64xbf16>, tensor<64xbf16>
    }
    %803 = sim.generic "aten.embedding_dense_backward"(%616, %3) {flop_count = 0.000000e+00 : f64, byte_count = 2.508800e+04 : f64} : (tensor<1x64x64xbf16>, tensor<1x64xi64>) -> tensor<128x64xbf16>
    sim.yield %803, %416, %409, %617, %618, %619, %620, %621, %622, %623, %624, %625, %626, %627, %628, %629, %630, %631, %632, %430, %431, %432, %433, %434, %435, %436, %437, %438, %439, %440, %441, %442, %443, %444, %445 : tensor<128x64xbf16>, tensor<64xbf16>, tensor<128x64xbf16>, tensor<1x64x64xbf16>, tensor<1x64xbf16>, tensor<1x32x64xbf16>, tensor<1x32xbf16>, tensor<1x32x64xbf16>, tensor<1x32xbf16>, tensor<1x64x64xbf16>, tensor<1x64xbf16>, tensor<1x4x64xbf16>, tensor<1x4xbf16>, tensor<1x4x64x128xbf16>, tensor<1x4x128xbf16>, tensor<1x4x64x64xbf16>, tensor<1x4x64xbf16>, tensor<1x64xbf16>, tensor<1x64xbf16>, tensor<1x64x64xbf16>, tensor<1x64xbf16>, tensor<1x32x64xbf16>, tensor<1x32xbf16>, tensor<1x32x64xbf16>, tensor<1x32xbf16>, tensor<1x64x64xbf16>, tensor<1x64xbf16>, tensor<1x4x64xbf16>, tensor<1x4xbf16>, tensor<1x4x64x128xbf16>, tensor<1x4x128xbf16>, tensor<1x4x64x64xbf16>, tensor<1x4x64xbf16>, tensor<1x64xbf16>, tensor<1x64xbf16>
  }
  sim.phase "optimizer" {
    sim.optimizer_step "adamw"(%0, %5, %6, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41 : tensor<128x64xbf16>, tensor<64xbf16>, tensor<128x64xbf16>, tensor<1x64x64xbf16>, tensor<1x64xbf16>, tensor<1x32x64xbf16>, tensor<1x32xbf16>, tensor<1x32x64xbf16>, tensor<1x32xbf16>, tensor<1x64x64xbf16>, tensor<1x64xbf16>, tensor<1x4x64xbf16>, tensor<1x4xbf16>, tensor<1x4x64x128xbf16>, tensor<1x4x128xbf16>, tensor<1x4x64x64xbf16>, tensor<1x4x64xbf16>, tensor<1x64xbf16>, tensor<1x64xbf16>, tensor<1x64x64xbf16>, tensor<1x64xbf16>, tensor<1x32x64xbf16>, tensor<1x32xbf16>, tensor<1x32x64xbf16>, tensor<1x32xbf16>, tensor<1x64x64xbf16>, tensor<1x64xbf16>, tensor<1x4x64xbf16>, tensor<1x4xbf16>, tensor<1x4x64x128xbf16>, tensor<1x4x128xbf16>, tensor<1x4x64x64xbf16>, tensor<1x4x64xbf16>, tensor<1x64xbf16>, tensor<1x64xbf16>) grads(%368, %369, %370, %371, %372, %373, %374, %375, %376, %377, %378, %379, %380, %381, %382, %383, %384, %385, %386, %387, %388, %389, %390, %391, %392, %393, %394, %395, %396, %397, %398, %399, %400, %401, %402 : tensor<128x64xbf16>, tensor<64xbf16>, tensor<128x64xbf16>, tensor<1x64x64xbf16>, tensor<1x64xbf16>, tensor<1x32x64xbf16>, tensor<1x32xbf16>, tensor<1x32x64xbf16>, tensor<1x32xbf16>, tensor<1x64x64xbf16>, tensor<1x64xbf16>, tensor<1x4x64xbf16>, tensor<1x4xbf16>, tensor<1x4x64x128xbf16>, tensor<1x4x128xbf16>, tensor<1x4x64x64xbf16>, tensor<1x4x64xbf16>, tensor<1x64xbf16>, tensor<1x64xbf16>, tensor<1x64x64xbf16>, tensor<1x64xbf16>, tensor<1x32x64xbf16>, tensor<1x32xbf16>, tensor<1x32x64xbf16>, tensor<1x32xbf16>, tensor<1x64x64xbf16>, tensor<1x64xbf16>, tensor<1x4x64xbf16>, tensor<1x4xbf16>, tensor<1x4x64x128xbf16>, tensor<1x4x128xbf16>, tensor<1x4x64x64xbf16>, tensor<1x4x64xbf16>, tensor<1x64xbf16>, tensor<1x64xbf16>)
    sim.yield
  }
}
