// The torch frontend's import of llama-3.1-70b (train, batch 1, seq_len 32): every layer's
// weights stacked in one sim.repeat. Regenerate with
//   charon_ir.frontend.import_model("llama-3.1-70b", seq_len=32, batch=1, mode="train")
builtin.module attributes {sim.model = "llama-3.1-70b", sim.mode = "train", sim.seq_len = 32 : i64, sim.batch = 1 : i64, sim.dtype = "bf16", sim.frontend = "charon-frontend-1", sim.hf_param_count = 70553706496 : i64, sim.free_ops = {aten._unsafe_view = 10 : i64, aten.clone = 2 : i64, aten.detach = 10 : i64, aten.expand = 3 : i64, aten.slice = 8 : i64, aten.t = 40 : i64, aten.transpose = 12 : i64, aten.unsqueeze = 3 : i64, aten.view = 36 : i64}, sim.generic_ops = {aten._log_softmax = 1 : i64, aten._log_softmax_backward_data = 1 : i64, aten.cat = 3 : i64, aten.embedding_dense_backward = 1 : i64, aten.nll_loss_backward = 1 : i64, aten.nll_loss_forward = 1 : i64, aten.slice_backward = 4 : i64}} {
  %0 = sim.param "model.embed_tokens.weight" {role = #sim.role<embedding>} : tensor<128256x8192xbf16>
  %1 = sim.input "buffer:model.rotary_emb.inv_freq" : tensor<64xf32>
  %2 = sim.input "buffer:model.rotary_emb.original_inv_freq" : tensor<64xf32>
  %3 = sim.input "tokens" {tokens} : tensor<1x32xi64>
  %4 = sim.input "positions" : tensor<1x32xi64>
  %5 = sim.param "model.norm.weight" {role = #sim.role<norm>} : tensor<8192xbf16>
  %6 = sim.param "lm_head.weight" {role = #sim.role<head>} : tensor<128256x8192xbf16>
  %7 = sim.input "labels" : tensor<1x32xi64>
  %8 = sim.param "model.layers[0:80].self_attn.q_proj.weight" {role = #sim.role<attention>, split = #sim.split<column>, stacked} : tensor<80x8192x8192xbf16>
  %9 = sim.param "model.layers[0:80].self_attn.k_proj.weight" {role = #sim.role<attention>, split = #sim.split<kv>, stacked} : tensor<80x1024x8192xbf16>
  %10 = sim.param "model.layers[0:80].self_attn.v_proj.weight" {role = #sim.role<attention>, split = #sim.split<kv>, stacked} : tensor<80x1024x8192xbf16>
  %11 = sim.param "model.layers[0:80].self_attn.o_proj.weight" {role = #sim.role<attention>, split = #sim.split<row>, stacked} : tensor<80x8192x8192xbf16>
  %12 = sim.param "model.layers[0:80].mlp.gate_proj.weight" {role = #sim.role<mlp>, split = #sim.split<column>, stacked} : tensor<80x28672x8192xbf16>
  %13 = sim.param "model.layers[0:80].mlp.up_proj.weight" {role = #sim.role<mlp>, split = #sim.split<column>, stacked} : tensor<80x28672x8192xbf16>
  %14 = sim.param "model.layers[0:80].mlp.down_proj.weight" {role = #sim.role<mlp>, split = #sim.split<row>, stacked} : tensor<80x8192x28672xbf16>
  %15 = sim.param "model.layers[0:80].input_layernorm.weight" {role = #sim.role<norm>, stacked} : tensor<80x8192xbf16>
  %16 = sim.param "model.layers[0:80].post_attention_layernorm.weight" {role = #sim.role<norm>, stacked} : tensor<80x8192xbf16>
  %17 = sim.input "grad_loss" : tensor<f32>
  %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52 = sim.phase "forward" -> tensor<f32>, tensor<1x32xi64>, tensor<80x1x32x8192xf32>, tensor<80x1x32x1xf32>, tensor<80x1x32x1xf32>, tensor<80x1x32x8192xbf16>, tensor<80x32x8192xbf16>, tensor<80x32x8192xbf16>, tensor<80x32x8192xbf16>, tensor<80x1x32x64x128xbf16>, tensor<80x1x32x8x128xbf16>, tensor<80x1x32x8x128xbf16>, tensor<80x1x32x64x128xbf16>, tensor<80x32x8192xbf16>, tensor<80x1x32x8192xf32>, tensor<80x1x32x1xf32>, tensor<80x1x32x1xf32>, tensor<80x1x32x8192xbf16>, tensor<80x32x8192xbf16>, tensor<80x1x32x28672xbf16>, tensor<80x1x32x28672xbf16>, tensor<80x32x8192xbf16>, tensor<80x1x32x28672xbf16>, tensor<80x32x28672xbf16>, tensor<1x32x8192xf32>, tensor<1x32x1xf32>, tensor<1x32x1xf32>, tensor<1x32x8192xbf16>, tensor<32x8192xbf16>, tensor<32xi64>, tensor<32x128256xf32>, tensor<32x128256xf32>, tensor<f32>, tensor<1x32x128xbf16>, tensor<1x32x128xbf16> {
    %53 = sim.embedding %0, %3 : (tensor<128256x8192xbf16>, tensor<1x32xi64>) -> tensor<1x32x8192xbf16>
    %54 = sim.view %4 : tensor<1x32xi64> -> tensor<1x32x1xi64>
    %55 = sim.elementwise "cast" %54 : tensor<1x32x1xi64> -> tensor<1x32x1xf32>
    %56 = sim.elementwise "mul" %55, %1 : tensor<1x32x1xf32>, tensor<64xf32> -> tensor<1x32x64xf32>
    %57 = sim.generic "aten.cat"(%56, %56) {flop_count = 0.000000e+00 : f64, byte_count = 3.276800e+04 : f64} : (tensor<1x32x64xf32>, tensor<1x32x64xf32>) -> tensor<1x32x128xf32>
    %58 = sim.elementwise "cos" %57 : tensor<1x32x128xf32> -> tensor<1x32x128xf32>
    %59 = sim.elementwise "mul" %58 : tensor<1x32x128xf32> -> tensor<1x32x128xf32>
    %60 = sim.elementwise "sin" %57 : tensor<1x32x128xf32> -> tensor<1x32x128xf32>
    %61 = sim.elementwise "mul" %60 : tensor<1x32x128xf32> -> tensor<1x32x128xf32>
    %62 = sim.elementwise "cast" %59 : tensor<1x32x128xf32> -> tensor<1x32x128xbf16>
    %63 = sim.elementwise "cast" %61 : tensor<1x32x128xf32> -> tensor<1x32x128xbf16>
    %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86 = sim.repeat 80 iter(%53 : tensor<1x32x8192xbf16>) slices(%8, %9, %10, %11, %12, %13, %14, %15, %16 : tensor<80x8192x8192xbf16>, tensor<80x1024x8192xbf16>, tensor<80x1024x8192xbf16>, tensor<80x8192x8192xbf16>, tensor<80x28672x8192xbf16>, tensor<80x28672x8192xbf16>, tensor<80x8192x28672xbf16>, tensor<80x8192xbf16>, tensor<80x8192xbf16>) -> (tensor<1x32x8192xbf16>, tensor<80x1x32x8192xf32>, tensor<80x1x32x1xf32>, tensor<80x1x32x1xf32>, tensor<80x1x32x8192xbf16>, tensor<80x32x8192xbf16>, tensor<80x32x8192xbf16>, tensor<80x32x8192xbf16>, tensor<80x1x32x64x128xbf16>, tensor<80x1x32x8x128xbf16>, tensor<80x1x32x8x128xbf16>, tensor<80x1x32x64x128xbf16>, tensor<80x32x8192xbf16>, tensor<80x1x32x8192xf32>, tensor<80x1x32x1xf32>, tensor<80x1x32x1xf32>, tensor<80x1x32x8192xbf16>, tensor<80x32x8192xbf16>, tensor<80x1x32x28672xbf16>, tensor<80x1x32x28672xbf16>, tensor<80x32x8192xbf16>, tensor<80x1x32x28672xbf16>, tensor<80x32x28672xbf16>) {
    ^bb0(%87: tensor<1x32x8192xbf16>, %88: tensor<8192x8192xbf16>, %89: tensor<1024x8192xbf16>, %90: tensor<1024x8192xbf16>, %91: tensor<8192x8192xbf16>, %92: tensor<28672x8192xbf16>, %93: tensor<28672x8192xbf16>, %94: tensor<8192x28672xbf16>, %95: tensor<8192xbf16>, %96: tensor<8192xbf16>):
      %97 = sim.elementwise "cast" %87 : tensor<1x32x8192xbf16> -> tensor<1x32x8192xf32>
      %98 = sim.elementwise "pow" %97 : tensor<1x32x8192xf32> -> tensor<1x32x8192xf32>
      %99 = sim.reduce "mean" %98 [2] : tensor<1x32x8192xf32> -> tensor<1x32x1xf32>
      %100 = sim.elementwise "add" %99 : tensor<1x32x1xf32> -> tensor<1x32x1xf32>
      %101 = sim.elementwise "rsqrt" %100 : tensor<1x32x1xf32> -> tensor<1x32x1xf32>
      %102 = sim.elementwise "mul" %97, %101 : tensor<1x32x8192xf32>, tensor<1x32x1xf32> -> tensor<1x32x8192xf32>
      %103 = sim.elementwise "cast" %102 : tensor<1x32x8192xf32> -> tensor<1x32x8192xbf16>
      %104 = sim.elementwise "mul" %95, %103 : tensor<8192xbf16>, tensor<1x32x8192xbf16> -> tensor<1x32x8192xbf16>
      %105 = sim.matmul %104, %88 {transpose_rhs} : (tensor<1x32x8192xbf16>, tensor<8192x8192xbf16>) -> tensor<1x32x8192xbf16>
      %106 = sim.matmul %104, %89 {transpose_rhs} : (tensor<1x32x8192xbf16>, tensor<1024x8192xbf16>) -> tensor<1x32x1024xbf16>
      %107 = sim.matmul %104, %90 {transpose_rhs} : (tensor<1x32x8192xbf16>, tensor<1024x8192xbf16>) -> tensor<1x32x1024xbf16>
      %108 = sim.view %105 : tensor<1x32x8192xbf16> -> tensor<1x64x32x128xbf16>
      %109 = sim.view %62 : tensor<1x32x128xbf16> -> tensor<1x1x32x128xbf16>
      %110 = sim.elementwise "mul" %108, %109 : tensor<1x64x32x128xbf16>, tensor<1x1x32x128xbf16> -> tensor<1x64x32x128xbf16>
      %111 = sim.generic "aten.slice"(%105) {flop_count = 0.000000e+00 : f64, byte_count = 0.000000e+00 : f64} : (tensor<1x32x8192xbf16>) -> tensor<1x64x32x64xbf16>
      %112 = sim.elementwise "neg" %111 : tensor<1x64x32x64xbf16> -> tensor<1x64x32x64xbf16>
      %113 = sim.generic "aten.slice"(%105) {flop_count = 0.000000e+00 : f64, byte_count = 0.000000e+00 : f64} : (tensor<1x32x8192xbf16>) -> tensor<1x64x32x64xbf16>
      %114 = sim.generic "aten.cat"(%112, %113) {flop_count = 0.000000e+00 : f64, byte_count = 0x4130000000000000 : f64} : (tensor<1x64x32x64xbf16>, tensor<1x64x32x64xbf16>) -> tensor<1x64x32x128xbf16>
      %115 = sim.view %63 : tensor<1x32x128xbf16> -> tensor<1x1x32x128xbf16>
      %116 = sim.elementwise "mul" %114, %115 : tensor<1x64x32x128xbf16>, tensor<1x1x32x128xbf16> -> tensor<1x64x32x128xbf16>
      %117 = sim.elementwise "add" %110, %116 : tensor<1x64x32x128xbf16>, tensor<1x64x32x128xbf16> -> tensor<1x64x32x128xbf16>
      %118 = sim.view %106 : tensor<1x32x1024xbf16> -> tensor<1x8x32x128xbf16>
      %119 = sim.elementwise "mul" %118, %109 : tensor<1x8x32x128xbf16>, tensor<1x1x32x128xbf16> -> tensor<1x8x32x128xbf16>
      %120 = sim.generic "aten.slice"(%106) {flop_count = 0.000000e+00 : f64, byte_count = 0.000000e+00 : f64} : (tensor<1x32x1024xbf16>) -> tensor<1x8x32x64xbf16>
      %121 = sim.elementwise "neg" %120 : tensor<1x8x32x64xbf16> -> tensor<1x8x32x64xbf16>
      %122 = sim.generic "aten.slice"(%106) {flop_count = 0.000000e+00 : f64, byte_count = 0.000000e+00 : f64} : (tensor<1x32x1024xbf16>) -> tensor<1x8x32x64xbf16>
      %123 = sim.generic "aten.cat"(%121, %122) {flop_count = 0.000000e+00 : f64, byte_count = 1.310720e+05 : f64} : (tensor<1x8x32x64xbf16>, tensor<1x8x32x64xbf16>) -> tensor<1x8x32x128xbf16>
      %124 = sim.elementwise "mul" %123, %115 : tensor<1x8x32x128xbf16>, tensor<1x1x32x128xbf16> -> tensor<1x8x32x128xbf16>
      %125 = sim.elementwise "add" %119, %124 : tensor<1x8x32x128xbf16>, tensor<1x8x32x128xbf16> -> tensor<1x8x32x128xbf16>
      %126 = sim.view %117 : tensor<1x64x32x128xbf16> -> tensor<1x32x64x128xbf16>
      %127 = sim.view %125 : tensor<1x8x32x128xbf16> -> tensor<1x32x8x128xbf16>
      %128 = sim.view %107 : tensor<1x32x1024xbf16> -> tensor<1x32x8x128xbf16>
      %129 = sim.attention %126, %127, %128 {causal} : (tensor<1x32x64x128xbf16>, tensor<1x32x8x128xbf16>, tensor<1x32x8x128xbf16>) -> tensor<1x32x64x128xbf16>
      %130 = sim.view %129 : tensor<1x32x64x128xbf16> -> tensor<1x32x8192xbf16>
      %131 = sim.matmul %130, %91 {transpose_rhs} : (tensor<1x32x8192xbf16>, tensor<8192x8192xbf16>) -> tensor<1x32x8192xbf16>
      %132 = sim.elementwise "add" %87, %131 : tensor<1x32x8192xbf16>, tensor<1x32x8192xbf16> -> tensor<1x32x8192xbf16>
      %133 = sim.elementwise "cast" %132 : tensor<1x32x8192xbf16> -> tensor<1x32x8192xf32>
      %134 = sim.elementwise "pow" %133 : tensor<1x32x8192xf32> -> tensor<1x32x8192xf32>
      %135 = sim.reduce "mean" %134 [2] : tensor<1x32x8192xf32> -> tensor<1x32x1xf32>
      %136 = sim.elementwise "add" %135 : tensor<1x32x1xf32> -> tensor<1x32x1xf32>
      %137 = sim.elementwise "rsqrt" %136 : tensor<1x32x1xf32> -> tensor<1x32x1xf32>
      %138 = sim.elementwise "mul" %133, %137 : tensor<1x32x8192xf32>, tensor<1x32x1xf32> -> tensor<1x32x8192xf32>
      %139 = sim.elementwise "cast" %138 : tensor<1x32x8192xf32> -> tensor<1x32x8192xbf16>
      %140 = sim.elementwise "mul" %96, %139 : tensor<8192xbf16>, tensor<1x32x8192xbf16> -> tensor<1x32x8192xbf16>
      %141 = sim.matmul %140, %92 {transpose_rhs} : (tensor<1x32x8192xbf16>, tensor<28672x8192xbf16>) -> tensor<1x32x28672xbf16>
      %142 = sim.elementwise "silu" %141 : tensor<1x32x28672xbf16> -> tensor<1x32x28672xbf16>
      %143 = sim.matmul %140, %93 {transpose_rhs} : (tensor<1x32x8192xbf16>, tensor<28672x8192xbf16>) -> tensor<1x32x28672xbf16>
      %144 = sim.elementwise "mul" %142, %143 : tensor<1x32x28672xbf16>, tensor<1x32x28672xbf16> -> tensor<1x32x28672xbf16>
      %145 = sim.matmul %144, %94 {transpose_rhs} : (tensor<1x32x28672xbf16>, tensor<8192x28672xbf16>) -> tensor<1x32x8192xbf16>
      %146 = sim.elementwise "add" %132, %145 : tensor<1x32x8192xbf16>, tensor<1x32x8192xbf16> -> tensor<1x32x8192xbf16>
      %147 = sim.view %104 : tensor<1x32x8192xbf16> -> tensor<32x8192xbf16>
      %148 = sim.view %104 : tensor<1x32x8192xbf16> -> tensor<32x8192xbf16>
      %149 = sim.view %104 : tensor<1x32x8192xbf16> -> tensor<32x8192xbf16>
      %150 = sim.view %129 : tensor<1x32x64x128xbf16> -> tensor<32x8192xbf16>
      %151 = sim.view %140 : tensor<1x32x8192xbf16> -> tensor<32x8192xbf16>
      %152 = sim.view %140 : tensor<1x32x8192xbf16> -> tensor<32x8192xbf16>
      %153 = sim.view %144 : tensor<1x32x28672xbf16> -> tensor<32x28672xbf16>
      sim.yield %146, %97, %101, %101, %103, %147, %148, %149, %126, %127, %128, %129, %150, %133, %137, %137, %139, %151, %141, %142, %152, %143, %153 : tensor<1x32x8192xbf16>, tensor<1x32x8192xf32>, tensor<1x32x1xf32>, tensor<1x32x1xf32>, tensor<1x32x8192xbf16>, tensor<32x8192xbf16>, tensor<32x8192xbf16>, tensor<32x8192xbf16>, tensor<1x32x64x128xbf16>, tensor<1x32x8x128xbf16>, tensor<1x32x8x128xbf16>, tensor<1x32x64x128xbf16>, tensor<32x8192xbf16>, tensor<1x32x8192xf32>, tensor<1x32x1xf32>, tensor<1x32x1xf32>, tensor<1x32x8192xbf16>, tensor<32x8192xbf16>, tensor<1x32x28672xbf16>, tensor<1x32x28672xbf16>, tensor<32x8192xbf16>, tensor<1x32x28672xbf16>, tensor<32x28672xbf16>
    }
    %154 = sim.elementwise "cast" %64 : tensor<1x32x8192xbf16> -> tensor<1x32x8192xf32>
    %155 = sim.elementwise "pow" %154 : tensor<1x32x8192xf32> -> tensor<1x32x8192xf32>
    %156 = sim.reduce "mean" %155 [2] : tensor<1x32x8192xf32> -> tensor<1x32x1xf32>
    %157 = sim.elementwise "add" %156 : tensor<1x32x1xf32> -> tensor<1x32x1xf32>
    %158 = sim.elementwise "rsqrt" %157 : tensor<1x32x1xf32> -> tensor<1x32x1xf32>
    %159 = sim.elementwise "mul" %154, %158 : tensor<1x32x8192xf32>, tensor<1x32x1xf32> -> tensor<1x32x8192xf32>
    %160 = sim.elementwise "cast" %159 : tensor<1x32x8192xf32> -> tensor<1x32x8192xbf16>
    %161 = sim.elementwise "mul" %5, %160 : tensor<8192xbf16>, tensor<1x32x8192xbf16> -> tensor<1x32x8192xbf16>
    %162 = sim.matmul %161, %6 {transpose_rhs} : (tensor<1x32x8192xbf16>, tensor<128256x8192xbf16>) -> tensor<1x32x128256xbf16>
    %163 = sim.elementwise "cast" %162 : tensor<1x32x128256xbf16> -> tensor<1x32x128256xf32>
    %164 = sim.view %163 : tensor<1x32x128256xf32> -> tensor<32x128256xf32>
    %165 = sim.generic "aten._log_softmax"(%164) {flop_count = 0x414F500000000000 : f64, byte_count = 0x417F500000000000 : f64} : (tensor<32x128256xf32>) -> tensor<32x128256xf32>
    %166 = sim.view %7 : tensor<1x32xi64> -> tensor<32xi64>
    %167, %168 = sim.generic "aten.nll_loss_forward"(%165, %166) {flop_count = 2.000000e+00 : f64, byte_count = 0x416F502100000000 : f64} : (tensor<32x128256xf32>, tensor<32xi64>) -> (tensor<f32>, tensor<f32>)
    %169 = sim.view %161 : tensor<1x32x8192xbf16> -> tensor<32x8192xbf16>
    sim.yield %167, %3, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %154, %158, %158, %160, %169, %166, %165, %165, %168, %62, %63 : tensor<f32>, tensor<1x32xi64>, tensor<80x1x32x8192xf32>, tensor<80x1x32x1xf32>, tensor<80x1x32x1xf32>, tensor<80x1x32x8192xbf16>, tensor<80x32x8192xbf16>, tensor<80x32x8192xbf16>, tensor<80x32x8192xbf16>, tensor<80x1x32x64x128xbf16>, tensor<80x1x32x8x128xbf16>, tensor<80x1x32x8x128xbf16>, tensor<80x1x32x64x128xbf16>, tensor<80x32x8192xbf16>, tensor<80x1x32x8192xf32>, tensor<80x1x32x1xf32>, tensor<80x1x32x1xf32>, tensor<80x1x32x8192xbf16>, tensor<80x32x8192xbf16>, tensor<80x1x32x28672xbf16>, tensor<80x1x32x28672xbf16>, tensor<80x32x8192xbf16>, tensor<80x1x32x28672xbf16>, tensor<80x32x28672xbf16>, tensor<1x32x8192xf32>, tensor<1x32x1xf32>, tensor<1x32x1xf32>, tensor<1x32x8192xbf16>, tensor<32x8192xbf16>, tensor<32xi64>, tensor<32x128256xf32>, tensor<32x128256xf32>, tensor<f32>, tensor<1x32x128xbf16>, tensor<1x32x128xbf16>
  }
  %170, %171, %172, %173, %174, %175, %176, %177, %178, %179, %180, %181 = sim.phase "backward" -> tensor<128256x8192xbf16>, tensor<8192xbf16>, tensor<128256x8192xbf16>, tensor<80x8192x8192xbf16>, tensor<80x1024x8192xbf16>, tensor<80x1024x8192xbf16>, tensor<80x8192x8192xbf16>, tensor<80x28672x8192xbf16>, tensor<80x28672x8192xbf16>, tensor<80x8192x28672xbf16>, tensor<80x8192xbf16>, tensor<80x8192xbf16> {
    %182 = sim.generic "aten.nll_loss_backward"(%17, %48, %47, %50) {flop_count = 0x414F500000000000 : f64, byte_count = 3.283380e+07 : f64} : (tensor<f32>, tensor<32x128256xf32>, tensor<32xi64>, tensor<f32>) -> tensor<32x128256xf32>
    %183 = sim.generic "aten._log_softmax_backward_data"(%182, %49) {flop_count = 0x414F500000000000 : f64, byte_count = 0x41877C0000000000 : f64} : (tensor<32x128256xf32>, tensor<32x128256xf32>) -> tensor<32x128256xf32>
    %184 = sim.view %183 : tensor<32x128256xf32> -> tensor<1x32x128256xf32>
    %185 = sim.elementwise "cast" %184 : tensor<1x32x128256xf32> -> tensor<1x32x128256xbf16>
    %186 = sim.view %185 : tensor<1x32x128256xbf16> -> tensor<32x128256xbf16>
    %187 = sim.matmul %186, %46 {transpose_lhs} : (tensor<32x128256xbf16>, tensor<32x8192xbf16>) -> tensor<128256x8192xbf16>
    %188 = sim.matmul %185, %6 : (tensor<1x32x128256xbf16>, tensor<128256x8192xbf16>) -> tensor<1x32x8192xbf16>
    %189 = sim.elementwise "mul" %188, %5 : tensor<1x32x8192xbf16>, tensor<8192xbf16> -> tensor<1x32x8192xbf16>
    %190 = sim.elementwise "mul" %188, %45 : tensor<1x32x8192xbf16>, tensor<1x32x8192xbf16> -> tensor<1x32x8192xbf16>
    %191 = sim.reduce "sum" %190 [0, 1] : tensor<1x32x8192xbf16> -> tensor<1x1x8192xbf16>
    %192 = sim.elementwise "cast" %189 : tensor<1x32x8192xbf16> -> tensor<1x32x8192xf32>
    %193 = sim.elementwise "mul" %192, %42 : tensor<1x32x8192xf32>, tensor<1x32x8192xf32> -> tensor<1x32x8192xf32>
    %194 = sim.elementwise "mul" %192, %43 : tensor<1x32x8192xf32>, tensor<1x32x1xf32> -> tensor<1x32x8192xf32>
    %195 = sim.reduce "sum" %193 [2] : tensor<1x32x8192xf32> -> tensor<1x32x1xf32>
    %196 = sim.elementwise "pow" %44 : tensor<1x32x1xf32> -> tensor<1x32x1xf32>
    %197 = sim.elementwise "mul" %195 : tensor<1x32x1xf32> -> tensor<1x32x1xf32>
    %198 = sim.elementwise "mul" %197, %196 : tensor<1x32x1xf32>, tensor<1x32x1xf32> -> tensor<1x32x1xf32>
    %199 = sim.elementwise "div" %198 : tensor<1x32x1xf32> -> tensor<1x32x8192xf32>
    %200 = sim.elementwise "pow" %42 : tensor<1x32x8192xf32> -> tensor<1x32x8192xf32>
    %201 = sim.elementwise "mul" %200 : tensor<1x32x8192xf32> -> tensor<1x32x8192xf32>
    %202 = sim.elementwise "mul" %199, %201 : tensor<1x32x8192xf32>, tensor<1x32x8192xf32> -> tensor<1x32x8192xf32>
    %203 = sim.elementwise "add" %194, %202 : tensor<1x32x8192xf32>, tensor<1x32x8192xf32> -> tensor<1x32x8192xf32>
    %204 = sim.elementwise "cast" %203 : tensor<1x32x8192xf32> -> tensor<1x32x8192xbf16>
    %205 = sim.view %191 : tensor<1x1x8192xbf16> -> tensor<8192xbf16>
    %206, %207, %208, %209, %210, %211, %212, %213, %214, %215 = sim.repeat 80 iter(%204 : tensor<1x32x8192xbf16>) slices(%8, %9, %10, %11, %12, %13, %14, %15, %16, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41 : tensor<80x8192x8192xbf16>, tensor<80x1024x8192xbf16>, tensor<80x1024x8192xbf16>, tensor<80x8192x8192xbf16>, tensor<80x28672x8192xbf16>, tensor<80x28672x8192xbf16>, tensor<80x8192x28672xbf16>, tensor<80x8192xbf16>, tensor<80x8192xbf16>, tensor<80x1x32x8192xf32>, tensor<80x1x32x1xf32>, tensor<80x1x32x1xf32>, tensor<80x1x32x8192xbf16>, tensor<80x32x8192xbf16>, tensor<80x32x8192xbf16>, tensor<80x32x8192xbf16>, tensor<80x1x32x64x128xbf16>, tensor<80x1x32x8x128xbf16>, tensor<80x1x32x8x128xbf16>, tensor<80x1x32x64x128xbf16>, tensor<80x32x8192xbf16>, tensor<80x1x32x8192xf32>, tensor<80x1x32x1xf32>, tensor<80x1x32x1xf32>, tensor<80x1x32x8192xbf16>, tensor<80x32x8192xbf16>, tensor<80x1x32x28672xbf16>, tensor<80x1x32x28672xbf16>, tensor<80x32x8192xbf16>, tensor<80x1x32x28672xbf16>, tensor<80x32x28672xbf16>) {reverse} -> (tensor<1x32x8192xbf16>, tensor<80x8192x8192xbf16>, tensor<80x1024x8192xbf16>, tensor<80x1024x8192xbf16>, tensor<80x8192x8192xbf16>, tensor<80x28672x8192xbf16>, tensor<80x28672x8192xbf16>, tensor<80x8192x28672xbf16>, tensor<80x8192xbf16>, tensor<80x8192xbf16>) {
    ^bb0(%216: tensor<1x32x8192xbf16>, %217: tensor<8192x8192xbf16>, %218: tensor<1024x8192xbf16>, %219: tensor<1024x8192xbf16>, %220: tensor<8192x8192xbf16>, %221: tensor<28672x8192xbf16>, %222: tensor<28672x8192xbf16>, %223: tensor<8192x28672xbf16>, %224: tensor<8192xbf16>, %225: tensor<8192xbf16>, %226: tensor<1x32x8192xf32>, %227: tensor<1x32x1xf32>, %228: tensor<1x32x1xf32>, %229: tensor<1x32x8192xbf16>, %230: tensor<32x8192xbf16>, %231: tensor<32x8192xbf16>, %232: tensor<32x8192xbf16>, %233: tensor<1x32x64x128xbf16>, %234: tensor<1x32x8x128xbf16>, %235: tensor<1x32x8x128xbf16>, %236: tensor<1x32x64x128xbf16>, %237: tensor<32x8192xbf16>, %238: tensor<1x32x8192xf32>, %239: tensor<1x32x1xf32>, %240: tensor<1x32x1xf32>, %241: tensor<1x32x8192xbf16>, %242: tensor<32x8192xbf16>, %243: tensor<1x32x28672xbf16>, %244: tensor<1x32x28672xbf16>, %245: tensor<32x8192xbf16>, %246: tensor<1x32x28672xbf16>, %247: tensor<32x28672xbf16>):
      %248 = sim.view %216 : tensor<1x32x8192xbf16> -> tensor<32x8192xbf16>
      %249 = sim.matmul %248, %247 {transpose_lhs} : (tensor<32x8192xbf16>, tensor<32x28672xbf16>) -> tensor<8192x28672xbf16>
      %250 = sim.matmul %216, %223 : (tensor<1x32x8192xbf16>, tensor<8192x28672xbf16>) -> tensor<1x32x28672xbf16>
      %251 = sim.elementwise "mul" %250, %244 : tensor<1x32x28672xbf16>, tensor<1x32x28672xbf16> -> tensor<1x32x28672xbf16>
      %252 = sim.elementwise "mul" %250, %246 : tensor<1x32x28672xbf16>, tensor<1x32x28672xbf16> -> tensor<1x32x28672xbf16>
      %253 = sim.view %251 : tensor<1x32x28672xbf16> -> tensor<32x28672xbf16>
      %254 = sim.matmul %253, %245 {transpose_lhs} : (tensor<32x28672xbf16>, tensor<32x8192xbf16>) -> tensor<28672x8192xbf16>
      %255 = sim.matmul %251, %222 : (tensor<1x32x28672xbf16>, tensor<28672x8192xbf16>) -> tensor<1x32x8192xbf16>
      %256 = sim.elementwise "silu_grad" %252, %243 : tensor<1x32x28672xbf16>, tensor<1x32x28672xbf16> -> tensor<1x32x28672xbf16>
      %257 = sim.view %256 : tensor<1x32x28672xbf16> -> tensor<32x28672xbf16>
      %258 = sim.matmul %257, %242 {transpose_lhs} : (tensor<32x28672xbf16>, tensor<32x8192xbf16>) -> tensor<28672x8192xbf16>
      %259 = sim.matmul %256, %221 : (tensor<1x32x28672xbf16>, tensor<28672x8192xbf16>) -> tensor<1x32x8192xbf16>
      %260 = sim.elementwise "add" %255, %259 : tensor<1x32x8192xbf16>, tensor<1x32x8192xbf16> -> tensor<1x32x8192xbf16>
      %261 = sim.elementwise "mul" %260, %225 : tensor<1x32x8192xbf16>, tensor<8192xbf16> -> tensor<1x32x8192xbf16>
      %262 = sim.elementwise "mul" %260, %241 : tensor<1x32x8192xbf16>, tensor<1x32x8192xbf16> -> tensor<1x32x8192xbf16>
      %263 = sim.reduce "sum" %262 [0, 1] : tensor<1x32x8192xbf16> -> tensor<1x1x8192xbf16>
      %264 = sim.elementwise "cast" %261 : tensor<1x32x8192xbf16> -> tensor<1x32x8192xf32>
      %265 = sim.elementwise "mul" %264, %238 : tensor<1x32x8192xf32>, tensor<1x32x8192xf32> -> tensor<1x32x8192xf32>
      %266 = sim.elementwise "mul" %264, %239 : tensor<1x32x8192xf32>, tensor<1x32x1xf32> -> tensor<1x32x8192xf32>
      %267 = sim.reduce "sum" %265 [2] : tensor<1x32x8192xf32> -> tensor<1x32x1xf32>
      %268 = sim.elementwise "pow" %240 : tensor<1x32x1xf32> -> tensor<1x32x1xf32>
      %269 = sim.elementwise "mul" %267 : tensor<1x32x1xf32> -> tensor<1x32x1xf32>
      %270 = sim.elementwise "mul" %269, %268 : tensor<1x32x1xf32>, tensor<1x32x1xf32> -> tensor<1x32x1xf32>
      %271 = sim.elementwise "div" %270 : tensor<1x32x1xf32> -> tensor<1x32x8192xf32>
      %272 = sim.elementwise "pow" %238 : tensor<1x32x8192xf32> -> tensor<1x32x8192xf32>
      %273 = sim.elementwise "mul" %272 : tensor<1x32x8192xf32> -> tensor<1x32x8192xf32>
      %274 = sim.elementwise "mul" %271, %273 : tensor<1x32x8192xf32>, tensor<1x32x8192xf32> -> tensor<1x32x8192xf32>
      %275 = sim.elementwise "add" %266, %274 : tensor<1x32x8192xf32>, tensor<1x32x8192xf32> -> tensor<1x32x8192xf32>
      %276 = sim.elementwise "cast" %275 : tensor<1x32x8192xf32> -> tensor<1x32x8192xbf16>
      %277 = sim.elementwise "add" %216, %276 : tensor<1x32x8192xbf16>, tensor<1x32x8192xbf16> -> tensor<1x32x8192xbf16>
      %278 = sim.view %277 : tensor<1x32x8192xbf16> -> tensor<32x8192xbf16>
      %279 = sim.matmul %278, %237 {transpose_lhs} : (tensor<32x8192xbf16>, tensor<32x8192xbf16>) -> tensor<8192x8192xbf16>
      %280 = sim.matmul %277, %220 : (tensor<1x32x8192xbf16>, tensor<8192x8192xbf16>) -> tensor<1x32x8192xbf16>
      %281 = sim.view %280 : tensor<1x32x8192xbf16> -> tensor<1x32x64x128xbf16>
      %282, %283, %284 = sim.attention_grad %233, %234, %235, %236, %281 {causal} : (tensor<1x32x64x128xbf16>, tensor<1x32x8x128xbf16>, tensor<1x32x8x128xbf16>, tensor<1x32x64x128xbf16>, tensor<1x32x64x128xbf16>) -> (tensor<1x32x64x128xbf16>, tensor<1x32x8x128xbf16>, tensor<1x32x8x128xbf16>)
      %285 = sim.view %283 : tensor<1x32x8x128xbf16> -> tensor<1x8x32x128xbf16>
      %286 = sim.view %52 : tensor<1x32x128xbf16> -> tensor<1x1x32x128xbf16>
      %287 = sim.elementwise "mul" %285, %286 : tensor<1x8x32x128xbf16>, tensor<1x1x32x128xbf16> -> tensor<1x8x32x128xbf16>
      %288 = sim.generic "aten.slice"(%287) {flop_count = 0.000000e+00 : f64, byte_count = 0.000000e+00 : f64} : (tensor<1x8x32x128xbf16>) -> tensor<1x8x32x64xbf16>
      %289 = sim.elementwise "neg" %288 : tensor<1x8x32x64xbf16> -> tensor<1x8x32x64xbf16>
      %290 = sim.generic "aten.slice_backward"(%289) {flop_count = 0.000000e+00 : f64, byte_count = 9.830400e+04 : f64} : (tensor<1x8x32x64xbf16>) -> tensor<1x8x32x128xbf16>
      %291 = sim.generic "aten.slice"(%287) {flop_count = 0.000000e+00 : f64, byte_count = 0.000000e+00 : f64} : (tensor<1x8x32x128xbf16>) -> tensor<1x8x32x64xbf16>
      %292 = sim.generic "aten.slice_backward"(%291) {flop_count = 0.000000e+00 : f64, byte_count = 9.830400e+04 : f64} : (tensor<1x8x32x64xbf16>) -> tensor<1x8x32x128xbf16>
      %293 = sim.elementwise "add" %290, %292 : tensor<1x8x32x128xbf16>, tensor<1x8x32x128xbf16> -> tensor<1x8x32x128xbf16>
      %294 = sim.view %51 : tensor<1x32x128xbf16> -> tensor<1x1x32x128xbf16>
      %295 = sim.elementwise "mul" %285, %294 : tensor<1x8x32x128xbf16>, tensor<1x1x32x128xbf16> -> tensor<1x8x32x128xbf16>
      %296 = sim.elementwise "add" %293, %295 : tensor<1x8x32x128xbf16>, tensor<1x8x32x128xbf16> -> tensor<1x8x32x128xbf16>
      %297 = sim.view %282 : tensor<1x32x64x128xbf16> -> tensor<1x64x32x128xbf16>
      %298 = sim.elementwise "mul" %297, %286 : tensor<1x64x32x128xbf16>, tensor<1x1x32x128xbf16> -> tensor<1x64x32x128xbf16>
      %299 = sim.generic "aten.slice"(%298) {flop_count = 0.000000e+00 : f64, byte_count = 0.000000e+00 : f64} : (tensor<1x64x32x128xbf16>) -> tensor<1x64x32x64xbf16>
      %300 = sim.elementwise "neg" %299 : tensor<1x64x32x64xbf16> -> tensor<1x64x32x64xbf16>
      %301 = sim.generic "aten.slice_backward"(%300) {flop_count = 0.000000e+00 : f64, byte_count = 7.864320e+05 : f64} : (tensor<1x64x32x64xbf16>) -> tensor<1x64x32x128xbf16>
      %302 = sim.generic "aten.slice"(%298) {flop_count = 0.000000e+00 : f64, byte_count = 0.000000e+00 : f64} : (tensor<1x64x32x128xbf16>) -> tensor<1x64x32x64xbf16>
      %303 = sim.generic "aten.slice_backward"(%302) {flop_count = 0.000000e+00 : f64, byte_count = 7.864320e+05 : f64} : (tensor<1x64x32x64xbf16>) -> tensor<1x64x32x128xbf16>
      %304 = sim.elementwise "add" %301, %303 : tensor<1x64x32x128xbf16>, tensor<1x64x32x128xbf16> -> tensor<1x64x32x128xbf16>
      %305 = sim.elementwise "mul" %297, %294 : tensor<1x64x32x128xbf16>, tensor<1x1x32x128xbf16> -> tensor<1x64x32x128xbf16>
      %306 = sim.elementwise "add" %304, %305 : tensor<1x64x32x128xbf16>, tensor<1x64x32x128xbf16> -> tensor<1x64x32x128xbf16>
      %307 = sim.view %284 : tensor<1x32x8x128xbf16> -> tensor<32x1024xbf16>
      %308 = sim.matmul %307, %232 {transpose_lhs} : (tensor<32x1024xbf16>, tensor<32x8192xbf16>) -> tensor<1024x8192xbf16>
      %309 = sim.matmul %307, %219 : (tensor<32x1024xbf16>, tensor<1024x8192xbf16>) -> tensor<32x8192xbf16>
      %310 = sim.view %296 : tensor<1x8x32x128xbf16> -> tensor<32x1024xbf16>
      %311 = sim.matmul %310, %231 {transpose_lhs} : (tensor<32x1024xbf16>, tensor<32x8192xbf16>) -> tensor<1024x8192xbf16>
      %312 = sim.matmul %310, %218 : (tensor<32x1024xbf16>, tensor<1024x8192xbf16>) -> tensor<32x8192xbf16>
      %313 = sim.view %309 : tensor<32x8192xbf16> -> tensor<1x32x8192xbf16>
      %314 = sim.view %312 : tensor<32x8192xbf16> -> tensor<1x32x8192xbf16>
      %315 = sim.elementwise "add" %313, %314 : tensor<1x32x8192xbf16>, tensor<1x32x8192xbf16> -> tensor<1x32x8192xbf16>
      %316 = sim.view %306 : tensor<1x64x32x128xbf16> -> tensor<32x8192xbf16>
      %317 = sim.matmul %316, %230 {transpose_lhs} : (tensor<32x8192xbf16>, tensor<32x8192xbf16>) -> tensor<8192x8192xbf16>
      %318 = sim.matmul %316, %217 : (tensor<32x8192xbf16>, tensor<8192x8192xbf16>) -> tensor<32x8192xbf16>
      %319 = sim.view %318 : tensor<32x8192xbf16> -> tensor<1x32x8192xbf16>
      %320 = sim.elementwise "add" %315, %319 : tensor<1x32x8192xbf16>, tensor<1x32x8192xbf16> -> tensor<1x32x8192xbf16>
      %321 = sim.elementwise "mul" %320, %224 : tensor<1x32x8192xbf16>, tensor<8192xbf16> -> tensor<1x32x8192xbf16>
      %322 = sim.elementwise "mul" %320, %229 : tensor<1x32x8192xbf16>, tensor<1x32x8192xbf16> -> tensor<1x32x8192xbf16>
      %323 = sim.reduce "sum" %322 [0, 1] : tensor<1x32x8192xbf16> -> tensor<1x1x8192xbf16>
      %324 = sim.elementwise "cast" %321 : tensor<1x32x8192xbf16> -> tensor<1x32x8192xf32>
      %325 = sim.elementwise "mul" %324, %226 : tensor<1x32x8192xf32>, tensor<1x32x8192xf32> -> tensor<1x32x8192xf32>
      %326 = sim.elementwise "mul" %324, %227 : tensor<1x32x8192xf32>, tensor<1x32x1xf32> -> tensor<1x32x8192xf32>
      %327 = sim.reduce "sum" %325 [2] : tensor<1x32x8192xf32> -> tensor<1x32x1xf32>
      %328 = sim.elementwise "pow" %228 : tensor<1x32x1xf32> -> tensor<1x32x1xf32>
      %329 = sim.elementwise "mul" %327 : tensor<1x32x1xf32> -> tensor<1x32x1xf32>
      %330 = sim.elementwise "mul" %329, %328 : tensor<1x32x1xf32>, tensor<1x32x1xf32> -> tensor<1x32x1xf32>
      %331 = sim.elementwise "div" %330 : tensor<1x32x1xf32> -> tensor<1x32x8192xf32>
      %332 = sim.elementwise "pow" %226 : tensor<1x32x8192xf32> -> tensor<1x32x8192xf32>
      %333 = sim.elementwise "mul" %332 : tensor<1x32x8192xf32> -> tensor<1x32x8192xf32>
      %334 = sim.elementwise "mul" %331, %333 : tensor<1x32x8192xf32>, tensor<1x32x8192xf32> -> tensor<1x32x8192xf32>
      %335 = sim.elementwise "add" %326, %334 : tensor<1x32x8192xf32>, tensor<1x32x8192xf32> -> tensor<1x32x8192xf32>
      %336 = sim.elementwise "cast" %335 : tensor<1x32x8192xf32> -> tensor<1x32x8192xbf16>
      %337 = sim.elementwise "add" %277, %336 : tensor<1x32x8192xbf16>, tensor<1x32x8192xbf16> -> tensor<1x32x8192xbf16>
      %338 = sim.view %323 : tensor<1x1x8192xbf16> -> tensor<8192xbf16>
      %339 = sim.view %263 : tensor<1x1x8192xbf16> -> tensor<8192xbf16>
      sim.yield %337, %317, %311, %308, %279, %258, %254, %249, %338, %339 : tensor<1x32x8192xbf16>, tensor<8192x8192xbf16>, tensor<1024x8192xbf16>, tensor<1024x8192xbf16>, tensor<8192x8192xbf16>, tensor<28672x8192xbf16>, tensor<28672x8192xbf16>, tensor<8192x28672xbf16>, tensor<8192xbf16>, tensor<8192xbf16>
    }
    %340 = sim.generic "aten.embedding_dense_backward"(%206, %19) {flop_count = 0.000000e+00 : f64, byte_count = 0x41DF520040000000 : f64} : (tensor<1x32x8192xbf16>, tensor<1x32xi64>) -> tensor<128256x8192xbf16>
    sim.yield %340, %205, %187, %207, %208, %209, %210, %211, %212, %213, %214, %215 : tensor<128256x8192xbf16>, tensor<8192xbf16>, tensor<128256x8192xbf16>, tensor<80x8192x8192xbf16>, tensor<80x1024x8192xbf16>, tensor<80x1024x8192xbf16>, tensor<80x8192x8192xbf16>, tensor<80x28672x8192xbf16>, tensor<80x28672x8192xbf16>, tensor<80x8192x28672xbf16>, tensor<80x8192xbf16>, tensor<80x8192xbf16>
  }
  sim.phase "optimizer" {
    sim.optimizer_step "adamw"(%0, %5, %6, %8, %9, %10, %11, %12, %13, %14, %15, %16 : tensor<128256x8192xbf16>, tensor<8192xbf16>, tensor<128256x8192xbf16>, tensor<80x8192x8192xbf16>, tensor<80x1024x8192xbf16>, tensor<80x1024x8192xbf16>, tensor<80x8192x8192xbf16>, tensor<80x28672x8192xbf16>, tensor<80x28672x8192xbf16>, tensor<80x8192x28672xbf16>, tensor<80x8192xbf16>, tensor<80x8192xbf16>) grads(%170, %171, %172, %173, %174, %175, %176, %177, %178, %179, %180, %181 : tensor<128256x8192xbf16>, tensor<8192xbf16>, tensor<128256x8192xbf16>, tensor<80x8192x8192xbf16>, tensor<80x1024x8192xbf16>, tensor<80x1024x8192xbf16>, tensor<80x8192x8192xbf16>, tensor<80x28672x8192xbf16>, tensor<80x28672x8192xbf16>, tensor<80x8192x28672xbf16>, tensor<80x8192xbf16>, tensor<80x8192xbf16>)
    sim.yield
  }
}
