// The torch frontend's import of mixtral-8x7b (train, batch 1, seq_len 64): every layer's
// weights stacked in one sim.repeat. Regenerate with
//   charon_ir.frontend.import_model("mixtral-8x7b", seq_len=64, batch=1, mode="train")
builtin.module attributes {sim.model = "mixtral-8x7b", sim.mode = "train", sim.seq_len = 64 : i64, sim.batch = 1 : i64, sim.dtype = "bf16", sim.frontend = "charon-frontend-1", sim.hf_param_count = 46702792704 : i64, sim.free_ops = {aten._unsafe_view = 7 : i64, aten.clone = 3 : i64, aten.detach = 12 : i64, aten.expand = 4 : i64, aten.slice = 8 : i64, aten.split = 1 : i64, aten.t = 30 : i64, aten.transpose = 20 : i64, aten.unsqueeze = 3 : i64, aten.view = 33 : i64}, sim.generic_ops = {aten._log_softmax = 1 : i64, aten._log_softmax_backward_data = 1 : i64, aten._softmax_backward_data = 1 : i64, aten.cat = 4 : i64, aten.embedding_dense_backward = 1 : i64, aten.new_zeros = 1 : i64, aten.nll_loss_backward = 1 : i64, aten.nll_loss_forward = 1 : i64, aten.scatter = 1 : i64, aten.slice_backward = 4 : i64}} {
  %0 = sim.param "model.embed_tokens.weight" {role = #sim.role<embedding>} : tensor<32000x4096xbf16>
  %1 = sim.input "buffer:model.rotary_emb.inv_freq" : tensor<64xf32>
  %2 = sim.input "buffer:model.rotary_emb.original_inv_freq" : tensor<64xf32>
  %3 = sim.input "tokens" {tokens} : tensor<1x64xi64>
  %4 = sim.input "positions" : tensor<1x64xi64>
  %5 = sim.param "model.norm.weight" {role = #sim.role<norm>} : tensor<4096xbf16>
  %6 = sim.param "lm_head.weight" {role = #sim.role<head>} : tensor<32000x4096xbf16>
  %7 = sim.input "labels" : tensor<1x64xi64>
  %8 = sim.param "model.layers[0:32].self_attn.q_proj.weight" {role = #sim.role<attention>, split = #sim.split<column>, stacked} : tensor<32x4096x4096xbf16>
  %9 = sim.param "model.layers[0:32].self_attn.k_proj.weight" {role = #sim.role<attention>, split = #sim.split<kv>, stacked} : tensor<32x1024x4096xbf16>
  %10 = sim.param "model.layers[0:32].self_attn.v_proj.weight" {role = #sim.role<attention>, split = #sim.split<kv>, stacked} : tensor<32x1024x4096xbf16>
  %11 = sim.param "model.layers[0:32].self_attn.o_proj.weight" {role = #sim.role<attention>, split = #sim.split<row>, stacked} : tensor<32x4096x4096xbf16>
  %12 = sim.param "model.layers[0:32].mlp.gate.weight" {role = #sim.role<router>, stacked} : tensor<32x8x4096xbf16>
  %13 = sim.param "model.layers[0:32].mlp.experts.gate_up_proj" {role = #sim.role<expert>, split = #sim.split<column>, stacked} : tensor<32x8x28672x4096xbf16>
  %14 = sim.param "model.layers[0:32].mlp.experts.down_proj" {role = #sim.role<expert>, split = #sim.split<row>, stacked} : tensor<32x8x4096x14336xbf16>
  %15 = sim.param "model.layers[0:32].input_layernorm.weight" {role = #sim.role<norm>, stacked} : tensor<32x4096xbf16>
  %16 = sim.param "model.layers[0:32].post_attention_layernorm.weight" {role = #sim.role<norm>, stacked} : tensor<32x4096xbf16>
  %17 = sim.input "grad_loss" : tensor<f32>
  %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58 = sim.phase "forward" -> tensor<f32>, tensor<1x64xi64>, tensor<32x1x64x4096xf32>, tensor<32x1x64x1xf32>, tensor<32x1x64x1xf32>, tensor<32x1x64x4096xbf16>, tensor<32x64x4096xbf16>, tensor<32x64x4096xbf16>, tensor<32x64x4096xbf16>, tensor<32x1x64x32x128xbf16>, tensor<32x1x64x8x128xbf16>, tensor<32x1x64x8x128xbf16>, tensor<32x1x64x32x128xbf16>, tensor<32x64x4096xbf16>, tensor<32x1x64x4096xf32>, tensor<32x1x64x1xf32>, tensor<32x1x64x1xf32>, tensor<32x1x64x4096xbf16>, tensor<32x64x4096xbf16>, tensor<32x64x8xf32>, tensor<32x64x2xi64>, tensor<32x64x1xf32>, tensor<32x64x2xf32>, tensor<32x8x16x4096xbf16>, tensor<32x8x16x14336xbf16>, tensor<32x8x16x14336xbf16>, tensor<32x8x16x14336xbf16>, tensor<32x8x16x14336xbf16>, tensor<32x8x16x4096xbf16>, tensor<32x64x2xbf16>, tensor<1x64x4096xf32>, tensor<1x64x1xf32>, tensor<1x64x1xf32>, tensor<1x64x4096xbf16>, tensor<64x4096xbf16>, tensor<64xi64>, tensor<64x32000xf32>, tensor<64x32000xf32>, tensor<f32>, tensor<1x64x128xbf16>, tensor<1x64x128xbf16> {
    %59 = sim.embedding %0, %3 : (tensor<32000x4096xbf16>, tensor<1x64xi64>) -> tensor<1x64x4096xbf16>
    %60 = sim.view %4 : tensor<1x64xi64> -> tensor<1x64x1xi64>
    %61 = sim.elementwise "cast" %60 : tensor<1x64x1xi64> -> tensor<1x64x1xf32>
    %62 = sim.elementwise "mul" %61, %1 : tensor<1x64x1xf32>, tensor<64xf32> -> tensor<1x64x64xf32>
    %63 = sim.generic "aten.cat"(%62, %62) {flop_count = 0.000000e+00 : f64, byte_count = 6.553600e+04 : f64} : (tensor<1x64x64xf32>, tensor<1x64x64xf32>) -> tensor<1x64x128xf32>
    %64 = sim.elementwise "cos" %63 : tensor<1x64x128xf32> -> tensor<1x64x128xf32>
    %65 = sim.elementwise "mul" %64 : tensor<1x64x128xf32> -> tensor<1x64x128xf32>
    %66 = sim.elementwise "sin" %63 : tensor<1x64x128xf32> -> tensor<1x64x128xf32>
    %67 = sim.elementwise "mul" %66 : tensor<1x64x128xf32> -> tensor<1x64x128xf32>
    %68 = sim.elementwise "cast" %65 : tensor<1x64x128xf32> -> tensor<1x64x128xbf16>
    %69 = sim.elementwise "cast" %67 : tensor<1x64x128xf32> -> tensor<1x64x128xbf16>
    %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, %96, %97, %98 = sim.repeat 32 iter(%59 : tensor<1x64x4096xbf16>) slices(%8, %9, %10, %11, %12, %13, %14, %15, %16 : tensor<32x4096x4096xbf16>, tensor<32x1024x4096xbf16>, tensor<32x1024x4096xbf16>, tensor<32x4096x4096xbf16>, tensor<32x8x4096xbf16>, tensor<32x8x28672x4096xbf16>, tensor<32x8x4096x14336xbf16>, tensor<32x4096xbf16>, tensor<32x4096xbf16>) -> (tensor<1x64x4096xbf16>, tensor<32x1x64x4096xf32>, tensor<32x1x64x1xf32>, tensor<32x1x64x1xf32>, tensor<32x1x64x4096xbf16>, tensor<32x64x4096xbf16>, tensor<32x64x4096xbf16>, tensor<32x64x4096xbf16>, tensor<32x1x64x32x128xbf16>, tensor<32x1x64x8x128xbf16>, tensor<32x1x64x8x128xbf16>, tensor<32x1x64x32x128xbf16>, tensor<32x64x4096xbf16>, tensor<32x1x64x4096xf32>, tensor<32x1x64x1xf32>, tensor<32x1x64x1xf32>, tensor<32x1x64x4096xbf16>, tensor<32x64x4096xbf16>, tensor<32x64x8xf32>, tensor<32x64x2xi64>, tensor<32x64x1xf32>, tensor<32x64x2xf32>, tensor<32x8x16x4096xbf16>, tensor<32x8x16x14336xbf16>, tensor<32x8x16x14336xbf16>, tensor<32x8x16x14336xbf16>, tensor<32x8x16x14336xbf16>, tensor<32x8x16x4096xbf16>, tensor<32x64x2xbf16>) {
    ^bb0(%99: tensor<1x64x4096xbf16>, %100: tensor<4096x4096xbf16>, %101: tensor<1024x4096xbf16>, %102: tensor<1024x4096xbf16>, %103: tensor<4096x4096xbf16>, %104: tensor<8x4096xbf16>, %105: tensor<8x28672x4096xbf16>, %106: tensor<8x4096x14336xbf16>, %107: tensor<4096xbf16>, %108: tensor<4096xbf16>):
      %109 = sim.elementwise "cast" %99 : tensor<1x64x4096xbf16> -> tensor<1x64x4096xf32>
      %110 = sim.elementwise "pow" %109 : tensor<1x64x4096xf32> -> tensor<1x64x4096xf32>
      %111 = sim.reduce "mean" %110 [2] : tensor<1x64x4096xf32> -> tensor<1x64x1xf32>
      %112 = sim.elementwise "add" %111 : tensor<1x64x1xf32> -> tensor<1x64x1xf32>
      %113 = sim.elementwise "rsqrt" %112 : tensor<1x64x1xf32> -> tensor<1x64x1xf32>
      %114 = sim.elementwise "mul" %109, %113 : tensor<1x64x4096xf32>, tensor<1x64x1xf32> -> tensor<1x64x4096xf32>
      %115 = sim.elementwise "cast" %114 : tensor<1x64x4096xf32> -> tensor<1x64x4096xbf16>
      %116 = sim.elementwise "mul" %107, %115 : tensor<4096xbf16>, tensor<1x64x4096xbf16> -> tensor<1x64x4096xbf16>
      %117 = sim.matmul %116, %100 {transpose_rhs} : (tensor<1x64x4096xbf16>, tensor<4096x4096xbf16>) -> tensor<1x64x4096xbf16>
      %118 = sim.matmul %116, %101 {transpose_rhs} : (tensor<1x64x4096xbf16>, tensor<1024x4096xbf16>) -> tensor<1x64x1024xbf16>
      %119 = sim.matmul %116, %102 {transpose_rhs} : (tensor<1x64x4096xbf16>, tensor<1024x4096xbf16>) -> tensor<1x64x1024xbf16>
      %120 = sim.view %117 : tensor<1x64x4096xbf16> -> tensor<1x32x64x128xbf16>
      %121 = sim.view %68 : tensor<1x64x128xbf16> -> tensor<1x1x64x128xbf16>
      %122 = sim.elementwise "mul" %120, %121 : tensor<1x32x64x128xbf16>, tensor<1x1x64x128xbf16> -> tensor<1x32x64x128xbf16>
      %123 = sim.generic "aten.slice"(%117) {flop_count = 0.000000e+00 : f64, byte_count = 0.000000e+00 : f64} : (tensor<1x64x4096xbf16>) -> tensor<1x32x64x64xbf16>
      %124 = sim.elementwise "neg" %123 : tensor<1x32x64x64xbf16> -> tensor<1x32x64x64xbf16>
      %125 = sim.generic "aten.slice"(%117) {flop_count = 0.000000e+00 : f64, byte_count = 0.000000e+00 : f64} : (tensor<1x64x4096xbf16>) -> tensor<1x32x64x64xbf16>
      %126 = sim.generic "aten.cat"(%124, %125) {flop_count = 0.000000e+00 : f64, byte_count = 0x4130000000000000 : f64} : (tensor<1x32x64x64xbf16>, tensor<1x32x64x64xbf16>) -> tensor<1x32x64x128xbf16>
      %127 = sim.view %69 : tensor<1x64x128xbf16> -> tensor<1x1x64x128xbf16>
      %128 = sim.elementwise "mul" %126, %127 : tensor<1x32x64x128xbf16>, tensor<1x1x64x128xbf16> -> tensor<1x32x64x128xbf16>
      %129 = sim.elementwise "add" %122, %128 : tensor<1x32x64x128xbf16>, tensor<1x32x64x128xbf16> -> tensor<1x32x64x128xbf16>
      %130 = sim.view %118 : tensor<1x64x1024xbf16> -> tensor<1x8x64x128xbf16>
      %131 = sim.elementwise "mul" %130, %121 : tensor<1x8x64x128xbf16>, tensor<1x1x64x128xbf16> -> tensor<1x8x64x128xbf16>
      %132 = sim.generic "aten.slice"(%118) {flop_count = 0.000000e+00 : f64, byte_count = 0.000000e+00 : f64} : (tensor<1x64x1024xbf16>) -> tensor<1x8x64x64xbf16>
      %133 = sim.elementwise "neg" %132 : tensor<1x8x64x64xbf16> -> tensor<1x8x64x64xbf16>
      %134 = sim.generic "aten.slice"(%118) {flop_count = 0.000000e+00 : f64, byte_count = 0.000000e+00 : f64} : (tensor<1x64x1024xbf16>) -> tensor<1x8x64x64xbf16>
      %135 = sim.generic "aten.cat"(%133, %134) {flop_count = 0.000000e+00 : f64, byte_count = 2.621440e+05 : f64} : (tensor<1x8x64x64xbf16>, tensor<1x8x64x64xbf16>) -> tensor<1x8x64x128xbf16>
      %136 = sim.elementwise "mul" %135, %127 : tensor<1x8x64x128xbf16>, tensor<1x1x64x128xbf16> -> tensor<1x8x64x128xbf16>
      %137 = sim.elementwise "add" %131, %136 : tensor<1x8x64x128xbf16>, tensor<1x8x64x128xbf16> -> tensor<1x8x64x128xbf16>
      %138 = sim.view %129 : tensor<1x32x64x128xbf16> -> tensor<1x64x32x128xbf16>
      %139 = sim.view %137 : tensor<1x8x64x128xbf16> -> tensor<1x64x8x128xbf16>
      %140 = sim.view %119 : tensor<1x64x1024xbf16> -> tensor<1x64x8x128xbf16>
      %141 = sim.attention %138, %139, %140 {causal} : (tensor<1x64x32x128xbf16>, tensor<1x64x8x128xbf16>, tensor<1x64x8x128xbf16>) -> tensor<1x64x32x128xbf16>
      %142 = sim.view %141 : tensor<1x64x32x128xbf16> -> tensor<1x64x4096xbf16>
      %143 = sim.matmul %142, %103 {transpose_rhs} : (tensor<1x64x4096xbf16>, tensor<4096x4096xbf16>) -> tensor<1x64x4096xbf16>
      %144 = sim.elementwise "add" %99, %143 : tensor<1x64x4096xbf16>, tensor<1x64x4096xbf16> -> tensor<1x64x4096xbf16>
      %145 = sim.elementwise "cast" %144 : tensor<1x64x4096xbf16> -> tensor<1x64x4096xf32>
      %146 = sim.elementwise "pow" %145 : tensor<1x64x4096xf32> -> tensor<1x64x4096xf32>
      %147 = sim.reduce "mean" %146 [2] : tensor<1x64x4096xf32> -> tensor<1x64x1xf32>
      %148 = sim.elementwise "add" %147 : tensor<1x64x1xf32> -> tensor<1x64x1xf32>
      %149 = sim.elementwise "rsqrt" %148 : tensor<1x64x1xf32> -> tensor<1x64x1xf32>
      %150 = sim.elementwise "mul" %145, %149 : tensor<1x64x4096xf32>, tensor<1x64x1xf32> -> tensor<1x64x4096xf32>
      %151 = sim.elementwise "cast" %150 : tensor<1x64x4096xf32> -> tensor<1x64x4096xbf16>
      %152 = sim.elementwise "mul" %108, %151 : tensor<4096xbf16>, tensor<1x64x4096xbf16> -> tensor<1x64x4096xbf16>
      %153 = sim.matmul %152, %104 {transpose_rhs} : (tensor<1x64x4096xbf16>, tensor<8x4096xbf16>) -> tensor<1x64x8xbf16>
      %154 = sim.view %153 : tensor<1x64x8xbf16> -> tensor<64x8xbf16>
      %155 = sim.elementwise "cast" %154 : tensor<64x8xbf16> -> tensor<64x8xf32>
      %156 = sim.softmax %155 dim 1 : tensor<64x8xf32>
      %157, %158 = sim.topk %156 k = 2 : tensor<64x8xf32> -> (tensor<64x2xf32>, tensor<64x2xi64>)
      %159 = sim.reduce "sum" %157 [1] : tensor<64x2xf32> -> tensor<64x1xf32>
      %160 = sim.elementwise "div" %157, %159 : tensor<64x2xf32>, tensor<64x1xf32> -> tensor<64x2xf32>
      %161 = sim.view %152 : tensor<1x64x4096xbf16> -> tensor<64x4096xbf16>
      %162 = sim.moe_dispatch %161, %158 : (tensor<64x4096xbf16>, tensor<64x2xi64>) -> tensor<8x16x4096xbf16>
      %163 = sim.matmul %162, %105 {transpose_rhs} : (tensor<8x16x4096xbf16>, tensor<8x28672x4096xbf16>) -> tensor<8x16x28672xbf16>
      %164 = sim.generic "aten.split"(%163) {flop_count = 0.000000e+00 : f64, byte_count = 0.000000e+00 : f64} : (tensor<8x16x28672xbf16>) -> tensor<8x16x14336xbf16>
      %165 = sim.elementwise "silu" %164 : tensor<8x16x14336xbf16> -> tensor<8x16x14336xbf16>
      %166 = sim.generic "aten.split"(%163) {flop_count = 0.000000e+00 : f64, byte_count = 0.000000e+00 : f64} : (tensor<8x16x28672xbf16>) -> tensor<8x16x14336xbf16>
      %167 = sim.elementwise "mul" %165, %166 : tensor<8x16x14336xbf16>, tensor<8x16x14336xbf16> -> tensor<8x16x14336xbf16>
      %168 = sim.matmul %167, %106 {transpose_rhs} : (tensor<8x16x14336xbf16>, tensor<8x4096x14336xbf16>) -> tensor<8x16x4096xbf16>
      %169 = sim.elementwise "cast" %160 : tensor<64x2xf32> -> tensor<64x2xbf16>
      %170 = sim.moe_combine %168, %158 weights %169 : tensor<64x2xbf16> : (tensor<8x16x4096xbf16>, tensor<64x2xi64>) -> tensor<64x4096xbf16>
      %171 = sim.view %170 : tensor<64x4096xbf16> -> tensor<1x64x4096xbf16>
      %172 = sim.elementwise "add" %144, %171 : tensor<1x64x4096xbf16>, tensor<1x64x4096xbf16> -> tensor<1x64x4096xbf16>
      %173 = sim.view %116 : tensor<1x64x4096xbf16> -> tensor<64x4096xbf16>
      %174 = sim.view %116 : tensor<1x64x4096xbf16> -> tensor<64x4096xbf16>
      %175 = sim.view %116 : tensor<1x64x4096xbf16> -> tensor<64x4096xbf16>
      %176 = sim.view %141 : tensor<1x64x32x128xbf16> -> tensor<64x4096xbf16>
      %177 = sim.view %152 : tensor<1x64x4096xbf16> -> tensor<64x4096xbf16>
      sim.yield %172, %109, %113, %113, %115, %173, %174, %175, %138, %139, %140, %141, %176, %145, %149, %149, %151, %177, %156, %158, %159, %157, %162, %164, %166, %165, %167, %168, %169 : tensor<1x64x4096xbf16>, tensor<1x64x4096xf32>, tensor<1x64x1xf32>, tensor<1x64x1xf32>, tensor<1x64x4096xbf16>, tensor<64x4096xbf16>, tensor<64x4096xbf16>, tensor<64x4096xbf16>, tensor<1x64x32x128xbf16>, tensor<1x64x8x128xbf16>, tensor<1x64x8x128xbf16>, tensor<1x64x32x128xbf16>, tensor<64x4096xbf16>, tensor<1x64x4096xf32>, tensor<1x64x1xf32>, tensor<1x64x1xf32>, tensor<1x64x4096xbf16>, tensor<64x4096xbf16>, tensor<64x8xf32>, tensor<64x2xi64>, tensor<64x1xf32>, tensor<64x2xf32>, tensor<8x16x4096xbf16>, tensor<8x16x14336xbf16>, tensor<8x16x14336xbf16>, tensor<8x16x14336xbf16>, tensor<8x16x14336xbf16>, tensor<8x16x4096xbf16>, tensor<64x2xbf16>
    }
    %178 = sim.elementwise "cast" %70 : tensor<1x64x4096xbf16> -> tensor<1x64x4096xf32>
    %179 = sim.elementwise "pow" %178 : tensor<1x64x4096xf32> -> tensor<1x64x4096xf32>
    %180 = sim.reduce "mean" %179 [2] : tensor<1x64x4096xf32> -> tensor<1x64x1xf32>
    %181 = sim.elementwise "add" %180 : tensor<1x64x1xf32> -> tensor<1x64x1xf32>
    %182 = sim.elementwise "rsqrt" %181 : tensor<1x64x1xf32> -> tensor<1x64x1xf32>
    %183 = sim.elementwise "mul" %178, %182 : tensor<1x64x4096xf32>, tensor<1x64x1xf32> -> tensor<1x64x4096xf32>
    %184 = sim.elementwise "cast" %183 : tensor<1x64x4096xf32> -> tensor<1x64x4096xbf16>
    %185 = sim.elementwise "mul" %5, %184 : tensor<4096xbf16>, tensor<1x64x4096xbf16> -> tensor<1x64x4096xbf16>
    %186 = sim.matmul %185, %6 {transpose_rhs} : (tensor<1x64x4096xbf16>, tensor<32000x4096xbf16>) -> tensor<1x64x32000xbf16>
    %187 = sim.elementwise "cast" %186 : tensor<1x64x32000xbf16> -> tensor<1x64x32000xf32>
    %188 = sim.view %187 : tensor<1x64x32000xf32> -> tensor<64x32000xf32>
    %189 = sim.generic "aten._log_softmax"(%188) {flop_count = 2.048000e+06 : f64, byte_count = 1.638400e+07 : f64} : (tensor<64x32000xf32>) -> tensor<64x32000xf32>
    %190 = sim.view %7 : tensor<1x64xi64> -> tensor<64xi64>
    %191, %192 = sim.generic "aten.nll_loss_forward"(%189, %190) {flop_count = 2.000000e+00 : f64, byte_count = 8.192520e+06 : f64} : (tensor<64x32000xf32>, tensor<64xi64>) -> (tensor<f32>, tensor<f32>)
    %193 = sim.view %185 : tensor<1x64x4096xbf16> -> tensor<64x4096xbf16>
    sim.yield %191, %3, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, %96, %97, %98, %178, %182, %182, %184, %193, %190, %189, %189, %192, %68, %69 : tensor<f32>, tensor<1x64xi64>, tensor<32x1x64x4096xf32>, tensor<32x1x64x1xf32>, tensor<32x1x64x1xf32>, tensor<32x1x64x4096xbf16>, tensor<32x64x4096xbf16>, tensor<32x64x4096xbf16>, tensor<32x64x4096xbf16>, tensor<32x1x64x32x128xbf16>, tensor<32x1x64x8x128xbf16>, tensor<32x1x64x8x128xbf16>, tensor<32x1x64x32x128xbf16>, tensor<32x64x4096xbf16>, tensor<32x1x64x4096xf32>, tensor<32x1x64x1xf32>, tensor<32x1x64x1xf32>, tensor<32x1x64x4096xbf16>, tensor<32x64x4096xbf16>, tensor<32x64x8xf32>, tensor<32x64x2xi64>, tensor<32x64x1xf32>, tensor<32x64x2xf32>, tensor<32x8x16x4096xbf16>, tensor<32x8x16x14336xbf16>, tensor<32x8x16x14336xbf16>, tensor<32x8x16x14336xbf16>, tensor<32x8x16x14336xbf16>, tensor<32x8x16x4096xbf16>, tensor<32x64x2xbf16>, tensor<1x64x4096xf32>, tensor<1x64x1xf32>, tensor<1x64x1xf32>, tensor<1x64x4096xbf16>, tensor<64x4096xbf16>, tensor<64xi64>, tensor<64x32000xf32>, tensor<64x32000xf32>, tensor<f32>, tensor<1x64x128xbf16>, tensor<1x64x128xbf16>
  }
  %194, %195, %196, %197, %198, %199, %200, %201, %202, %203, %204, %205 = sim.phase "backward" -> tensor<32000x4096xbf16>, tensor<4096xbf16>, tensor<32000x4096xbf16>, tensor<32x4096x4096xbf16>, tensor<32x1024x4096xbf16>, tensor<32x1024x4096xbf16>, tensor<32x4096x4096xbf16>, tensor<32x8x4096xbf16>, tensor<32x8x28672x4096xbf16>, tensor<32x8x4096x14336xbf16>, tensor<32x4096xbf16>, tensor<32x4096xbf16> {
    %206 = sim.generic "aten.nll_loss_backward"(%17, %54, %53, %56) {flop_count = 2.048000e+06 : f64, byte_count = 0x416F404100000000 : f64} : (tensor<f32>, tensor<64x32000xf32>, tensor<64xi64>, tensor<f32>) -> tensor<64x32000xf32>
    %207 = sim.generic "aten._log_softmax_backward_data"(%206, %55) {flop_count = 2.048000e+06 : f64, byte_count = 2.457600e+07 : f64} : (tensor<64x32000xf32>, tensor<64x32000xf32>) -> tensor<64x32000xf32>
    %208 = sim.view %207 : tensor<64x32000xf32> -> tensor<1x64x32000xf32>
    %209 = sim.elementwise "cast" %208 : tensor<1x64x32000xf32> -> tensor<1x64x32000xbf16>
    %210 = sim.view %209 : tensor<1x64x32000xbf16> -> tensor<64x32000xbf16>
    %211 = sim.matmul %210, %52 {transpose_lhs} : (tensor<64x32000xbf16>, tensor<64x4096xbf16>) -> tensor<32000x4096xbf16>
    %212 = sim.matmul %209, %6 : (tensor<1x64x32000xbf16>, tensor<32000x4096xbf16>) -> tensor<1x64x4096xbf16>
    %213 = sim.elementwise "mul" %212, %5 : tensor<1x64x4096xbf16>, tensor<4096xbf16> -> tensor<1x64x4096xbf16>
    %214 = sim.elementwise "mul" %212, %51 : tensor<1x64x4096xbf16>, tensor<1x64x4096xbf16> -> tensor<1x64x4096xbf16>
    %215 = sim.reduce "sum" %214 [0, 1] : tensor<1x64x4096xbf16> -> tensor<1x1x4096xbf16>
    %216 = sim.elementwise "cast" %213 : tensor<1x64x4096xbf16> -> tensor<1x64x4096xf32>
    %217 = sim.elementwise "mul" %216, %48 : tensor<1x64x4096xf32>, tensor<1x64x4096xf32> -> tensor<1x64x4096xf32>
    %218 = sim.elementwise "mul" %216, %49 : tensor<1x64x4096xf32>, tensor<1x64x1xf32> -> tensor<1x64x4096xf32>
    %219 = sim.reduce "sum" %217 [2] : tensor<1x64x4096xf32> -> tensor<1x64x1xf32>
    %220 = sim.elementwise "pow" %50 : tensor<1x64x1xf32> -> tensor<1x64x1xf32>
    %221 = sim.elementwise "mul" %219 : tensor<1x64x1xf32> -> tensor<1x64x1xf32>
    %222 = sim.elementwise "mul" %221, %220 : tensor<1x64x1xf32>, tensor<1x64x1xf32> -> tensor<1x64x1xf32>
    %223 = sim.elementwise "div" %222 : tensor<1x64x1xf32> -> tensor<1x64x4096xf32>
    %224 = sim.elementwise "pow" %48 : tensor<1x64x4096xf32> -> tensor<1x64x4096xf32>
    %225 = sim.elementwise "mul" %224 : tensor<1x64x4096xf32> -> tensor<1x64x4096xf32>
    %226 = sim.elementwise "mul" %223, %225 : tensor<1x64x4096xf32>, tensor<1x64x4096xf32> -> tensor<1x64x4096xf32>
    %227 = sim.elementwise "add" %218, %226 : tensor<1x64x4096xf32>, tensor<1x64x4096xf32> -> tensor<1x64x4096xf32>
    %228 = sim.elementwise "cast" %227 : tensor<1x64x4096xf32> -> tensor<1x64x4096xbf16>
    %229 = sim.view %215 : tensor<1x1x4096xbf16> -> tensor<4096xbf16>
    %230, %231, %232, %233, %234, %235, %236, %237, %238, %239 = sim.repeat 32 iter(%228 : tensor<1x64x4096xbf16>) slices(%8, %9, %10, %11, %12, %13, %14, %15, %16, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47 : tensor<32x4096x4096xbf16>, tensor<32x1024x4096xbf16>, tensor<32x1024x4096xbf16>, tensor<32x4096x4096xbf16>, tensor<32x8x4096xbf16>, tensor<32x8x28672x4096xbf16>, tensor<32x8x4096x14336xbf16>, tensor<32x4096xbf16>, tensor<32x4096xbf16>, tensor<32x1x64x4096xf32>, tensor<32x1x64x1xf32>, tensor<32x1x64x1xf32>, tensor<32x1x64x4096xbf16>, tensor<32x64x4096xbf16>, tensor<32x64x4096xbf16>, tensor<32x64x4096xbf16>, tensor<32x1x64x32x128xbf16>, tensor<32x1x64x8x128xbf16>, tensor<32x1x64x8x128xbf16>, tensor<32x1x64x32x128xbf16>, tensor<32x64x4096xbf16>, tensor<32x1x64x4096xf32>, tensor<32x1x64x1xf32>, tensor<32x1x64x1xf32>, tensor<32x1x64x4096xbf16>, tensor<32x64x4096xbf16>, tensor<32x64x8xf32>, tensor<32x64x2xi64>, tensor<32x64x1xf32>, tensor<32x64x2xf32>, tensor<32x8x16x4096xbf16>, tensor<32x8x16x14336xbf16>, tensor<32x8x16x14336xbf16>, tensor<32x8x16x14336xbf16>, tensor<32x8x16x14336xbf16>, tensor<32x8x16x4096xbf16>, tensor<32x64x2xbf16>) {reverse} -> (tensor<1x64x4096xbf16>, tensor<32x4096x4096xbf16>, tensor<32x1024x4096xbf16>, tensor<32x1024x4096xbf16>, tensor<32x4096x4096xbf16>, tensor<32x8x4096xbf16>, tensor<32x8x28672x4096xbf16>, tensor<32x8x4096x14336xbf16>, tensor<32x4096xbf16>, tensor<32x4096xbf16>) {
    ^bb0(%240: tensor<1x64x4096xbf16>, %241: tensor<4096x4096xbf16>, %242: tensor<1024x4096xbf16>, %243: tensor<1024x4096xbf16>, %244: tensor<4096x4096xbf16>, %245: tensor<8x4096xbf16>, %246: tensor<8x28672x4096xbf16>, %247: tensor<8x4096x14336xbf16>, %248: tensor<4096xbf16>, %249: tensor<4096xbf16>, %250: tensor<1x64x4096xf32>, %251: tensor<1x64x1xf32>, %252: tensor<1x64x1xf32>, %253: tensor<1x64x4096xbf16>, %254: tensor<64x4096xbf16>, %255: tensor<64x4096xbf16>, %256: tensor<64x4096xbf16>, %257: tensor<1x64x32x128xbf16>, %258: tensor<1x64x8x128xbf16>, %259: tensor<1x64x8x128xbf16>, %260: tensor<1x64x32x128xbf16>, %261: tensor<64x4096xbf16>, %262: tensor<1x64x4096xf32>, %263: tensor<1x64x1xf32>, %264: tensor<1x64x1xf32>, %265: tensor<1x64x4096xbf16>, %266: tensor<64x4096xbf16>, %267: tensor<64x8xf32>, %268: tensor<64x2xi64>, %269: tensor<64x1xf32>, %270: tensor<64x2xf32>, %271: tensor<8x16x4096xbf16>, %272: tensor<8x16x14336xbf16>, %273: tensor<8x16x14336xbf16>, %274: tensor<8x16x14336xbf16>, %275: tensor<8x16x14336xbf16>, %276: tensor<8x16x4096xbf16>, %277: tensor<64x2xbf16>):
      %278 = sim.view %240 : tensor<1x64x4096xbf16> -> tensor<64x4096xbf16>
      %279 = sim.moe_dispatch %278, %268 : (tensor<64x4096xbf16>, tensor<64x2xi64>) -> tensor<8x16x4096xbf16>
      %280 = sim.generic "moe_combine_weight_grad"(%276, %278, %268) {flop_count = 0x4130000000000000 : f64, byte_count = 0x4138050000000000 : f64} : (tensor<8x16x4096xbf16>, tensor<64x4096xbf16>, tensor<64x2xi64>) -> tensor<64x2xbf16>
      %281 = sim.elementwise "cast" %280 : tensor<64x2xbf16> -> tensor<64x2xf32>
      %282 = sim.matmul %275, %279 {transpose_lhs} : (tensor<8x16x14336xbf16>, tensor<8x16x4096xbf16>) -> tensor<8x14336x4096xbf16>
      %283 = sim.matmul %279, %247 : (tensor<8x16x4096xbf16>, tensor<8x4096x14336xbf16>) -> tensor<8x16x14336xbf16>
      %284 = sim.elementwise "mul" %283, %274 : tensor<8x16x14336xbf16>, tensor<8x16x14336xbf16> -> tensor<8x16x14336xbf16>
      %285 = sim.elementwise "mul" %283, %273 : tensor<8x16x14336xbf16>, tensor<8x16x14336xbf16> -> tensor<8x16x14336xbf16>
      %286 = sim.elementwise "silu_grad" %285, %272 : tensor<8x16x14336xbf16>, tensor<8x16x14336xbf16> -> tensor<8x16x14336xbf16>
      %287 = sim.generic "aten.cat"(%286, %284) {flop_count = 0.000000e+00 : f64, byte_count = 0x416C000000000000 : f64} : (tensor<8x16x14336xbf16>, tensor<8x16x14336xbf16>) -> tensor<8x16x28672xbf16>
      %288 = sim.matmul %271, %287 {transpose_lhs} : (tensor<8x16x4096xbf16>, tensor<8x16x28672xbf16>) -> tensor<8x4096x28672xbf16>
      %289 = sim.matmul %287, %246 : (tensor<8x16x28672xbf16>, tensor<8x28672x4096xbf16>) -> tensor<8x16x4096xbf16>
      %290 = sim.moe_combine %289, %268 : (tensor<8x16x4096xbf16>, tensor<64x2xi64>) -> tensor<64x4096xbf16>
      %291 = sim.elementwise "div" %270, %269 : tensor<64x2xf32>, tensor<64x1xf32> -> tensor<64x2xf32>
      %292 = sim.elementwise "div" %291, %269 : tensor<64x2xf32>, tensor<64x1xf32> -> tensor<64x2xf32>
      %293 = sim.elementwise "neg" %281 : tensor<64x2xf32> -> tensor<64x2xf32>
      %294 = sim.elementwise "mul" %293, %292 : tensor<64x2xf32>, tensor<64x2xf32> -> tensor<64x2xf32>
      %295 = sim.elementwise "div" %281, %269 : tensor<64x2xf32>, tensor<64x1xf32> -> tensor<64x2xf32>
      %296 = sim.reduce "sum" %294 [1] : tensor<64x2xf32> -> tensor<64x1xf32>
      %297 = sim.elementwise "add" %295, %296 : tensor<64x2xf32>, tensor<64x1xf32> -> tensor<64x2xf32>
      %298 = sim.generic "aten.new_zeros"() {flop_count = 0.000000e+00 : f64, byte_count = 2.048000e+03 : f64} : () -> tensor<64x8xf32>
      %299 = sim.generic "aten.scatter"(%298, %268, %297) {flop_count = 0.000000e+00 : f64, byte_count = 5.632000e+03 : f64} : (tensor<64x8xf32>, tensor<64x2xi64>, tensor<64x2xf32>) -> tensor<64x8xf32>
      %300 = sim.generic "aten._softmax_backward_data"(%299, %267) {flop_count = 5.120000e+02 : f64, byte_count = 6.144000e+03 : f64} : (tensor<64x8xf32>, tensor<64x8xf32>) -> tensor<64x8xf32>
      %301 = sim.elementwise "cast" %300 : tensor<64x8xf32> -> tensor<64x8xbf16>
      %302 = sim.matmul %301, %266 {transpose_lhs} : (tensor<64x8xbf16>, tensor<64x4096xbf16>) -> tensor<8x4096xbf16>
      %303 = sim.matmul %301, %245 : (tensor<64x8xbf16>, tensor<8x4096xbf16>) -> tensor<64x4096xbf16>
      %304 = sim.elementwise "add" %290, %303 : tensor<64x4096xbf16>, tensor<64x4096xbf16> -> tensor<64x4096xbf16>
      %305 = sim.view %304 : tensor<64x4096xbf16> -> tensor<1x64x4096xbf16>
      %306 = sim.elementwise "mul" %305, %249 : tensor<1x64x4096xbf16>, tensor<4096xbf16> -> tensor<1x64x4096xbf16>
      %307 = sim.elementwise "mul" %305, %265 : tensor<1x64x4096xbf16>, tensor<1x64x4096xbf16> -> tensor<1x64x4096xbf16>
      %308 = sim.reduce "sum" %307 [0, 1] : tensor<1x64x4096xbf16> -> tensor<1x1x4096xbf16>
      %309 = sim.elementwise "cast" %306 : tensor<1x64x4096xbf16> -> tensor<1x64x4096xf32>
      %310 = sim.elementwise "mul" %309, %262 : tensor<1x64x4096xf32>, tensor<1x64x4096xf32> -> tensor<1x64x4096xf32>
      %311 = sim.elementwise "mul" %309, %263 : tensor<1x64x4096xf32>, tensor<1x64x1xf32> -> tensor<1x64x4096xf32>
      %312 = sim.reduce "sum" %310 [2] : tensor<1x64x4096xf32> -> tensor<1x64x1xf32>
      %313 = sim.elementwise "pow" %264 : tensor<1x64x1xf32> -> tensor<1x64x1xf32>
      %314 = sim.elementwise "mul" %312 : tensor<1x64x1xf32> -> tensor<1x64x1xf32>
      %315 = sim.elementwise "mul" %314, %313 : tensor<1x64x1xf32>, tensor<1x64x1xf32> -> tensor<1x64x1xf32>
      %316 = sim.elementwise "div" %315 : tensor<1x64x1xf32> -> tensor<1x64x4096xf32>
      %317 = sim.elementwise "pow" %262 : tensor<1x64x4096xf32> -> tensor<1x64x4096xf32>
      %318 = sim.elementwise "mul" %317 : tensor<1x64x4096xf32> -> tensor<1x64x4096xf32>
      %319 = sim.elementwise "mul" %316, %318 : tensor<1x64x4096xf32>, tensor<1x64x4096xf32> -> tensor<1x64x4096xf32>
      %320 = sim.elementwise "add" %311, %319 : tensor<1x64x4096xf32>, tensor<1x64x4096xf32> -> tensor<1x64x4096xf32>
      %321 = sim.elementwise "cast" %320 : tensor<1x64x4096xf32> -> tensor<1x64x4096xbf16>
      %322 = sim.elementwise "add" %240, %321 : tensor<1x64x4096xbf16>, tensor<1x64x4096xbf16> -> tensor<1x64x4096xbf16>
      %323 = sim.view %322 : tensor<1x64x4096xbf16> -> tensor<64x4096xbf16>
      %324 = sim.matmul %323, %261 {transpose_lhs} : (tensor<64x4096xbf16>, tensor<64x4096xbf16>) -> tensor<4096x4096xbf16>
      %325 = sim.matmul %322, %244 : (tensor<1x64x4096xbf16>, tensor<4096x4096xbf16>) -> tensor<1x64x4096xbf16>
      %326 = sim.view %325 : tensor<1x64x4096xbf16> -> tensor<1x64x32x128xbf16>
      %327, %328, %329 = sim.attention_grad %257, %258, %259, %260, %326 {causal} : (tensor<1x64x32x128xbf16>, tensor<1x64x8x128xbf16>, tensor<1x64x8x128xbf16>, tensor<1x64x32x128xbf16>, tensor<1x64x32x128xbf16>) -> (tensor<1x64x32x128xbf16>, tensor<1x64x8x128xbf16>, tensor<1x64x8x128xbf16>)
      %330 = sim.view %328 : tensor<1x64x8x128xbf16> -> tensor<1x8x64x128xbf16>
      %331 = sim.view %58 : tensor<1x64x128xbf16> -> tensor<1x1x64x128xbf16>
      %332 = sim.elementwise "mul" %330, %331 : tensor<1x8x64x128xbf16>, tensor<1x1x64x128xbf16> -> tensor<1x8x64x128xbf16>
      %333 = sim.generic "aten.slice"(%332) {flop_count = 0.000000e+00 : f64, byte_count = 0.000000e+00 : f64} : (tensor<1x8x64x128xbf16>) -> tensor<1x8x64x64xbf16>
      %334 = sim.elementwise "neg" %333 : tensor<1x8x64x64xbf16> -> tensor<1x8x64x64xbf16>
      %335 = sim.generic "aten.slice_backward"(%334) {flop_count = 0.000000e+00 : f64, byte_count = 1.966080e+05 : f64} : (tensor<1x8x64x64xbf16>) -> tensor<1x8x64x128xbf16>
      %336 = sim.generic "aten.slice"(%332) {flop_count = 0.000000e+00 : f64, byte_count = 0.000000e+00 : f64} : (tensor<1x8x64x128xbf16>) -> tensor<1x8x64x64xbf16>
      %337 = sim.generic "aten.slice_backward"(%336) {flop_count = 0.000000e+00 : f64, byte_count = 1.966080e+05 : f64} : (tensor<1x8x64x64xbf16>) -> tensor<1x8x64x128xbf16>
      %338 = sim.elementwise "add" %335, %337 : tensor<1x8x64x128xbf16>, tensor<1x8x64x128xbf16> -> tensor<1x8x64x128xbf16>
      %339 = sim.view %57 : tensor<1x64x128xbf16> -> tensor<1x1x64x128xbf16>
      %340 = sim.elementwise "mul" %330, %339 : tensor<1x8x64x128xbf16>, tensor<1x1x64x128xbf16> -> tensor<1x8x64x128xbf16>
      %341 = sim.elementwise "add" %338, %340 : tensor<1x8x64x128xbf16>, tensor<1x8x64x128xbf16> -> tensor<1x8x64x128xbf16>
      %342 = sim.view %327 : tensor<1x64x32x128xbf16> -> tensor<1x32x64x128xbf16>
      %343 = sim.elementwise "mul" %342, %331 : tensor<1x32x64x128xbf16>, tensor<1x1x64x128xbf16> -> tensor<1x32x64x128xbf16>
      %344 = sim.generic "aten.slice"(%343) {flop_count = 0.000000e+00 : f64, byte_count = 0.000000e+00 : f64} : (tensor<1x32x64x128xbf16>) -> tensor<1x32x64x64xbf16>
      %345 = sim.elementwise "neg" %344 : tensor<1x32x64x64xbf16> -> tensor<1x32x64x64xbf16>
      %346 = sim.generic "aten.slice_backward"(%345) {flop_count = 0.000000e+00 : f64, byte_count = 7.864320e+05 : f64} : (tensor<1x32x64x64xbf16>) -> tensor<1x32x64x128xbf16>
      %347 = sim.generic "aten.slice"(%343) {flop_count = 0.000000e+00 : f64, byte_count = 0.000000e+00 : f64} : (tensor<1x32x64x128xbf16>) -> tensor<1x32x64x64xbf16>
      %348 = sim.generic "aten.slice_backward"(%347) {flop_count = 0.000000e+00 : f64, byte_count = 7.864320e+05 : f64} : (tensor<1x32x64x64xbf16>) -> tensor<1x32x64x128xbf16>
      %349 = sim.elementwise "add" %346, %348 : tensor<1x32x64x128xbf16>, tensor<1x32x64x128xbf16> -> tensor<1x32x64x128xbf16>
      %350 = sim.elementwise "mul" %342, %339 : tensor<1x32x64x128xbf16>, tensor<1x1x64x128xbf16> -> tensor<1x32x64x128xbf16>
      %351 = sim.elementwise "add" %349, %350 : tensor<1x32x64x128xbf16>, tensor<1x32x64x128xbf16> -> tensor<1x32x64x128xbf16>
      %352 = sim.view %329 : tensor<1x64x8x128xbf16> -> tensor<64x1024xbf16>
      %353 = sim.matmul %352, %256 {transpose_lhs} : (tensor<64x1024xbf16>, tensor<64x4096xbf16>) -> tensor<1024x4096xbf16>
      %354 = sim.matmul %352, %243 : (tensor<64x1024xbf16>, tensor<1024x4096xbf16>) -> tensor<64x4096xbf16>
      %355 = sim.view %341 : tensor<1x8x64x128xbf16> -> tensor<64x1024xbf16>
      %356 = sim.matmul %355, %255 {transpose_lhs} : (tensor<64x1024xbf16>, tensor<64x4096xbf16>) -> tensor<1024x4096xbf16>
      %357 = sim.matmul %355, %242 : (tensor<64x1024xbf16>, tensor<1024x4096xbf16>) -> tensor<64x4096xbf16>
      %358 = sim.view %354 : tensor<64x4096xbf16> -> tensor<1x64x4096xbf16>
      %359 = sim.view %357 : tensor<64x4096xbf16> -> tensor<1x64x4096xbf16>
      %360 = sim.elementwise "add" %358, %359 : tensor<1x64x4096xbf16>, tensor<1x64x4096xbf16> -> tensor<1x64x4096xbf16>
      %361 = sim.view %351 : tensor<1x32x64x128xbf16> -> tensor<64x4096xbf16>
      %362 = sim.matmul %361, %254 {transpose_lhs} : (tensor<64x4096xbf16>, tensor<64x4096xbf16>) -> tensor<4096x4096xbf16>
      %363 = sim.matmul %361, %241 : (tensor<64x4096xbf16>, tensor<4096x4096xbf16>) -> tensor<64x4096xbf16>
      %364 = sim.view %363 : tensor<64x4096xbf16> -> tensor<1x64x4096xbf16>
      %365 = sim.elementwise "add" %360, %364 : tensor<1x64x4096xbf16>, tensor<1x64x4096xbf16> -> tensor<1x64x4096xbf16>
      %366 = sim.elementwise "mul" %365, %248 : tensor<1x64x4096xbf16>, tensor<4096xbf16> -> tensor<1x64x4096xbf16>
      %367 = sim.elementwise "mul" %365, %253 : tensor<1x64x4096xbf16>, tensor<1x64x4096xbf16> -> tensor<1x64x4096xbf16>
      %368 = sim.reduce "sum" %367 [0, 1] : tensor<1x64x4096xbf16> -> tensor<1x1x4096xbf16>
      %369 = sim.elementwise "cast" %366 : tensor<1x64x4096xbf16> -> tensor<1x64x4096xf32>
      %370 = sim.elementwise "mul" %369, %250 : tensor<1x64x4096xf32>, tensor<1x64x4096xf32> -> tensor<1x64x4096xf32>
      %371 = sim.elementwise "mul" %369, %251 : tensor<1x64x4096xf32>, tensor<1x64x1xf32> -> tensor<1x64x4096xf32>
      %372 = sim.reduce "sum" %370 [2] : tensor<1x64x4096xf32> -> tensor<1x64x1xf32>
      %373 = sim.elementwise "pow" %252 : tensor<1x64x1xf32> -> tensor<1x64x1xf32>
      %374 = sim.elementwise "mul" %372 : tensor<1x64x1xf32> -> tensor<1x64x1xf32>
      %375 = sim.elementwise "mul" %374, %373 : tensor<1x64x1xf32>, tensor<1x64x1xf32> -> tensor<1x64x1xf32>
      %376 = sim.elementwise "div" %375 : tensor<1x64x1xf32> -> tensor<1x64x4096xf32>
      %377 = sim.elementwise "pow" %250 : tensor<1x64x4096xf32> -> tensor<1x64x4096xf32>
      %378 = sim.elementwise "mul" %377 : tensor<1x64x4096xf32> -> tensor<1x64x4096xf32>
      %379 = sim.elementwise "mul" %376, %378 : tensor<1x64x4096xf32>, tensor<1x64x4096xf32> -> tensor<1x64x4096xf32>
      %380 = sim.elementwise "add" %371, %379 : tensor<1x64x4096xf32>, tensor<1x64x4096xf32> -> tensor<1x64x4096xf32>
      %381 = sim.elementwise "cast" %380 : tensor<1x64x4096xf32> -> tensor<1x64x4096xbf16>
      %382 = sim.elementwise "add" %322, %381 : tensor<1x64x4096xbf16>, tensor<1x64x4096xbf16> -> tensor<1x64x4096xbf16>
      %383 = sim.view %288 : tensor<8x4096x28672xbf16> -> tensor<8x28672x4096xbf16>
      %384 = sim.view %282 : tensor<8x14336x4096xbf16> -> tensor<8x4096x14336xbf16>
      %385 = sim.view %368 : tensor<1x1x4096xbf16> -> tensor<4096xbf16>
      %386 = sim.view %308 : tensor<1x1x4096xbf16> -> tensor<4096xbf16>
      sim.yield %382, %362, %356, %353, %324, %302, %383, %384, %385, %386 : tensor<1x64x4096xbf16>, tensor<4096x4096xbf16>, tensor<1024x4096xbf16>, tensor<1024x4096xbf16>, tensor<4096x4096xbf16>, tensor<8x4096xbf16>, tensor<8x28672x4096xbf16>, tensor<8x4096x14336xbf16>, tensor<4096xbf16>, tensor<4096xbf16>
    }
    %387 = sim.generic "aten.embedding_dense_backward"(%230, %19) {flop_count = 0.000000e+00 : f64, byte_count = 0x41AF500400000000 : f64} : (tensor<1x64x4096xbf16>, tensor<1x64xi64>) -> tensor<32000x4096xbf16>
    sim.yield %387, %229, %211, %231, %232, %233, %234, %235, %236, %237, %238, %239 : tensor<32000x4096xbf16>, tensor<4096xbf16>, tensor<32000x4096xbf16>, tensor<32x4096x4096xbf16>, tensor<32x1024x4096xbf16>, tensor<32x1024x4096xbf16>, tensor<32x4096x4096xbf16>, tensor<32x8x4096xbf16>, tensor<32x8x28672x4096xbf16>, tensor<32x8x4096x14336xbf16>, tensor<32x4096xbf16>, tensor<32x4096xbf16>
  }
  sim.phase "optimizer" {
    sim.optimizer_step "adamw"(%0, %5, %6, %8, %9, %10, %11, %12, %13, %14, %15, %16 : tensor<32000x4096xbf16>, tensor<4096xbf16>, tensor<32000x4096xbf16>, tensor<32x4096x4096xbf16>, tensor<32x1024x4096xbf16>, tensor<32x1024x4096xbf16>, tensor<32x4096x4096xbf16>, tensor<32x8x4096xbf16>, tensor<32x8x28672x4096xbf16>, tensor<32x8x4096x14336xbf16>, tensor<32x4096xbf16>, tensor<32x4096xbf16>) grads(%194, %195, %196, %197, %198, %199, %200, %201, %202, %203, %204, %205 : tensor<32000x4096xbf16>, tensor<4096xbf16>, tensor<32000x4096xbf16>, tensor<32x4096x4096xbf16>, tensor<32x1024x4096xbf16>, tensor<32x1024x4096xbf16>, tensor<32x4096x4096xbf16>, tensor<32x8x4096xbf16>, tensor<32x8x28672x4096xbf16>, tensor<32x8x4096x14336xbf16>, tensor<32x4096xbf16>, tensor<32x4096xbf16>)
    sim.yield
  }
}
