// The torch frontend's import of a 2-layer Llama (hidden 64, 4 heads, 2 kv heads of 16,
// ffn 128, vocab 256; train, batch 1, seq_len 24): llama-3.1-8b's config with those
// fields replaced, through charon_ir.frontend.import_model.
builtin.module attributes {sim.model = "tiny-llama", sim.mode = "train", sim.seq_len = 24 : i64, sim.batch = 1 : i64, sim.dtype = "bf16", sim.frontend = "charon-frontend-1", sim.hf_param_count = 106816 : i64, sim.free_ops = {aten._unsafe_view = 10 : i64, aten.clone = 2 : i64, aten.detach = 10 : i64, aten.expand = 3 : i64, aten.slice = 8 : i64, aten.t = 40 : i64, aten.transpose = 12 : i64, aten.unsqueeze = 3 : i64, aten.view = 36 : i64}, sim.generic_ops = {aten._log_softmax = 1 : i64, aten._log_softmax_backward_data = 1 : i64, aten.cat = 3 : i64, aten.embedding_dense_backward = 1 : i64, aten.nll_loss_backward = 1 : i64, aten.nll_loss_forward = 1 : i64, aten.slice_backward = 4 : i64}} {
  %0 = sim.param "model.embed_tokens.weight" {role = #sim.role<embedding>} : tensor<256x64xbf16>
  %1 = sim.input "buffer:model.rotary_emb.inv_freq" : tensor<8xf32>
  %2 = sim.input "buffer:model.rotary_emb.original_inv_freq" : tensor<8xf32>
  %3 = sim.input "tokens" {tokens} : tensor<1x24xi64>
  %4 = sim.input "positions" : tensor<1x24xi64>
  %5 = sim.param "model.norm.weight" {role = #sim.role<norm>} : tensor<64xbf16>
  %6 = sim.param "lm_head.weight" {role = #sim.role<head>} : tensor<256x64xbf16>
  %7 = sim.input "labels" : tensor<1x24xi64>
  %8 = sim.param "model.layers[0:2].self_attn.q_proj.weight" {role = #sim.role<attention>, split = #sim.split<column>, stacked} : tensor<2x64x64xbf16>
  %9 = sim.param "model.layers[0:2].self_attn.k_proj.weight" {role = #sim.role<attention>, split = #sim.split<kv>, stacked} : tensor<2x32x64xbf16>
  %10 = sim.param "model.layers[0:2].self_attn.v_proj.weight" {role = #sim.role<attention>, split = #sim.split<kv>, stacked} : tensor<2x32x64xbf16>
  %11 = sim.param "model.layers[0:2].self_attn.o_proj.weight" {role = #sim.role<attention>, split = #sim.split<row>, stacked} : tensor<2x64x64xbf16>
  %12 = sim.param "model.layers[0:2].mlp.gate_proj.weight" {role = #sim.role<mlp>, split = #sim.split<column>, stacked} : tensor<2x128x64xbf16>
  %13 = sim.param "model.layers[0:2].mlp.up_proj.weight" {role = #sim.role<mlp>, split = #sim.split<column>, stacked} : tensor<2x128x64xbf16>
  %14 = sim.param "model.layers[0:2].mlp.down_proj.weight" {role = #sim.role<mlp>, split = #sim.split<row>, stacked} : tensor<2x64x128xbf16>
  %15 = sim.param "model.layers[0:2].input_layernorm.weight" {role = #sim.role<norm>, stacked} : tensor<2x64xbf16>
  %16 = sim.param "model.layers[0:2].post_attention_layernorm.weight" {role = #sim.role<norm>, stacked} : tensor<2x64xbf16>
  %17 = sim.input "grad_loss" : tensor<f32>
  %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50 = sim.phase "forward" -> tensor<f32>, tensor<2x1x24x64xf32>, tensor<2x1x24x1xf32>, tensor<2x1x24x1xf32>, tensor<2x1x24x64xbf16>, tensor<2x24x64xbf16>, tensor<2x24x64xbf16>, tensor<2x24x64xbf16>, tensor<2x1x24x4x16xbf16>, tensor<2x1x24x2x16xbf16>, tensor<2x1x24x2x16xbf16>, tensor<2x1x24x4x16xbf16>, tensor<2x24x64xbf16>, tensor<2x1x24x64xf32>, tensor<2x1x24x1xf32>, tensor<2x1x24x1xf32>, tensor<2x1x24x64xbf16>, tensor<2x24x64xbf16>, tensor<2x1x24x128xbf16>, tensor<2x1x24x128xbf16>, tensor<2x24x64xbf16>, tensor<2x1x24x128xbf16>, tensor<2x24x128xbf16>, tensor<1x24x64xf32>, tensor<1x24x1xf32>, tensor<1x24x1xf32>, tensor<1x24x64xbf16>, tensor<24x64xbf16>, tensor<24x256xf32>, tensor<24x256xf32>, tensor<f32>, tensor<1x24x16xbf16>, tensor<1x24x16xbf16> {
    %51 = sim.embedding %0, %3 : (tensor<256x64xbf16>, tensor<1x24xi64>) -> tensor<1x24x64xbf16>
    %52 = sim.view %4 : tensor<1x24xi64> -> tensor<1x24x1xi64>
    %53 = sim.elementwise "cast" %52 : tensor<1x24x1xi64> -> tensor<1x24x1xf32>
    %54 = sim.elementwise "mul" %53, %1 : tensor<1x24x1xf32>, tensor<8xf32> -> tensor<1x24x8xf32>
    %55 = sim.generic "aten.cat"(%54, %54) {flop_count = 0.000000e+00 : f64, byte_count = 3.072000e+03 : f64} : (tensor<1x24x8xf32>, tensor<1x24x8xf32>) -> tensor<1x24x16xf32>
    %56 = sim.elementwise "cos" %55 : tensor<1x24x16xf32> -> tensor<1x24x16xf32>
    %57 = sim.elementwise "mul" %56 : tensor<1x24x16xf32> -> tensor<1x24x16xf32>
    %58 = sim.elementwise "sin" %55 : tensor<1x24x16xf32> -> tensor<1x24x16xf32>
    %59 = sim.elementwise "mul" %58 : tensor<1x24x16xf32> -> tensor<1x24x16xf32>
    %60 = sim.elementwise "cast" %57 : tensor<1x24x16xf32> -> tensor<1x24x16xbf16>
    %61 = sim.elementwise "cast" %59 : tensor<1x24x16xf32> -> tensor<1x24x16xbf16>
    %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84 = sim.repeat 2 iter(%51 : tensor<1x24x64xbf16>) slices(%8, %9, %10, %11, %12, %13, %14, %15, %16 : tensor<2x64x64xbf16>, tensor<2x32x64xbf16>, tensor<2x32x64xbf16>, tensor<2x64x64xbf16>, tensor<2x128x64xbf16>, tensor<2x128x64xbf16>, tensor<2x64x128xbf16>, tensor<2x64xbf16>, tensor<2x64xbf16>) -> (tensor<1x24x64xbf16>, tensor<2x1x24x64xf32>, tensor<2x1x24x1xf32>, tensor<2x1x24x1xf32>, tensor<2x1x24x64xbf16>, tensor<2x24x64xbf16>, tensor<2x24x64xbf16>, tensor<2x24x64xbf16>, tensor<2x1x24x4x16xbf16>, tensor<2x1x24x2x16xbf16>, tensor<2x1x24x2x16xbf16>, tensor<2x1x24x4x16xbf16>, tensor<2x24x64xbf16>, tensor<2x1x24x64xf32>, tensor<2x1x24x1xf32>, tensor<2x1x24x1xf32>, tensor<2x1x24x64xbf16>, tensor<2x24x64xbf16>, tensor<2x1x24x128xbf16>, tensor<2x1x24x128xbf16>, tensor<2x24x64xbf16>, tensor<2x1x24x128xbf16>, tensor<2x24x128xbf16>) {
    ^bb0(%85: tensor<1x24x64xbf16>, %86: tensor<64x64xbf16>, %87: tensor<32x64xbf16>, %88: tensor<32x64xbf16>, %89: tensor<64x64xbf16>, %90: tensor<128x64xbf16>, %91: tensor<128x64xbf16>, %92: tensor<64x128xbf16>, %93: tensor<64xbf16>, %94: tensor<64xbf16>):
      %95 = sim.elementwise "cast" %85 : tensor<1x24x64xbf16> -> tensor<1x24x64xf32>
      %96 = sim.elementwise "pow" %95 : tensor<1x24x64xf32> -> tensor<1x24x64xf32>
      %97 = sim.reduce "mean" %96 [2] : tensor<1x24x64xf32> -> tensor<1x24x1xf32>
      %98 = sim.elementwise "add" %97 : tensor<1x24x1xf32> -> tensor<1x24x1xf32>
      %99 = sim.elementwise "rsqrt" %98 : tensor<1x24x1xf32> -> tensor<1x24x1xf32>
      %100 = sim.elementwise "mul" %95, %99 : tensor<1x24x64xf32>, tensor<1x24x1xf32> -> tensor<1x24x64xf32>
      %101 = sim.elementwise "cast" %100 : tensor<1x24x64xf32> -> tensor<1x24x64xbf16>
      %102 = sim.elementwise "mul" %93, %101 : tensor<64xbf16>, tensor<1x24x64xbf16> -> tensor<1x24x64xbf16>
      %103 = sim.matmul %102, %86 {transpose_rhs} : (tensor<1x24x64xbf16>, tensor<64x64xbf16>) -> tensor<1x24x64xbf16>
      %104 = sim.matmul %102, %87 {transpose_rhs} : (tensor<1x24x64xbf16>, tensor<32x64xbf16>) -> tensor<1x24x32xbf16>
      %105 = sim.matmul %102, %88 {transpose_rhs} : (tensor<1x24x64xbf16>, tensor<32x64xbf16>) -> tensor<1x24x32xbf16>
      %106 = sim.view %103 : tensor<1x24x64xbf16> -> tensor<1x4x24x16xbf16>
      %107 = sim.view %60 : tensor<1x24x16xbf16> -> tensor<1x1x24x16xbf16>
      %108 = sim.elementwise "mul" %106, %107 : tensor<1x4x24x16xbf16>, tensor<1x1x24x16xbf16> -> tensor<1x4x24x16xbf16>
      %109 = sim.generic "aten.slice"(%103) {flop_count = 0.000000e+00 : f64, byte_count = 0.000000e+00 : f64} : (tensor<1x24x64xbf16>) -> tensor<1x4x24x8xbf16>
      %110 = sim.elementwise "neg" %109 : tensor<1x4x24x8xbf16> -> tensor<1x4x24x8xbf16>
      %111 = sim.generic "aten.slice"(%103) {flop_count = 0.000000e+00 : f64, byte_count = 0.000000e+00 : f64} : (tensor<1x24x64xbf16>) -> tensor<1x4x24x8xbf16>
      %112 = sim.generic "aten.cat"(%110, %111) {flop_count = 0.000000e+00 : f64, byte_count = 6.144000e+03 : f64} : (tensor<1x4x24x8xbf16>, tensor<1x4x24x8xbf16>) -> tensor<1x4x24x16xbf16>
      %113 = sim.view %61 : tensor<1x24x16xbf16> -> tensor<1x1x24x16xbf16>
      %114 = sim.elementwise "mul" %112, %113 : tensor<1x4x24x16xbf16>, tensor<1x1x24x16xbf16> -> tensor<1x4x24x16xbf16>
      %115 = sim.elementwise "add" %108, %114 : tensor<1x4x24x16xbf16>, tensor<1x4x24x16xbf16> -> tensor<1x4x24x16xbf16>
      %116 = sim.view %104 : tensor<1x24x32xbf16> -> tensor<1x2x24x16xbf16>
      %117 = sim.elementwise "mul" %116, %107 : tensor<1x2x24x16xbf16>, tensor<1x1x24x16xbf16> -> tensor<1x2x24x16xbf16>
      %118 = sim.generic "aten.slice"(%104) {flop_count = 0.000000e+00 : f64, byte_count = 0.000000e+00 : f64} : (tensor<1x24x32xbf16>) -> tensor<1x2x24x8xbf16>
      %119 = sim.elementwise "neg" %118 : tensor<1x2x24x8xbf16> -> tensor<1x2x24x8xbf16>
      %120 = sim.generic "aten.slice"(%104) {flop_count = 0.000000e+00 : f64, byte_count = 0.000000e+00 : f64} : (tensor<1x24x32xbf16>) -> tensor<1x2x24x8xbf16>
      %121 = sim.generic "aten.cat"(%119, %120) {flop_count = 0.000000e+00 : f64, byte_count = 3.072000e+03 : f64} : (tensor<1x2x24x8xbf16>, tensor<1x2x24x8xbf16>) -> tensor<1x2x24x16xbf16>
      %122 = sim.elementwise "mul" %121, %113 : tensor<1x2x24x16xbf16>, tensor<1x1x24x16xbf16> -> tensor<1x2x24x16xbf16>
      %123 = sim.elementwise "add" %117, %122 : tensor<1x2x24x16xbf16>, tensor<1x2x24x16xbf16> -> tensor<1x2x24x16xbf16>
      %124 = sim.view %115 : tensor<1x4x24x16xbf16> -> tensor<1x24x4x16xbf16>
      %125 = sim.view %123 : tensor<1x2x24x16xbf16> -> tensor<1x24x2x16xbf16>
      %126 = sim.view %105 : tensor<1x24x32xbf16> -> tensor<1x24x2x16xbf16>
      %127 = sim.attention %124, %125, %126 {causal} : (tensor<1x24x4x16xbf16>, tensor<1x24x2x16xbf16>, tensor<1x24x2x16xbf16>) -> tensor<1x24x4x16xbf16>
      %128 = sim.view %127 : tensor<1x24x4x16xbf16> -> tensor<1x24x64xbf16>
      %129 = sim.matmul %128, %89 {transpose_rhs} : (tensor<1x24x64xbf16>, tensor<64x64xbf16>) -> tensor<1x24x64xbf16>
      %130 = sim.elementwise "add" %85, %129 : tensor<1x24x64xbf16>, tensor<1x24x64xbf16> -> tensor<1x24x64xbf16>
      %131 = sim.elementwise "cast" %130 : tensor<1x24x64xbf16> -> tensor<1x24x64xf32>
      %132 = sim.elementwise "pow" %131 : tensor<1x24x64xf32> -> tensor<1x24x64xf32>
      %133 = sim.reduce "mean" %132 [2] : tensor<1x24x64xf32> -> tensor<1x24x1xf32>
      %134 = sim.elementwise "add" %133 : tensor<1x24x1xf32> -> tensor<1x24x1xf32>
      %135 = sim.elementwise "rsqrt" %134 : tensor<1x24x1xf32> -> tensor<1x24x1xf32>
      %136 = sim.elementwise "mul" %131, %135 : tensor<1x24x64xf32>, tensor<1x24x1xf32> -> tensor<1x24x64xf32>
      %137 = sim.elementwise "cast" %136 : tensor<1x24x64xf32> -> tensor<1x24x64xbf16>
      %138 = sim.elementwise "mul" %94, %137 : tensor<64xbf16>, tensor<1x24x64xbf16> -> tensor<1x24x64xbf16>
      %139 = sim.matmul %138, %90 {transpose_rhs} : (tensor<1x24x64xbf16>, tensor<128x64xbf16>) -> tensor<1x24x128xbf16>
      %140 = sim.elementwise "silu" %139 : tensor<1x24x128xbf16> -> tensor<1x24x128xbf16>
      %141 = sim.matmul %138, %91 {transpose_rhs} : (tensor<1x24x64xbf16>, tensor<128x64xbf16>) -> tensor<1x24x128xbf16>
      %142 = sim.elementwise "mul" %140, %141 : tensor<1x24x128xbf16>, tensor<1x24x128xbf16> -> tensor<1x24x128xbf16>
      %143 = sim.matmul %142, %92 {transpose_rhs} : (tensor<1x24x128xbf16>, tensor<64x128xbf16>) -> tensor<1x24x64xbf16>
      %144 = sim.elementwise "add" %130, %143 : tensor<1x24x64xbf16>, tensor<1x24x64xbf16> -> tensor<1x24x64xbf16>
      %145 = sim.view %102 : tensor<1x24x64xbf16> -> tensor<24x64xbf16>
      %146 = sim.view %102 : tensor<1x24x64xbf16> -> tensor<24x64xbf16>
      %147 = sim.view %102 : tensor<1x24x64xbf16> -> tensor<24x64xbf16>
      %148 = sim.view %127 : tensor<1x24x4x16xbf16> -> tensor<24x64xbf16>
      %149 = sim.view %138 : tensor<1x24x64xbf16> -> tensor<24x64xbf16>
      %150 = sim.view %138 : tensor<1x24x64xbf16> -> tensor<24x64xbf16>
      %151 = sim.view %142 : tensor<1x24x128xbf16> -> tensor<24x128xbf16>
      sim.yield %144, %95, %99, %99, %101, %145, %146, %147, %124, %125, %126, %127, %148, %131, %135, %135, %137, %149, %139, %140, %150, %141, %151 : tensor<1x24x64xbf16>, tensor<1x24x64xf32>, tensor<1x24x1xf32>, tensor<1x24x1xf32>, tensor<1x24x64xbf16>, tensor<24x64xbf16>, tensor<24x64xbf16>, tensor<24x64xbf16>, tensor<1x24x4x16xbf16>, tensor<1x24x2x16xbf16>, tensor<1x24x2x16xbf16>, tensor<1x24x4x16xbf16>, tensor<24x64xbf16>, tensor<1x24x64xf32>, tensor<1x24x1xf32>, tensor<1x24x1xf32>, tensor<1x24x64xbf16>, tensor<24x64xbf16>, tensor<1x24x128xbf16>, tensor<1x24x128xbf16>, tensor<24x64xbf16>, tensor<1x24x128xbf16>, tensor<24x128xbf16>
    }
    %152 = sim.elementwise "cast" %62 : tensor<1x24x64xbf16> -> tensor<1x24x64xf32>
    %153 = sim.elementwise "pow" %152 : tensor<1x24x64xf32> -> tensor<1x24x64xf32>
    %154 = sim.reduce "mean" %153 [2] : tensor<1x24x64xf32> -> tensor<1x24x1xf32>
    %155 = sim.elementwise "add" %154 : tensor<1x24x1xf32> -> tensor<1x24x1xf32>
    %156 = sim.elementwise "rsqrt" %155 : tensor<1x24x1xf32> -> tensor<1x24x1xf32>
    %157 = sim.elementwise "mul" %152, %156 : tensor<1x24x64xf32>, tensor<1x24x1xf32> -> tensor<1x24x64xf32>
    %158 = sim.elementwise "cast" %157 : tensor<1x24x64xf32> -> tensor<1x24x64xbf16>
    %159 = sim.elementwise "mul" %5, %158 : tensor<64xbf16>, tensor<1x24x64xbf16> -> tensor<1x24x64xbf16>
    %160 = sim.matmul %159, %6 {transpose_rhs} : (tensor<1x24x64xbf16>, tensor<256x64xbf16>) -> tensor<1x24x256xbf16>
    %161 = sim.elementwise "cast" %160 : tensor<1x24x256xbf16> -> tensor<1x24x256xf32>
    %162 = sim.view %161 : tensor<1x24x256xf32> -> tensor<24x256xf32>
    %163 = sim.generic "aten._log_softmax"(%162) {flop_count = 3.072000e+04 : f64, byte_count = 4.915200e+04 : f64} : (tensor<24x256xf32>) -> tensor<24x256xf32>
    %164 = sim.view %7 : tensor<1x24xi64> -> tensor<24xi64>
    %165, %166 = sim.generic "aten.nll_loss_forward"(%163, %164) {flop_count = 2.000000e+00 : f64, byte_count = 2.477600e+04 : f64} : (tensor<24x256xf32>, tensor<24xi64>) -> (tensor<f32>, tensor<f32>)
    %167 = sim.view %159 : tensor<1x24x64xbf16> -> tensor<24x64xbf16>
    sim.yield %165, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %152, %156, %156, %158, %167, %163, %163, %166, %60, %61 : tensor<f32>, tensor<2x1x24x64xf32>, tensor<2x1x24x1xf32>, tensor<2x1x24x1xf32>, tensor<2x1x24x64xbf16>, tensor<2x24x64xbf16>, tensor<2x24x64xbf16>, tensor<2x24x64xbf16>, tensor<2x1x24x4x16xbf16>, tensor<2x1x24x2x16xbf16>, tensor<2x1x24x2x16xbf16>, tensor<2x1x24x4x16xbf16>, tensor<2x24x64xbf16>, tensor<2x1x24x64xf32>, tensor<2x1x24x1xf32>, tensor<2x1x24x1xf32>, tensor<2x1x24x64xbf16>, tensor<2x24x64xbf16>, tensor<2x1x24x128xbf16>, tensor<2x1x24x128xbf16>, tensor<2x24x64xbf16>, tensor<2x1x24x128xbf16>, tensor<2x24x128xbf16>, tensor<1x24x64xf32>, tensor<1x24x1xf32>, tensor<1x24x1xf32>, tensor<1x24x64xbf16>, tensor<24x64xbf16>, tensor<24x256xf32>, tensor<24x256xf32>, tensor<f32>, tensor<1x24x16xbf16>, tensor<1x24x16xbf16>
  }
  %168, %169, %170, %171, %172, %173, %174, %175, %176, %177, %178, %179 = sim.phase "backward" -> tensor<256x64xbf16>, tensor<64xbf16>, tensor<256x64xbf16>, tensor<2x64x64xbf16>, tensor<2x32x64xbf16>, tensor<2x32x64xbf16>, tensor<2x64x64xbf16>, tensor<2x128x64xbf16>, tensor<2x128x64xbf16>, tensor<2x64x128xbf16>, tensor<2x64xbf16>, tensor<2x64xbf16> {
    %180 = sim.view %7 : tensor<1x24xi64> -> tensor<24xi64>
    %181 = sim.generic "aten.nll_loss_backward"(%17, %46, %180, %48) {flop_count = 6.144000e+03 : f64, byte_count = 4.935200e+04 : f64} : (tensor<f32>, tensor<24x256xf32>, tensor<24xi64>, tensor<f32>) -> tensor<24x256xf32>
    %182 = sim.generic "aten._log_softmax_backward_data"(%181, %47) {flop_count = 1.843200e+04 : f64, byte_count = 7.372800e+04 : f64} : (tensor<24x256xf32>, tensor<24x256xf32>) -> tensor<24x256xf32>
    %183 = sim.view %182 : tensor<24x256xf32> -> tensor<1x24x256xf32>
    %184 = sim.elementwise "cast" %183 : tensor<1x24x256xf32> -> tensor<1x24x256xbf16>
    %185 = sim.view %184 : tensor<1x24x256xbf16> -> tensor<24x256xbf16>
    %186 = sim.matmul %185, %45 {transpose_lhs} : (tensor<24x256xbf16>, tensor<24x64xbf16>) -> tensor<256x64xbf16>
    %187 = sim.matmul %184, %6 : (tensor<1x24x256xbf16>, tensor<256x64xbf16>) -> tensor<1x24x64xbf16>
    %188 = sim.elementwise "mul" %187, %5 : tensor<1x24x64xbf16>, tensor<64xbf16> -> tensor<1x24x64xbf16>
    %189 = sim.elementwise "mul" %187, %44 : tensor<1x24x64xbf16>, tensor<1x24x64xbf16> -> tensor<1x24x64xbf16>
    %190 = sim.reduce "sum" %189 [0, 1] : tensor<1x24x64xbf16> -> tensor<1x1x64xbf16>
    %191 = sim.elementwise "cast" %188 : tensor<1x24x64xbf16> -> tensor<1x24x64xf32>
    %192 = sim.elementwise "mul" %191, %41 : tensor<1x24x64xf32>, tensor<1x24x64xf32> -> tensor<1x24x64xf32>
    %193 = sim.elementwise "mul" %191, %42 : tensor<1x24x64xf32>, tensor<1x24x1xf32> -> tensor<1x24x64xf32>
    %194 = sim.reduce "sum" %192 [2] : tensor<1x24x64xf32> -> tensor<1x24x1xf32>
    %195 = sim.elementwise "pow" %43 : tensor<1x24x1xf32> -> tensor<1x24x1xf32>
    %196 = sim.elementwise "mul" %194 : tensor<1x24x1xf32> -> tensor<1x24x1xf32>
    %197 = sim.elementwise "mul" %196, %195 : tensor<1x24x1xf32>, tensor<1x24x1xf32> -> tensor<1x24x1xf32>
    %198 = sim.elementwise "div" %197 : tensor<1x24x1xf32> -> tensor<1x24x64xf32>
    %199 = sim.elementwise "pow" %41 : tensor<1x24x64xf32> -> tensor<1x24x64xf32>
    %200 = sim.elementwise "mul" %199 : tensor<1x24x64xf32> -> tensor<1x24x64xf32>
    %201 = sim.elementwise "mul" %198, %200 : tensor<1x24x64xf32>, tensor<1x24x64xf32> -> tensor<1x24x64xf32>
    %202 = sim.elementwise "add" %193, %201 : tensor<1x24x64xf32>, tensor<1x24x64xf32> -> tensor<1x24x64xf32>
    %203 = sim.elementwise "cast" %202 : tensor<1x24x64xf32> -> tensor<1x24x64xbf16>
    %204 = sim.view %190 : tensor<1x1x64xbf16> -> tensor<64xbf16>
    %205, %206, %207, %208, %209, %210, %211, %212, %213, %214 = sim.repeat 2 iter(%203 : tensor<1x24x64xbf16>) slices(%8, %9, %10, %11, %12, %13, %14, %15, %16, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40 : tensor<2x64x64xbf16>, tensor<2x32x64xbf16>, tensor<2x32x64xbf16>, tensor<2x64x64xbf16>, tensor<2x128x64xbf16>, tensor<2x128x64xbf16>, tensor<2x64x128xbf16>, tensor<2x64xbf16>, tensor<2x64xbf16>, tensor<2x1x24x64xf32>, tensor<2x1x24x1xf32>, tensor<2x1x24x1xf32>, tensor<2x1x24x64xbf16>, tensor<2x24x64xbf16>, tensor<2x24x64xbf16>, tensor<2x24x64xbf16>, tensor<2x1x24x4x16xbf16>, tensor<2x1x24x2x16xbf16>, tensor<2x1x24x2x16xbf16>, tensor<2x1x24x4x16xbf16>, tensor<2x24x64xbf16>, tensor<2x1x24x64xf32>, tensor<2x1x24x1xf32>, tensor<2x1x24x1xf32>, tensor<2x1x24x64xbf16>, tensor<2x24x64xbf16>, tensor<2x1x24x128xbf16>, tensor<2x1x24x128xbf16>, tensor<2x24x64xbf16>, tensor<2x1x24x128xbf16>, tensor<2x24x128xbf16>) {reverse} -> (tensor<1x24x64xbf16>, tensor<2x64x64xbf16>, tensor<2x32x64xbf16>, tensor<2x32x64xbf16>, tensor<2x64x64xbf16>, tensor<2x128x64xbf16>, tensor<2x128x64xbf16>, tensor<2x64x128xbf16>, tensor<2x64xbf16>, tensor<2x64xbf16>) {
    ^bb0(%215: tensor<1x24x64xbf16>, %216: tensor<64x64xbf16>, %217: tensor<32x64xbf16>, %218: tensor<32x64xbf16>, %219: tensor<64x64xbf16>, %220: tensor<128x64xbf16>, %221: tensor<128x64xbf16>, %222: tensor<64x128xbf16>, %223: tensor<64xbf16>, %224: tensor<64xbf16>, %225: tensor<1x24x64xf32>, %226: tensor<1x24x1xf32>, %227: tensor<1x24x1xf32>, %228: tensor<1x24x64xbf16>, %229: tensor<24x64xbf16>, %230: tensor<24x64xbf16>, %231: tensor<24x64xbf16>, %232: tensor<1x24x4x16xbf16>, %233: tensor<1x24x2x16xbf16>, %234: tensor<1x24x2x16xbf16>, %235: tensor<1x24x4x16xbf16>, %236: tensor<24x64xbf16>, %237: tensor<1x24x64xf32>, %238: tensor<1x24x1xf32>, %239: tensor<1x24x1xf32>, %240: tensor<1x24x64xbf16>, %241: tensor<24x64xbf16>, %242: tensor<1x24x128xbf16>, %243: tensor<1x24x128xbf16>, %244: tensor<24x64xbf16>, %245: tensor<1x24x128xbf16>, %246: tensor<24x128xbf16>):
      %247 = sim.view %215 : tensor<1x24x64xbf16> -> tensor<24x64xbf16>
      %248 = sim.matmul %247, %246 {transpose_lhs} : (tensor<24x64xbf16>, tensor<24x128xbf16>) -> tensor<64x128xbf16>
      %249 = sim.matmul %215, %222 : (tensor<1x24x64xbf16>, tensor<64x128xbf16>) -> tensor<1x24x128xbf16>
      %250 = sim.elementwise "mul" %249, %243 : tensor<1x24x128xbf16>, tensor<1x24x128xbf16> -> tensor<1x24x128xbf16>
      %251 = sim.elementwise "mul" %249, %245 : tensor<1x24x128xbf16>, tensor<1x24x128xbf16> -> tensor<1x24x128xbf16>
      %252 = sim.view %250 : tensor<1x24x128xbf16> -> tensor<24x128xbf16>
      %253 = sim.matmul %252, %244 {transpose_lhs} : (tensor<24x128xbf16>, tensor<24x64xbf16>) -> tensor<128x64xbf16>
      %254 = sim.matmul %250, %221 : (tensor<1x24x128xbf16>, tensor<128x64xbf16>) -> tensor<1x24x64xbf16>
      %255 = sim.elementwise "silu_grad" %251, %242 : tensor<1x24x128xbf16>, tensor<1x24x128xbf16> -> tensor<1x24x128xbf16>
      %256 = sim.view %255 : tensor<1x24x128xbf16> -> tensor<24x128xbf16>
      %257 = sim.matmul %256, %241 {transpose_lhs} : (tensor<24x128xbf16>, tensor<24x64xbf16>) -> tensor<128x64xbf16>
      %258 = sim.matmul %255, %220 : (tensor<1x24x128xbf16>, tensor<128x64xbf16>) -> tensor<1x24x64xbf16>
      %259 = sim.elementwise "add" %254, %258 : tensor<1x24x64xbf16>, tensor<1x24x64xbf16> -> tensor<1x24x64xbf16>
      %260 = sim.elementwise "mul" %259, %224 : tensor<1x24x64xbf16>, tensor<64xbf16> -> tensor<1x24x64xbf16>
      %261 = sim.elementwise "mul" %259, %240 : tensor<1x24x64xbf16>, tensor<1x24x64xbf16> -> tensor<1x24x64xbf16>
      %262 = sim.reduce "sum" %261 [0, 1] : tensor<1x24x64xbf16> -> tensor<1x1x64xbf16>
      %263 = sim.elementwise "cast" %260 : tensor<1x24x64xbf16> -> tensor<1x24x64xf32>
      %264 = sim.elementwise "mul" %263, %237 : tensor<1x24x64xf32>, tensor<1x24x64xf32> -> tensor<1x24x64xf32>
      %265 = sim.elementwise "mul" %263, %238 : tensor<1x24x64xf32>, tensor<1x24x1xf32> -> tensor<1x24x64xf32>
      %266 = sim.reduce "sum" %264 [2] : tensor<1x24x64xf32> -> tensor<1x24x1xf32>
      %267 = sim.elementwise "pow" %239 : tensor<1x24x1xf32> -> tensor<1x24x1xf32>
      %268 = sim.elementwise "mul" %266 : tensor<1x24x1xf32> -> tensor<1x24x1xf32>
      %269 = sim.elementwise "mul" %268, %267 : tensor<1x24x1xf32>, tensor<1x24x1xf32> -> tensor<1x24x1xf32>
      %270 = sim.elementwise "div" %269 : tensor<1x24x1xf32> -> tensor<1x24x64xf32>
      %271 = sim.elementwise "pow" %237 : tensor<1x24x64xf32> -> tensor<1x24x64xf32>
      %272 = sim.elementwise "mul" %271 : tensor<1x24x64xf32> -> tensor<1x24x64xf32>
      %273 = sim.elementwise "mul" %270, %272 : tensor<1x24x64xf32>, tensor<1x24x64xf32> -> tensor<1x24x64xf32>
      %274 = sim.elementwise "add" %265, %273 : tensor<1x24x64xf32>, tensor<1x24x64xf32> -> tensor<1x24x64xf32>
      %275 = sim.elementwise "cast" %274 : tensor<1x24x64xf32> -> tensor<1x24x64xbf16>
      %276 = sim.elementwise "add" %215, %275 : tensor<1x24x64xbf16>, tensor<1x24x64xbf16> -> tensor<1x24x64xbf16>
      %277 = sim.view %276 : tensor<1x24x64xbf16> -> tensor<24x64xbf16>
      %278 = sim.matmul %277, %236 {transpose_lhs} : (tensor<24x64xbf16>, tensor<24x64xbf16>) -> tensor<64x64xbf16>
      %279 = sim.matmul %276, %219 : (tensor<1x24x64xbf16>, tensor<64x64xbf16>) -> tensor<1x24x64xbf16>
      %280 = sim.view %279 : tensor<1x24x64xbf16> -> tensor<1x24x4x16xbf16>
      %281, %282, %283 = sim.attention_grad %232, %233, %234, %235, %280 {causal} : (tensor<1x24x4x16xbf16>, tensor<1x24x2x16xbf16>, tensor<1x24x2x16xbf16>, tensor<1x24x4x16xbf16>, tensor<1x24x4x16xbf16>) -> (tensor<1x24x4x16xbf16>, tensor<1x24x2x16xbf16>, tensor<1x24x2x16xbf16>)
      %284 = sim.view %282 : tensor<1x24x2x16xbf16> -> tensor<1x2x24x16xbf16>
      %285 = sim.view %50 : tensor<1x24x16xbf16> -> tensor<1x1x24x16xbf16>
      %286 = sim.elementwise "mul" %284, %285 : tensor<1x2x24x16xbf16>, tensor<1x1x24x16xbf16> -> tensor<1x2x24x16xbf16>
      %287 = sim.generic "aten.slice"(%286) {flop_count = 0.000000e+00 : f64, byte_count = 0.000000e+00 : f64} : (tensor<1x2x24x16xbf16>) -> tensor<1x2x24x8xbf16>
      %288 = sim.elementwise "neg" %287 : tensor<1x2x24x8xbf16> -> tensor<1x2x24x8xbf16>
      %289 = sim.generic "aten.slice_backward"(%288) {flop_count = 0.000000e+00 : f64, byte_count = 2.304000e+03 : f64} : (tensor<1x2x24x8xbf16>) -> tensor<1x2x24x16xbf16>
      %290 = sim.generic "aten.slice"(%286) {flop_count = 0.000000e+00 : f64, byte_count = 0.000000e+00 : f64} : (tensor<1x2x24x16xbf16>) -> tensor<1x2x24x8xbf16>
      %291 = sim.generic "aten.slice_backward"(%290) {flop_count = 0.000000e+00 : f64, byte_count = 2.304000e+03 : f64} : (tensor<1x2x24x8xbf16>) -> tensor<1x2x24x16xbf16>
      %292 = sim.elementwise "add" %289, %291 : tensor<1x2x24x16xbf16>, tensor<1x2x24x16xbf16> -> tensor<1x2x24x16xbf16>
      %293 = sim.view %49 : tensor<1x24x16xbf16> -> tensor<1x1x24x16xbf16>
      %294 = sim.elementwise "mul" %284, %293 : tensor<1x2x24x16xbf16>, tensor<1x1x24x16xbf16> -> tensor<1x2x24x16xbf16>
      %295 = sim.elementwise "add" %292, %294 : tensor<1x2x24x16xbf16>, tensor<1x2x24x16xbf16> -> tensor<1x2x24x16xbf16>
      %296 = sim.view %281 : tensor<1x24x4x16xbf16> -> tensor<1x4x24x16xbf16>
      %297 = sim.elementwise "mul" %296, %285 : tensor<1x4x24x16xbf16>, tensor<1x1x24x16xbf16> -> tensor<1x4x24x16xbf16>
      %298 = sim.generic "aten.slice"(%297) {flop_count = 0.000000e+00 : f64, byte_count = 0.000000e+00 : f64} : (tensor<1x4x24x16xbf16>) -> tensor<1x4x24x8xbf16>
      %299 = sim.elementwise "neg" %298 : tensor<1x4x24x8xbf16> -> tensor<1x4x24x8xbf16>
      %300 = sim.generic "aten.slice_backward"(%299) {flop_count = 0.000000e+00 : f64, byte_count = 4.608000e+03 : f64} : (tensor<1x4x24x8xbf16>) -> tensor<1x4x24x16xbf16>
      %301 = sim.generic "aten.slice"(%297) {flop_count = 0.000000e+00 : f64, byte_count = 0.000000e+00 : f64} : (tensor<1x4x24x16xbf16>) -> tensor<1x4x24x8xbf16>
      %302 = sim.generic "aten.slice_backward"(%301) {flop_count = 0.000000e+00 : f64, byte_count = 4.608000e+03 : f64} : (tensor<1x4x24x8xbf16>) -> tensor<1x4x24x16xbf16>
      %303 = sim.elementwise "add" %300, %302 : tensor<1x4x24x16xbf16>, tensor<1x4x24x16xbf16> -> tensor<1x4x24x16xbf16>
      %304 = sim.elementwise "mul" %296, %293 : tensor<1x4x24x16xbf16>, tensor<1x1x24x16xbf16> -> tensor<1x4x24x16xbf16>
      %305 = sim.elementwise "add" %303, %304 : tensor<1x4x24x16xbf16>, tensor<1x4x24x16xbf16> -> tensor<1x4x24x16xbf16>
      %306 = sim.view %283 : tensor<1x24x2x16xbf16> -> tensor<24x32xbf16>
      %307 = sim.matmul %306, %231 {transpose_lhs} : (tensor<24x32xbf16>, tensor<24x64xbf16>) -> tensor<32x64xbf16>
      %308 = sim.matmul %306, %218 : (tensor<24x32xbf16>, tensor<32x64xbf16>) -> tensor<24x64xbf16>
      %309 = sim.view %295 : tensor<1x2x24x16xbf16> -> tensor<24x32xbf16>
      %310 = sim.matmul %309, %230 {transpose_lhs} : (tensor<24x32xbf16>, tensor<24x64xbf16>) -> tensor<32x64xbf16>
      %311 = sim.matmul %309, %217 : (tensor<24x32xbf16>, tensor<32x64xbf16>) -> tensor<24x64xbf16>
      %312 = sim.view %308 : tensor<24x64xbf16> -> tensor<1x24x64xbf16>
      %313 = sim.view %311 : tensor<24x64xbf16> -> tensor<1x24x64xbf16>
      %314 = sim.elementwise "add" %312, %313 : tensor<1x24x64xbf16>, tensor<1x24x64xbf16> -> tensor<1x24x64xbf16>
      %315 = sim.view %305 : tensor<1x4x24x16xbf16> -> tensor<24x64xbf16>
      %316 = sim.matmul %315, %229 {transpose_lhs} : (tensor<24x64xbf16>, tensor<24x64xbf16>) -> tensor<64x64xbf16>
      %317 = sim.matmul %315, %216 : (tensor<24x64xbf16>, tensor<64x64xbf16>) -> tensor<24x64xbf16>
      %318 = sim.view %317 : tensor<24x64xbf16> -> tensor<1x24x64xbf16>
      %319 = sim.elementwise "add" %314, %318 : tensor<1x24x64xbf16>, tensor<1x24x64xbf16> -> tensor<1x24x64xbf16>
      %320 = sim.elementwise "mul" %319, %223 : tensor<1x24x64xbf16>, tensor<64xbf16> -> tensor<1x24x64xbf16>
      %321 = sim.elementwise "mul" %319, %228 : tensor<1x24x64xbf16>, tensor<1x24x64xbf16> -> tensor<1x24x64xbf16>
      %322 = sim.reduce "sum" %321 [0, 1] : tensor<1x24x64xbf16> -> tensor<1x1x64xbf16>
      %323 = sim.elementwise "cast" %320 : tensor<1x24x64xbf16> -> tensor<1x24x64xf32>
      %324 = sim.elementwise "mul" %323, %225 : tensor<1x24x64xf32>, tensor<1x24x64xf32> -> tensor<1x24x64xf32>
      %325 = sim.elementwise "mul" %323, %226 : tensor<1x24x64xf32>, tensor<1x24x1xf32> -> tensor<1x24x64xf32>
      %326 = sim.reduce "sum" %324 [2] : tensor<1x24x64xf32> -> tensor<1x24x1xf32>
      %327 = sim.elementwise "pow" %227 : tensor<1x24x1xf32> -> tensor<1x24x1xf32>
      %328 = sim.elementwise "mul" %326 : tensor<1x24x1xf32> -> tensor<1x24x1xf32>
      %329 = sim.elementwise "mul" %328, %327 : tensor<1x24x1xf32>, tensor<1x24x1xf32> -> tensor<1x24x1xf32>
      %330 = sim.elementwise "div" %329 : tensor<1x24x1xf32> -> tensor<1x24x64xf32>
      %331 = sim.elementwise "pow" %225 : tensor<1x24x64xf32> -> tensor<1x24x64xf32>
      %332 = sim.elementwise "mul" %331 : tensor<1x24x64xf32> -> tensor<1x24x64xf32>
      %333 = sim.elementwise "mul" %330, %332 : tensor<1x24x64xf32>, tensor<1x24x64xf32> -> tensor<1x24x64xf32>
      %334 = sim.elementwise "add" %325, %333 : tensor<1x24x64xf32>, tensor<1x24x64xf32> -> tensor<1x24x64xf32>
      %335 = sim.elementwise "cast" %334 : tensor<1x24x64xf32> -> tensor<1x24x64xbf16>
      %336 = sim.elementwise "add" %276, %335 : tensor<1x24x64xbf16>, tensor<1x24x64xbf16> -> tensor<1x24x64xbf16>
      %337 = sim.view %322 : tensor<1x1x64xbf16> -> tensor<64xbf16>
      %338 = sim.view %262 : tensor<1x1x64xbf16> -> tensor<64xbf16>
      sim.yield %336, %316, %310, %307, %278, %257, %253, %248, %337, %338 : tensor<1x24x64xbf16>, tensor<64x64xbf16>, tensor<32x64xbf16>, tensor<32x64xbf16>, tensor<64x64xbf16>, tensor<128x64xbf16>, tensor<128x64xbf16>, tensor<64x128xbf16>, tensor<64xbf16>, tensor<64xbf16>
    }
    %339 = sim.generic "aten.embedding_dense_backward"(%205, %3) {flop_count = 0.000000e+00 : f64, byte_count = 3.603200e+04 : f64} : (tensor<1x24x64xbf16>, tensor<1x24xi64>) -> tensor<256x64xbf16>
    sim.yield %339, %204, %186, %206, %207, %208, %209, %210, %211, %212, %213, %214 : tensor<256x64xbf16>, tensor<64xbf16>, tensor<256x64xbf16>, tensor<2x64x64xbf16>, tensor<2x32x64xbf16>, tensor<2x32x64xbf16>, tensor<2x64x64xbf16>, tensor<2x128x64xbf16>, tensor<2x128x64xbf16>, tensor<2x64x128xbf16>, tensor<2x64xbf16>, tensor<2x64xbf16>
  }
  sim.phase "optimizer" {
    sim.optimizer_step "adamw"(%0, %5, %6, %8, %9, %10, %11, %12, %13, %14, %15, %16 : tensor<256x64xbf16>, tensor<64xbf16>, tensor<256x64xbf16>, tensor<2x64x64xbf16>, tensor<2x32x64xbf16>, tensor<2x32x64xbf16>, tensor<2x64x64xbf16>, tensor<2x128x64xbf16>, tensor<2x128x64xbf16>, tensor<2x64x128xbf16>, tensor<2x64xbf16>, tensor<2x64xbf16>) grads(%168, %169, %170, %171, %172, %173, %174, %175, %176, %177, %178, %179 : tensor<256x64xbf16>, tensor<64xbf16>, tensor<256x64xbf16>, tensor<2x64x64xbf16>, tensor<2x32x64xbf16>, tensor<2x32x64xbf16>, tensor<2x64x64xbf16>, tensor<2x128x64xbf16>, tensor<2x128x64xbf16>, tensor<2x64x128xbf16>, tensor<2x64xbf16>, tensor<2x64xbf16>)
    sim.yield
  }
}
