// The torch frontend's import of a 2-layer GPT-2 with tied input and output embeddings
// (hidden 64, 4 heads of 16, ffn 256, vocab 256, 64 positions; train, batch 1, seq_len 24):
// gpt3-6.7b's config with those fields replaced, through charon_ir.frontend.import_model.
builtin.module attributes {sim.model = "tiny-gpt", sim.mode = "train", sim.seq_len = 24 : i64, sim.batch = 1 : i64, sim.dtype = "bf16", sim.frontend = "charon-frontend-4", sim.hf_param_count = 120576 : i64, sim.free_ops = {aten._unsafe_view = 1 : i64, aten.clone = 2 : i64, aten.detach = 6 : i64, aten.split = 1 : i64, aten.t = 13 : i64, aten.transpose = 12 : i64, aten.view = 34 : i64}, sim.generic_ops = {aten._log_softmax = 1 : i64, aten._log_softmax_backward_data = 1 : i64, aten.cat = 1 : i64, aten.embedding_dense_backward = 2 : i64, aten.native_layer_norm_backward = 3 : i64, aten.nll_loss_backward = 1 : i64, aten.nll_loss_forward = 1 : i64}} {
  %0 = sim.param "transformer.wte.weight" {role = #sim.role<embedding>} : tensor<256x64xbf16>
  %1 = sim.param "transformer.wpe.weight" : tensor<64x64xbf16>
  %2 = sim.input "tokens" {tokens} : tensor<1x24xi64>
  %3 = sim.input "positions" : tensor<1x24xi64>
  %4 = sim.param "transformer.ln_f.weight" {role = #sim.role<norm>} : tensor<64xbf16>
  %5 = sim.param "transformer.ln_f.bias" {role = #sim.role<norm>} : tensor<64xbf16>
  %6 = sim.input "labels" : tensor<1x24xi64>
  %7 = sim.param "transformer.h[0:2].ln_1.weight" {role = #sim.role<norm>, stacked} : tensor<2x64xbf16>
  %8 = sim.param "transformer.h[0:2].ln_1.bias" {role = #sim.role<norm>, stacked} : tensor<2x64xbf16>
  %9 = sim.param "transformer.h[0:2].attn.c_attn.weight" {role = #sim.role<attention>, split = #sim.split<column>, stacked} : tensor<2x64x192xbf16>
  %10 = sim.param "transformer.h[0:2].attn.c_attn.bias" {role = #sim.role<attention>, split = #sim.split<column>, stacked} : tensor<2x192xbf16>
  %11 = sim.param "transformer.h[0:2].attn.c_proj.weight" {role = #sim.role<attention>, split = #sim.split<row>, stacked} : tensor<2x64x64xbf16>
  %12 = sim.param "transformer.h[0:2].attn.c_proj.bias" {role = #sim.role<attention>, stacked} : tensor<2x64xbf16>
  %13 = sim.param "transformer.h[0:2].ln_2.weight" {role = #sim.role<norm>, stacked} : tensor<2x64xbf16>
  %14 = sim.param "transformer.h[0:2].ln_2.bias" {role = #sim.role<norm>, stacked} : tensor<2x64xbf16>
  %15 = sim.param "transformer.h[0:2].mlp.c_fc.weight" {role = #sim.role<mlp>, split = #sim.split<column>, stacked} : tensor<2x64x256xbf16>
  %16 = sim.param "transformer.h[0:2].mlp.c_fc.bias" {role = #sim.role<mlp>, split = #sim.split<column>, stacked} : tensor<2x256xbf16>
  %17 = sim.param "transformer.h[0:2].mlp.c_proj.weight" {role = #sim.role<mlp>, split = #sim.split<row>, stacked} : tensor<2x256x64xbf16>
  %18 = sim.param "transformer.h[0:2].mlp.c_proj.bias" {role = #sim.role<mlp>, stacked} : tensor<2x64xbf16>
  %19 = sim.input "grad_loss" : tensor<f32>
  %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44 = sim.phase "forward" -> tensor<f32>, tensor<2x1x24x64xbf16>, tensor<2x1x24x1xbf16>, tensor<2x1x24x1xbf16>, tensor<2x24x64xbf16>, tensor<2x1x24x4x16xbf16>, tensor<2x1x24x4x16xbf16>, tensor<2x1x24x4x16xbf16>, tensor<2x1x24x4x16xbf16>, tensor<2x24x64xbf16>, tensor<2x1x24x64xbf16>, tensor<2x1x24x1xbf16>, tensor<2x1x24x1xbf16>, tensor<2x24x64xbf16>, tensor<2x1x24x256xbf16>, tensor<2x1x24x256xbf16>, tensor<2x1x24x256xbf16>, tensor<2x1x24x256xbf16>, tensor<2x24x256xbf16>, tensor<1x24x64xbf16>, tensor<1x24x1xbf16>, tensor<1x24x1xbf16>, tensor<24x64xbf16>, tensor<24x256xf32>, tensor<f32> {
    %45 = sim.embedding %0, %2 : (tensor<256x64xbf16>, tensor<1x24xi64>) -> tensor<1x24x64xbf16>
    %46 = sim.embedding %1, %3 : (tensor<64x64xbf16>, tensor<1x24xi64>) -> tensor<1x24x64xbf16>
    %47 = sim.elementwise "add" %45, %46 : tensor<1x24x64xbf16>, tensor<1x24x64xbf16> -> tensor<1x24x64xbf16>
    %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66 = sim.repeat 2 iter(%47 : tensor<1x24x64xbf16>) slices(%7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18 : tensor<2x64xbf16>, tensor<2x64xbf16>, tensor<2x64x192xbf16>, tensor<2x192xbf16>, tensor<2x64x64xbf16>, tensor<2x64xbf16>, tensor<2x64xbf16>, tensor<2x64xbf16>, tensor<2x64x256xbf16>, tensor<2x256xbf16>, tensor<2x256x64xbf16>, tensor<2x64xbf16>) -> (tensor<1x24x64xbf16>, tensor<2x1x24x64xbf16>, tensor<2x1x24x1xbf16>, tensor<2x1x24x1xbf16>, tensor<2x24x64xbf16>, tensor<2x1x24x4x16xbf16>, tensor<2x1x24x4x16xbf16>, tensor<2x1x24x4x16xbf16>, tensor<2x1x24x4x16xbf16>, tensor<2x24x64xbf16>, tensor<2x1x24x64xbf16>, tensor<2x1x24x1xbf16>, tensor<2x1x24x1xbf16>, tensor<2x24x64xbf16>, tensor<2x1x24x256xbf16>, tensor<2x1x24x256xbf16>, tensor<2x1x24x256xbf16>, tensor<2x1x24x256xbf16>, tensor<2x24x256xbf16>) {
    ^bb0(%67: tensor<1x24x64xbf16>, %68: tensor<64xbf16>, %69: tensor<64xbf16>, %70: tensor<64x192xbf16>, %71: tensor<192xbf16>, %72: tensor<64x64xbf16>, %73: tensor<64xbf16>, %74: tensor<64xbf16>, %75: tensor<64xbf16>, %76: tensor<64x256xbf16>, %77: tensor<256xbf16>, %78: tensor<256x64xbf16>, %79: tensor<64xbf16>):
      %80 = sim.norm "layer" %67, %68 : tensor<1x24x64xbf16>, tensor<64xbf16>
      %81 = sim.elementwise "add" %80, %69 : tensor<1x24x64xbf16>, tensor<64xbf16> -> tensor<1x24x64xbf16>
      %82, %83 = sim.generic "layer_norm_stats"(%67) {flop_count = 0.000000e+00 : f64, byte_count = 9.600000e+01 : f64} : (tensor<1x24x64xbf16>) -> (tensor<1x24x1xbf16>, tensor<1x24x1xbf16>)
      %84 = sim.matmul %81, %70 : (tensor<1x24x64xbf16>, tensor<64x192xbf16>) -> tensor<1x24x192xbf16>
      %85 = sim.elementwise "add" %84, %71 : tensor<1x24x192xbf16>, tensor<192xbf16> -> tensor<1x24x192xbf16>
      %86 = sim.generic "aten.transpose"(%85) {flop_count = 0.000000e+00 : f64, byte_count = 0.000000e+00 : f64} : (tensor<1x24x192xbf16>) -> tensor<1x24x4x16xbf16>
      %87 = sim.generic "aten.transpose"(%85) {flop_count = 0.000000e+00 : f64, byte_count = 0.000000e+00 : f64} : (tensor<1x24x192xbf16>) -> tensor<1x24x4x16xbf16>
      %88 = sim.generic "aten.transpose"(%85) {flop_count = 0.000000e+00 : f64, byte_count = 0.000000e+00 : f64} : (tensor<1x24x192xbf16>) -> tensor<1x24x4x16xbf16>
      %89 = sim.attention %86, %87, %88 {causal} : (tensor<1x24x4x16xbf16>, tensor<1x24x4x16xbf16>, tensor<1x24x4x16xbf16>) -> tensor<1x24x4x16xbf16>
      %90 = sim.view %89 : tensor<1x24x4x16xbf16> -> tensor<1x24x64xbf16>
      %91 = sim.matmul %90, %72 : (tensor<1x24x64xbf16>, tensor<64x64xbf16>) -> tensor<1x24x64xbf16>
      %92 = sim.elementwise "add" %91, %73 : tensor<1x24x64xbf16>, tensor<64xbf16> -> tensor<1x24x64xbf16>
      %93 = sim.elementwise "add" %92, %67 : tensor<1x24x64xbf16>, tensor<1x24x64xbf16> -> tensor<1x24x64xbf16>
      %94 = sim.norm "layer" %93, %74 : tensor<1x24x64xbf16>, tensor<64xbf16>
      %95 = sim.elementwise "add" %94, %75 : tensor<1x24x64xbf16>, tensor<64xbf16> -> tensor<1x24x64xbf16>
      %96, %97 = sim.generic "layer_norm_stats"(%93) {flop_count = 0.000000e+00 : f64, byte_count = 9.600000e+01 : f64} : (tensor<1x24x64xbf16>) -> (tensor<1x24x1xbf16>, tensor<1x24x1xbf16>)
      %98 = sim.matmul %95, %76 : (tensor<1x24x64xbf16>, tensor<64x256xbf16>) -> tensor<1x24x256xbf16>
      %99 = sim.elementwise "add" %98, %77 : tensor<1x24x256xbf16>, tensor<256xbf16> -> tensor<1x24x256xbf16>
      %100 = sim.elementwise "mul" %99 : tensor<1x24x256xbf16> -> tensor<1x24x256xbf16>
      %101 = sim.elementwise "pow" %99 : tensor<1x24x256xbf16> -> tensor<1x24x256xbf16>
      %102 = sim.elementwise "mul" %101 : tensor<1x24x256xbf16> -> tensor<1x24x256xbf16>
      %103 = sim.elementwise "add" %99, %102 : tensor<1x24x256xbf16>, tensor<1x24x256xbf16> -> tensor<1x24x256xbf16>
      %104 = sim.elementwise "mul" %103 : tensor<1x24x256xbf16> -> tensor<1x24x256xbf16>
      %105 = sim.elementwise "tanh" %104 : tensor<1x24x256xbf16> -> tensor<1x24x256xbf16>
      %106 = sim.elementwise "add" %105 : tensor<1x24x256xbf16> -> tensor<1x24x256xbf16>
      %107 = sim.elementwise "mul" %100, %106 : tensor<1x24x256xbf16>, tensor<1x24x256xbf16> -> tensor<1x24x256xbf16>
      %108 = sim.matmul %107, %78 : (tensor<1x24x256xbf16>, tensor<256x64xbf16>) -> tensor<1x24x64xbf16>
      %109 = sim.elementwise "add" %108, %79 : tensor<1x24x64xbf16>, tensor<64xbf16> -> tensor<1x24x64xbf16>
      %110 = sim.elementwise "add" %93, %109 : tensor<1x24x64xbf16>, tensor<1x24x64xbf16> -> tensor<1x24x64xbf16>
      %111 = sim.view %81 : tensor<1x24x64xbf16> -> tensor<24x64xbf16>
      %112 = sim.view %89 : tensor<1x24x4x16xbf16> -> tensor<24x64xbf16>
      %113 = sim.view %95 : tensor<1x24x64xbf16> -> tensor<24x64xbf16>
      %114 = sim.view %107 : tensor<1x24x256xbf16> -> tensor<24x256xbf16>
      sim.yield %110, %67, %82, %83, %111, %86, %87, %88, %89, %112, %93, %96, %97, %113, %99, %100, %105, %106, %114 : tensor<1x24x64xbf16>, tensor<1x24x64xbf16>, tensor<1x24x1xbf16>, tensor<1x24x1xbf16>, tensor<24x64xbf16>, tensor<1x24x4x16xbf16>, tensor<1x24x4x16xbf16>, tensor<1x24x4x16xbf16>, tensor<1x24x4x16xbf16>, tensor<24x64xbf16>, tensor<1x24x64xbf16>, tensor<1x24x1xbf16>, tensor<1x24x1xbf16>, tensor<24x64xbf16>, tensor<1x24x256xbf16>, tensor<1x24x256xbf16>, tensor<1x24x256xbf16>, tensor<1x24x256xbf16>, tensor<24x256xbf16>
    }
    %115 = sim.norm "layer" %48, %4 : tensor<1x24x64xbf16>, tensor<64xbf16>
    %116 = sim.elementwise "add" %115, %5 : tensor<1x24x64xbf16>, tensor<64xbf16> -> tensor<1x24x64xbf16>
    %117, %118 = sim.generic "layer_norm_stats"(%48) {flop_count = 0.000000e+00 : f64, byte_count = 9.600000e+01 : f64} : (tensor<1x24x64xbf16>) -> (tensor<1x24x1xbf16>, tensor<1x24x1xbf16>)
    %119 = sim.matmul %116, %0 {transpose_rhs} : (tensor<1x24x64xbf16>, tensor<256x64xbf16>) -> tensor<1x24x256xbf16>
    %120 = sim.elementwise "cast" %119 : tensor<1x24x256xbf16> -> tensor<1x24x256xf32>
    %121 = sim.view %120 : tensor<1x24x256xf32> -> tensor<24x256xf32>
    %122 = sim.generic "aten._log_softmax"(%121) {flop_count = 3.072000e+04 : f64, byte_count = 4.915200e+04 : f64} : (tensor<24x256xf32>) -> tensor<24x256xf32>
    %123 = sim.view %6 : tensor<1x24xi64> -> tensor<24xi64>
    %124, %125 = sim.generic "aten.nll_loss_forward"(%122, %123) {flop_count = 2.000000e+00 : f64, byte_count = 2.477600e+04 : f64} : (tensor<24x256xf32>, tensor<24xi64>) -> (tensor<f32>, tensor<f32>)
    %126 = sim.view %116 : tensor<1x24x64xbf16> -> tensor<24x64xbf16>
    sim.yield %124, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %48, %117, %118, %126, %122, %125 : tensor<f32>, tensor<2x1x24x64xbf16>, tensor<2x1x24x1xbf16>, tensor<2x1x24x1xbf16>, tensor<2x24x64xbf16>, tensor<2x1x24x4x16xbf16>, tensor<2x1x24x4x16xbf16>, tensor<2x1x24x4x16xbf16>, tensor<2x1x24x4x16xbf16>, tensor<2x24x64xbf16>, tensor<2x1x24x64xbf16>, tensor<2x1x24x1xbf16>, tensor<2x1x24x1xbf16>, tensor<2x24x64xbf16>, tensor<2x1x24x256xbf16>, tensor<2x1x24x256xbf16>, tensor<2x1x24x256xbf16>, tensor<2x1x24x256xbf16>, tensor<2x24x256xbf16>, tensor<1x24x64xbf16>, tensor<1x24x1xbf16>, tensor<1x24x1xbf16>, tensor<24x64xbf16>, tensor<24x256xf32>, tensor<f32>
  }
  %127, %128, %129, %130, %131, %132, %133, %134, %135, %136, %137, %138, %139, %140, %141, %142 = sim.phase "backward" -> tensor<256x64xbf16>, tensor<64x64xbf16>, tensor<64xbf16>, tensor<64xbf16>, tensor<2x64xbf16>, tensor<2x64xbf16>, tensor<2x64x192xbf16>, tensor<2x192xbf16>, tensor<2x64x64xbf16>, tensor<2x64xbf16>, tensor<2x64xbf16>, tensor<2x64xbf16>, tensor<2x64x256xbf16>, tensor<2x256xbf16>, tensor<2x256x64xbf16>, tensor<2x64xbf16> {
    %143 = sim.view %6 : tensor<1x24xi64> -> tensor<24xi64>
    %144 = sim.generic "aten.nll_loss_backward"(%19, %43, %143, %44) {flop_count = 6.144000e+03 : f64, byte_count = 4.935200e+04 : f64} : (tensor<f32>, tensor<24x256xf32>, tensor<24xi64>, tensor<f32>) -> tensor<24x256xf32>
    %145 = sim.generic "aten._log_softmax_backward_data"(%144, %43) {flop_count = 1.843200e+04 : f64, byte_count = 7.372800e+04 : f64} : (tensor<24x256xf32>, tensor<24x256xf32>) -> tensor<24x256xf32>
    %146 = sim.view %145 : tensor<24x256xf32> -> tensor<1x24x256xf32>
    %147 = sim.elementwise "cast" %146 : tensor<1x24x256xf32> -> tensor<1x24x256xbf16>
    %148 = sim.view %147 : tensor<1x24x256xbf16> -> tensor<24x256xbf16>
    %149 = sim.matmul %148, %42 {transpose_lhs} : (tensor<24x256xbf16>, tensor<24x64xbf16>) -> tensor<256x64xbf16>
    %150 = sim.matmul %147, %0 : (tensor<1x24x256xbf16>, tensor<256x64xbf16>) -> tensor<1x24x64xbf16>
    %151, %152, %153 = sim.generic "aten.native_layer_norm_backward"(%150, %39, %40, %41, %4, %5) {flop_count = 2.150400e+04 : f64, byte_count = 9.824000e+03 : f64} : (tensor<1x24x64xbf16>, tensor<1x24x64xbf16>, tensor<1x24x1xbf16>, tensor<1x24x1xbf16>, tensor<64xbf16>, tensor<64xbf16>) -> (tensor<1x24x64xbf16>, tensor<64xbf16>, tensor<64xbf16>)
    %154, %155, %156, %157, %158, %159, %160, %161, %162, %163, %164, %165, %166 = sim.repeat 2 iter(%151 : tensor<1x24x64xbf16>) slices(%7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38 : tensor<2x64xbf16>, tensor<2x64xbf16>, tensor<2x64x192xbf16>, tensor<2x192xbf16>, tensor<2x64x64xbf16>, tensor<2x64xbf16>, tensor<2x64xbf16>, tensor<2x64xbf16>, tensor<2x64x256xbf16>, tensor<2x256xbf16>, tensor<2x256x64xbf16>, tensor<2x64xbf16>, tensor<2x1x24x64xbf16>, tensor<2x1x24x1xbf16>, tensor<2x1x24x1xbf16>, tensor<2x24x64xbf16>, tensor<2x1x24x4x16xbf16>, tensor<2x1x24x4x16xbf16>, tensor<2x1x24x4x16xbf16>, tensor<2x1x24x4x16xbf16>, tensor<2x24x64xbf16>, tensor<2x1x24x64xbf16>, tensor<2x1x24x1xbf16>, tensor<2x1x24x1xbf16>, tensor<2x24x64xbf16>, tensor<2x1x24x256xbf16>, tensor<2x1x24x256xbf16>, tensor<2x1x24x256xbf16>, tensor<2x1x24x256xbf16>, tensor<2x24x256xbf16>) {reverse} -> (tensor<1x24x64xbf16>, tensor<2x64xbf16>, tensor<2x64xbf16>, tensor<2x64x192xbf16>, tensor<2x192xbf16>, tensor<2x64x64xbf16>, tensor<2x64xbf16>, tensor<2x64xbf16>, tensor<2x64xbf16>, tensor<2x64x256xbf16>, tensor<2x256xbf16>, tensor<2x256x64xbf16>, tensor<2x64xbf16>) {
    ^bb0(%167: tensor<1x24x64xbf16>, %168: tensor<64xbf16>, %169: tensor<64xbf16>, %170: tensor<64x192xbf16>, %171: tensor<192xbf16>, %172: tensor<64x64xbf16>, %173: tensor<64xbf16>, %174: tensor<64xbf16>, %175: tensor<64xbf16>, %176: tensor<64x256xbf16>, %177: tensor<256xbf16>, %178: tensor<256x64xbf16>, %179: tensor<64xbf16>, %180: tensor<1x24x64xbf16>, %181: tensor<1x24x1xbf16>, %182: tensor<1x24x1xbf16>, %183: tensor<24x64xbf16>, %184: tensor<1x24x4x16xbf16>, %185: tensor<1x24x4x16xbf16>, %186: tensor<1x24x4x16xbf16>, %187: tensor<1x24x4x16xbf16>, %188: tensor<24x64xbf16>, %189: tensor<1x24x64xbf16>, %190: tensor<1x24x1xbf16>, %191: tensor<1x24x1xbf16>, %192: tensor<24x64xbf16>, %193: tensor<1x24x256xbf16>, %194: tensor<1x24x256xbf16>, %195: tensor<1x24x256xbf16>, %196: tensor<1x24x256xbf16>, %197: tensor<24x256xbf16>):
      %198 = sim.matmul %167, %178 {transpose_rhs} : (tensor<1x24x64xbf16>, tensor<256x64xbf16>) -> tensor<1x24x256xbf16>
      %199 = sim.view %167 : tensor<1x24x64xbf16> -> tensor<24x64xbf16>
      %200 = sim.matmul %197, %199 {transpose_lhs} : (tensor<24x256xbf16>, tensor<24x64xbf16>) -> tensor<256x64xbf16>
      %201 = sim.reduce "sum" %199 [0] : tensor<24x64xbf16> -> tensor<1x64xbf16>
      %202 = sim.elementwise "mul" %198, %194 : tensor<1x24x256xbf16>, tensor<1x24x256xbf16> -> tensor<1x24x256xbf16>
      %203 = sim.elementwise "mul" %198, %196 : tensor<1x24x256xbf16>, tensor<1x24x256xbf16> -> tensor<1x24x256xbf16>
      %204 = sim.elementwise "tanh_grad" %202, %195 : tensor<1x24x256xbf16>, tensor<1x24x256xbf16> -> tensor<1x24x256xbf16>
      %205 = sim.elementwise "mul" %204 : tensor<1x24x256xbf16> -> tensor<1x24x256xbf16>
      %206 = sim.elementwise "mul" %205 : tensor<1x24x256xbf16> -> tensor<1x24x256xbf16>
      %207 = sim.elementwise "pow" %193 : tensor<1x24x256xbf16> -> tensor<1x24x256xbf16>
      %208 = sim.elementwise "mul" %207 : tensor<1x24x256xbf16> -> tensor<1x24x256xbf16>
      %209 = sim.elementwise "mul" %206, %208 : tensor<1x24x256xbf16>, tensor<1x24x256xbf16> -> tensor<1x24x256xbf16>
      %210 = sim.elementwise "add" %205, %209 : tensor<1x24x256xbf16>, tensor<1x24x256xbf16> -> tensor<1x24x256xbf16>
      %211 = sim.elementwise "mul" %203 : tensor<1x24x256xbf16> -> tensor<1x24x256xbf16>
      %212 = sim.elementwise "add" %210, %211 : tensor<1x24x256xbf16>, tensor<1x24x256xbf16> -> tensor<1x24x256xbf16>
      %213 = sim.matmul %212, %176 {transpose_rhs} : (tensor<1x24x256xbf16>, tensor<64x256xbf16>) -> tensor<1x24x64xbf16>
      %214 = sim.view %212 : tensor<1x24x256xbf16> -> tensor<24x256xbf16>
      %215 = sim.matmul %192, %214 {transpose_lhs} : (tensor<24x64xbf16>, tensor<24x256xbf16>) -> tensor<64x256xbf16>
      %216 = sim.reduce "sum" %214 [0] : tensor<24x256xbf16> -> tensor<1x256xbf16>
      %217, %218, %219 = sim.generic "aten.native_layer_norm_backward"(%213, %189, %190, %191, %174, %175) {flop_count = 2.150400e+04 : f64, byte_count = 9.824000e+03 : f64} : (tensor<1x24x64xbf16>, tensor<1x24x64xbf16>, tensor<1x24x1xbf16>, tensor<1x24x1xbf16>, tensor<64xbf16>, tensor<64xbf16>) -> (tensor<1x24x64xbf16>, tensor<64xbf16>, tensor<64xbf16>)
      %220 = sim.elementwise "add" %167, %217 : tensor<1x24x64xbf16>, tensor<1x24x64xbf16> -> tensor<1x24x64xbf16>
      %221 = sim.matmul %220, %172 {transpose_rhs} : (tensor<1x24x64xbf16>, tensor<64x64xbf16>) -> tensor<1x24x64xbf16>
      %222 = sim.view %220 : tensor<1x24x64xbf16> -> tensor<24x64xbf16>
      %223 = sim.matmul %188, %222 {transpose_lhs} : (tensor<24x64xbf16>, tensor<24x64xbf16>) -> tensor<64x64xbf16>
      %224 = sim.reduce "sum" %222 [0] : tensor<24x64xbf16> -> tensor<1x64xbf16>
      %225 = sim.view %221 : tensor<1x24x64xbf16> -> tensor<1x24x4x16xbf16>
      %226, %227, %228 = sim.attention_grad %184, %185, %186, %187, %225 {causal} : (tensor<1x24x4x16xbf16>, tensor<1x24x4x16xbf16>, tensor<1x24x4x16xbf16>, tensor<1x24x4x16xbf16>, tensor<1x24x4x16xbf16>) -> (tensor<1x24x4x16xbf16>, tensor<1x24x4x16xbf16>, tensor<1x24x4x16xbf16>)
      %229 = sim.view %226 {dims = [[0 : i64], [1 : i64], [2 : i64, 3 : i64]]} : tensor<1x24x4x16xbf16> -> tensor<1x24x64xbf16>
      %230 = sim.view %227 {dims = [[0 : i64], [1 : i64], [2 : i64, 3 : i64]]} : tensor<1x24x4x16xbf16> -> tensor<1x24x64xbf16>
      %231 = sim.view %228 {dims = [[0 : i64], [1 : i64], [2 : i64, 3 : i64]]} : tensor<1x24x4x16xbf16> -> tensor<1x24x64xbf16>
      %232 = sim.generic "aten.cat"(%229, %230, %231) {flop_count = 0.000000e+00 : f64, byte_count = 1.843200e+04 : f64} : (tensor<1x24x64xbf16>, tensor<1x24x64xbf16>, tensor<1x24x64xbf16>) -> tensor<1x24x192xbf16>
      %233 = sim.matmul %232, %170 {transpose_rhs} : (tensor<1x24x192xbf16>, tensor<64x192xbf16>) -> tensor<1x24x64xbf16>
      %234 = sim.view %232 : tensor<1x24x192xbf16> -> tensor<24x192xbf16>
      %235 = sim.matmul %183, %234 {transpose_lhs} : (tensor<24x64xbf16>, tensor<24x192xbf16>) -> tensor<64x192xbf16>
      %236 = sim.reduce "sum" %234 [0] : tensor<24x192xbf16> -> tensor<1x192xbf16>
      %237, %238, %239 = sim.generic "aten.native_layer_norm_backward"(%233, %180, %181, %182, %168, %169) {flop_count = 2.150400e+04 : f64, byte_count = 9.824000e+03 : f64} : (tensor<1x24x64xbf16>, tensor<1x24x64xbf16>, tensor<1x24x1xbf16>, tensor<1x24x1xbf16>, tensor<64xbf16>, tensor<64xbf16>) -> (tensor<1x24x64xbf16>, tensor<64xbf16>, tensor<64xbf16>)
      %240 = sim.elementwise "add" %220, %237 : tensor<1x24x64xbf16>, tensor<1x24x64xbf16> -> tensor<1x24x64xbf16>
      %241 = sim.view %236 : tensor<1x192xbf16> -> tensor<192xbf16>
      %242 = sim.view %224 : tensor<1x64xbf16> -> tensor<64xbf16>
      %243 = sim.view %216 : tensor<1x256xbf16> -> tensor<256xbf16>
      %244 = sim.view %201 : tensor<1x64xbf16> -> tensor<64xbf16>
      sim.yield %240, %238, %239, %235, %241, %223, %242, %218, %219, %215, %243, %200, %244 : tensor<1x24x64xbf16>, tensor<64xbf16>, tensor<64xbf16>, tensor<64x192xbf16>, tensor<192xbf16>, tensor<64x64xbf16>, tensor<64xbf16>, tensor<64xbf16>, tensor<64xbf16>, tensor<64x256xbf16>, tensor<256xbf16>, tensor<256x64xbf16>, tensor<64xbf16>
    }
    %245 = sim.generic "aten.embedding_dense_backward"(%154, %3) {flop_count = 0.000000e+00 : f64, byte_count = 1.145600e+04 : f64} : (tensor<1x24x64xbf16>, tensor<1x24xi64>) -> tensor<64x64xbf16>
    %246 = sim.generic "aten.embedding_dense_backward"(%154, %2) {flop_count = 0.000000e+00 : f64, byte_count = 3.603200e+04 : f64} : (tensor<1x24x64xbf16>, tensor<1x24xi64>) -> tensor<256x64xbf16>
    %247 = sim.elementwise "add" %149, %246 : tensor<256x64xbf16>, tensor<256x64xbf16> -> tensor<256x64xbf16>
    sim.yield %247, %245, %152, %153, %155, %156, %157, %158, %159, %160, %161, %162, %163, %164, %165, %166 : tensor<256x64xbf16>, tensor<64x64xbf16>, tensor<64xbf16>, tensor<64xbf16>, tensor<2x64xbf16>, tensor<2x64xbf16>, tensor<2x64x192xbf16>, tensor<2x192xbf16>, tensor<2x64x64xbf16>, tensor<2x64xbf16>, tensor<2x64xbf16>, tensor<2x64xbf16>, tensor<2x64x256xbf16>, tensor<2x256xbf16>, tensor<2x256x64xbf16>, tensor<2x64xbf16>
  }
  sim.phase "optimizer" {
    sim.optimizer_step "adamw"(%0, %1, %4, %5, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18 : tensor<256x64xbf16>, tensor<64x64xbf16>, tensor<64xbf16>, tensor<64xbf16>, tensor<2x64xbf16>, tensor<2x64xbf16>, tensor<2x64x192xbf16>, tensor<2x192xbf16>, tensor<2x64x64xbf16>, tensor<2x64xbf16>, tensor<2x64xbf16>, tensor<2x64xbf16>, tensor<2x64x256xbf16>, tensor<2x256xbf16>, tensor<2x256x64xbf16>, tensor<2x64xbf16>) grads(%127, %128, %129, %130, %131, %132, %133, %134, %135, %136, %137, %138, %139, %140, %141, %142 : tensor<256x64xbf16>, tensor<64x64xbf16>, tensor<64xbf16>, tensor<64xbf16>, tensor<2x64xbf16>, tensor<2x64xbf16>, tensor<2x64x192xbf16>, tensor<2x192xbf16>, tensor<2x64x64xbf16>, tensor<2x64xbf16>, tensor<2x64xbf16>, tensor<2x64xbf16>, tensor<2x64x256xbf16>, tensor<2x256xbf16>, tensor<2x256x64xbf16>, tensor<2x64xbf16>)
    sim.yield
  }
}
