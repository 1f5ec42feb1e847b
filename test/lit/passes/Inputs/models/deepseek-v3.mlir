// The torch frontend's import of deepseek-v3 (train, batch 1, seq_len 384): every layer's
// weights stacked in one sim.repeat. Regenerate with
//   charon_ir.frontend.import_model("deepseek-v3", seq_len=384, batch=1, mode="train")
builtin.module attributes {sim.model = "deepseek-v3", sim.mode = "train", sim.seq_len = 384 : i64, sim.batch = 1 : i64, sim.dtype = "bf16", sim.frontend = "charon-frontend-1", sim.hf_param_count = 671026404352 : i64, sim.free_ops = {aten._unsafe_view = 22 : i64, aten.clone = 10 : i64, aten.detach = 26 : i64, aten.expand = 13 : i64, aten.slice = 32 : i64, aten.split = 1 : i64, aten.split_with_sizes = 6 : i64, aten.t = 90 : i64, aten.transpose = 28 : i64, aten.unsqueeze = 6 : i64, aten.view = 86 : i64}, sim.generic_ops = {aten._log_softmax = 1 : i64, aten._log_softmax_backward_data = 1 : i64, aten.cat = 14 : i64, aten.embedding_dense_backward = 1 : i64, aten.gather = 1 : i64, aten.new_empty = 2 : i64, aten.new_empty_strided = 4 : i64, aten.new_zeros = 1 : i64, aten.nll_loss_backward = 1 : i64, aten.nll_loss_forward = 1 : i64, aten.scatter = 1 : i64, aten.scatter_add = 1 : i64, aten.slice_backward = 8 : i64, aten.slice_scatter = 6 : i64, aten.zeros_like = 3 : i64}} {
  %0 = sim.param "model.embed_tokens.weight" {role = #sim.role<embedding>} : tensor<129280x7168xbf16>
  %1 = sim.input "buffer:model.rotary_emb.inv_freq" : tensor<32xf32>
  %2 = sim.input "buffer:model.rotary_emb.original_inv_freq" : tensor<32xf32>
  %3 = sim.input "tokens" {tokens} : tensor<1x384xi64>
  %4 = sim.input "positions" : tensor<1x384xi64>
  %5 = sim.param "model.norm.weight" {role = #sim.role<norm>} : tensor<7168xbf16>
  %6 = sim.param "lm_head.weight" {role = #sim.role<head>} : tensor<129280x7168xbf16>
  %7 = sim.input "labels" : tensor<1x384xi64>
  %8 = sim.param "model.layers[0:3].self_attn.q_a_proj.weight" {role = #sim.role<attention>, stacked} : tensor<3x1536x7168xbf16>
  %9 = sim.param "model.layers[0:3].self_attn.q_a_layernorm.weight" {role = #sim.role<norm>, stacked} : tensor<3x1536xbf16>
  %10 = sim.param "model.layers[0:3].self_attn.q_b_proj.weight" {role = #sim.role<attention>, split = #sim.split<column>, stacked} : tensor<3x24576x1536xbf16>
  %11 = sim.param "model.layers[0:3].self_attn.kv_a_proj_with_mqa.weight" {role = #sim.role<attention>, stacked} : tensor<3x576x7168xbf16>
  %12 = sim.param "model.layers[0:3].self_attn.kv_a_layernorm.weight" {role = #sim.role<norm>, stacked} : tensor<3x512xbf16>
  %13 = sim.param "model.layers[0:3].self_attn.kv_b_proj.weight" {role = #sim.role<attention>, split = #sim.split<column>, stacked} : tensor<3x32768x512xbf16>
  %14 = sim.param "model.layers[0:3].self_attn.o_proj.weight" {role = #sim.role<attention>, split = #sim.split<row>, stacked} : tensor<3x7168x16384xbf16>
  %15 = sim.param "model.layers[0:3].mlp.gate_proj.weight" {role = #sim.role<mlp>, split = #sim.split<column>, stacked} : tensor<3x18432x7168xbf16>
  %16 = sim.param "model.layers[0:3].mlp.up_proj.weight" {role = #sim.role<mlp>, split = #sim.split<column>, stacked} : tensor<3x18432x7168xbf16>
  %17 = sim.param "model.layers[0:3].mlp.down_proj.weight" {role = #sim.role<mlp>, split = #sim.split<row>, stacked} : tensor<3x7168x18432xbf16>
  %18 = sim.param "model.layers[0:3].input_layernorm.weight" {role = #sim.role<norm>, stacked} : tensor<3x7168xbf16>
  %19 = sim.param "model.layers[0:3].post_attention_layernorm.weight" {role = #sim.role<norm>, stacked} : tensor<3x7168xbf16>
  %20 = sim.param "model.layers[3:61].self_attn.q_a_proj.weight" {role = #sim.role<attention>, stacked} : tensor<58x1536x7168xbf16>
  %21 = sim.param "model.layers[3:61].self_attn.q_a_layernorm.weight" {role = #sim.role<norm>, stacked} : tensor<58x1536xbf16>
  %22 = sim.param "model.layers[3:61].self_attn.q_b_proj.weight" {role = #sim.role<attention>, split = #sim.split<column>, stacked} : tensor<58x24576x1536xbf16>
  %23 = sim.param "model.layers[3:61].self_attn.kv_a_proj_with_mqa.weight" {role = #sim.role<attention>, stacked} : tensor<58x576x7168xbf16>
  %24 = sim.param "model.layers[3:61].self_attn.kv_a_layernorm.weight" {role = #sim.role<norm>, stacked} : tensor<58x512xbf16>
  %25 = sim.param "model.layers[3:61].self_attn.kv_b_proj.weight" {role = #sim.role<attention>, split = #sim.split<column>, stacked} : tensor<58x32768x512xbf16>
  %26 = sim.param "model.layers[3:61].self_attn.o_proj.weight" {role = #sim.role<attention>, split = #sim.split<row>, stacked} : tensor<58x7168x16384xbf16>
  %27 = sim.param "model.layers[3:61].mlp.experts.gate_up_proj" {role = #sim.role<expert>, split = #sim.split<column>, stacked} : tensor<58x256x4096x7168xbf16>
  %28 = sim.param "model.layers[3:61].mlp.experts.down_proj" {role = #sim.role<expert>, split = #sim.split<row>, stacked} : tensor<58x256x7168x2048xbf16>
  %29 = sim.param "model.layers[3:61].mlp.gate.weight" {role = #sim.role<router>, stacked} : tensor<58x256x7168xbf16>
  %30 = sim.param "model.layers[3:61].mlp.shared_experts.gate_proj.weight" {role = #sim.role<shared_expert>, split = #sim.split<column>, stacked} : tensor<58x2048x7168xbf16>
  %31 = sim.param "model.layers[3:61].mlp.shared_experts.up_proj.weight" {role = #sim.role<shared_expert>, split = #sim.split<column>, stacked} : tensor<58x2048x7168xbf16>
  %32 = sim.param "model.layers[3:61].mlp.shared_experts.down_proj.weight" {role = #sim.role<shared_expert>, split = #sim.split<row>, stacked} : tensor<58x7168x2048xbf16>
  %33 = sim.param "model.layers[3:61].input_layernorm.weight" {role = #sim.role<norm>, stacked} : tensor<58x7168xbf16>
  %34 = sim.param "model.layers[3:61].post_attention_layernorm.weight" {role = #sim.role<norm>, stacked} : tensor<58x7168xbf16>
  %35 = sim.input "buffer:model.layers[3:61].mlp.gate.e_score_correction_bias" : tensor<58x256xbf16>
  %36 = sim.input "grad_loss" : tensor<f32>
  %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, %96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, %112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124 = sim.phase "forward" -> tensor<f32>, tensor<1x384xi64>, tensor<3x1x384x7168xf32>, tensor<3x1x384x1xf32>, tensor<3x1x384x1xf32>, tensor<3x1x384x7168xbf16>, tensor<3x384x7168xbf16>, tensor<3x1x384x1536xf32>, tensor<3x1x384x1xf32>, tensor<3x1x384x1xf32>, tensor<3x1x384x1536xbf16>, tensor<3x384x1536xbf16>, tensor<3x384x7168xbf16>, tensor<3x1x384x512xf32>, tensor<3x1x384x1xf32>, tensor<3x1x384x1xf32>, tensor<3x1x384x512xbf16>, tensor<3x384x512xbf16>, tensor<3x1x384x128x192xbf16>, tensor<3x1x384x128x128xbf16>, tensor<3x1x384x128x192xbf16>, tensor<3x1x384x128x128xbf16>, tensor<3x384x16384xbf16>, tensor<3x1x384x7168xf32>, tensor<3x1x384x1xf32>, tensor<3x1x384x1xf32>, tensor<3x1x384x7168xbf16>, tensor<3x384x7168xbf16>, tensor<3x1x384x18432xbf16>, tensor<3x1x384x18432xbf16>, tensor<3x384x7168xbf16>, tensor<3x1x384x18432xbf16>, tensor<3x384x18432xbf16>, tensor<58x1x384x7168xf32>, tensor<58x1x384x1xf32>, tensor<58x1x384x1xf32>, tensor<58x1x384x7168xbf16>, tensor<58x384x7168xbf16>, tensor<58x1x384x1536xf32>, tensor<58x1x384x1xf32>, tensor<58x1x384x1xf32>, tensor<58x1x384x1536xbf16>, tensor<58x384x1536xbf16>, tensor<58x384x7168xbf16>, tensor<58x1x384x512xf32>, tensor<58x1x384x1xf32>, tensor<58x1x384x1xf32>, tensor<58x1x384x512xbf16>, tensor<58x384x512xbf16>, tensor<58x1x384x128x192xbf16>, tensor<58x1x384x128x128xbf16>, tensor<58x1x384x128x192xbf16>, tensor<58x1x384x128x128xbf16>, tensor<58x384x16384xbf16>, tensor<58x1x384x7168xf32>, tensor<58x1x384x1xf32>, tensor<58x1x384x1xf32>, tensor<58x1x384x7168xbf16>, tensor<58x384x7168xf32>, tensor<58x7168x256xf32>, tensor<58x384x256xf32>, tensor<58x384x8xi64>, tensor<58x384x1xf32>, tensor<58x384x8xf32>, tensor<58x256x12x7168xbf16>, tensor<58x256x12x2048xbf16>, tensor<58x256x12x2048xbf16>, tensor<58x256x12x2048xbf16>, tensor<58x256x12x2048xbf16>, tensor<58x256x12x7168xbf16>, tensor<58x384x8xbf16>, tensor<58x384x7168xbf16>, tensor<58x1x384x2048xbf16>, tensor<58x1x384x2048xbf16>, tensor<58x384x7168xbf16>, tensor<58x1x384x2048xbf16>, tensor<58x384x2048xbf16>, tensor<1x384x7168xf32>, tensor<1x384x1xf32>, tensor<1x384x1xf32>, tensor<1x384x7168xbf16>, tensor<384x7168xbf16>, tensor<384xi64>, tensor<384x129280xf32>, tensor<384x129280xf32>, tensor<f32>, tensor<1x384x64xbf16>, tensor<1x384x64xbf16> {
    %125 = sim.embedding %0, %3 : (tensor<129280x7168xbf16>, tensor<1x384xi64>) -> tensor<1x384x7168xbf16>
    %126 = sim.view %4 : tensor<1x384xi64> -> tensor<1x384x1xi64>
    %127 = sim.elementwise "cast" %126 : tensor<1x384x1xi64> -> tensor<1x384x1xf32>
    %128 = sim.elementwise "mul" %127, %1 : tensor<1x384x1xf32>, tensor<32xf32> -> tensor<1x384x32xf32>
    %129 = sim.generic "aten.cat"(%128, %128) {flop_count = 0.000000e+00 : f64, byte_count = 1.966080e+05 : f64} : (tensor<1x384x32xf32>, tensor<1x384x32xf32>) -> tensor<1x384x64xf32>
    %130 = sim.elementwise "cos" %129 : tensor<1x384x64xf32> -> tensor<1x384x64xf32>
    %131 = sim.elementwise "mul" %130 : tensor<1x384x64xf32> -> tensor<1x384x64xf32>
    %132 = sim.elementwise "sin" %129 : tensor<1x384x64xf32> -> tensor<1x384x64xf32>
    %133 = sim.elementwise "mul" %132 : tensor<1x384x64xf32> -> tensor<1x384x64xf32>
    %134 = sim.elementwise "cast" %131 : tensor<1x384x64xf32> -> tensor<1x384x64xbf16>
    %135 = sim.elementwise "cast" %133 : tensor<1x384x64xf32> -> tensor<1x384x64xbf16>
    %136, %137, %138, %139, %140, %141, %142, %143, %144, %145, %146, %147, %148, %149, %150, %151, %152, %153, %154, %155, %156, %157, %158, %159, %160, %161, %162, %163, %164, %165, %166, %167 = sim.repeat 3 iter(%125 : tensor<1x384x7168xbf16>) slices(%8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19 : tensor<3x1536x7168xbf16>, tensor<3x1536xbf16>, tensor<3x24576x1536xbf16>, tensor<3x576x7168xbf16>, tensor<3x512xbf16>, tensor<3x32768x512xbf16>, tensor<3x7168x16384xbf16>, tensor<3x18432x7168xbf16>, tensor<3x18432x7168xbf16>, tensor<3x7168x18432xbf16>, tensor<3x7168xbf16>, tensor<3x7168xbf16>) -> (tensor<1x384x7168xbf16>, tensor<3x1x384x7168xf32>, tensor<3x1x384x1xf32>, tensor<3x1x384x1xf32>, tensor<3x1x384x7168xbf16>, tensor<3x384x7168xbf16>, tensor<3x1x384x1536xf32>, tensor<3x1x384x1xf32>, tensor<3x1x384x1xf32>, tensor<3x1x384x1536xbf16>, tensor<3x384x1536xbf16>, tensor<3x384x7168xbf16>, tensor<3x1x384x512xf32>, tensor<3x1x384x1xf32>, tensor<3x1x384x1xf32>, tensor<3x1x384x512xbf16>, tensor<3x384x512xbf16>, tensor<3x1x384x128x192xbf16>, tensor<3x1x384x128x128xbf16>, tensor<3x1x384x128x192xbf16>, tensor<3x1x384x128x128xbf16>, tensor<3x384x16384xbf16>, tensor<3x1x384x7168xf32>, tensor<3x1x384x1xf32>, tensor<3x1x384x1xf32>, tensor<3x1x384x7168xbf16>, tensor<3x384x7168xbf16>, tensor<3x1x384x18432xbf16>, tensor<3x1x384x18432xbf16>, tensor<3x384x7168xbf16>, tensor<3x1x384x18432xbf16>, tensor<3x384x18432xbf16>) {
    ^bb0(%168: tensor<1x384x7168xbf16>, %169: tensor<1536x7168xbf16>, %170: tensor<1536xbf16>, %171: tensor<24576x1536xbf16>, %172: tensor<576x7168xbf16>, %173: tensor<512xbf16>, %174: tensor<32768x512xbf16>, %175: tensor<7168x16384xbf16>, %176: tensor<18432x7168xbf16>, %177: tensor<18432x7168xbf16>, %178: tensor<7168x18432xbf16>, %179: tensor<7168xbf16>, %180: tensor<7168xbf16>):
      %181 = sim.elementwise "cast" %168 : tensor<1x384x7168xbf16> -> tensor<1x384x7168xf32>
      %182 = sim.elementwise "pow" %181 : tensor<1x384x7168xf32> -> tensor<1x384x7168xf32>
      %183 = sim.reduce "mean" %182 [2] : tensor<1x384x7168xf32> -> tensor<1x384x1xf32>
      %184 = sim.elementwise "add" %183 : tensor<1x384x1xf32> -> tensor<1x384x1xf32>
      %185 = sim.elementwise "rsqrt" %184 : tensor<1x384x1xf32> -> tensor<1x384x1xf32>
      %186 = sim.elementwise "mul" %181, %185 : tensor<1x384x7168xf32>, tensor<1x384x1xf32> -> tensor<1x384x7168xf32>
      %187 = sim.elementwise "cast" %186 : tensor<1x384x7168xf32> -> tensor<1x384x7168xbf16>
      %188 = sim.elementwise "mul" %179, %187 : tensor<7168xbf16>, tensor<1x384x7168xbf16> -> tensor<1x384x7168xbf16>
      %189 = sim.matmul %188, %169 {transpose_rhs} : (tensor<1x384x7168xbf16>, tensor<1536x7168xbf16>) -> tensor<1x384x1536xbf16>
      %190 = sim.elementwise "cast" %189 : tensor<1x384x1536xbf16> -> tensor<1x384x1536xf32>
      %191 = sim.elementwise "pow" %190 : tensor<1x384x1536xf32> -> tensor<1x384x1536xf32>
      %192 = sim.reduce "mean" %191 [2] : tensor<1x384x1536xf32> -> tensor<1x384x1xf32>
      %193 = sim.elementwise "add" %192 : tensor<1x384x1xf32> -> tensor<1x384x1xf32>
      %194 = sim.elementwise "rsqrt" %193 : tensor<1x384x1xf32> -> tensor<1x384x1xf32>
      %195 = sim.elementwise "mul" %190, %194 : tensor<1x384x1536xf32>, tensor<1x384x1xf32> -> tensor<1x384x1536xf32>
      %196 = sim.elementwise "cast" %195 : tensor<1x384x1536xf32> -> tensor<1x384x1536xbf16>
      %197 = sim.elementwise "mul" %170, %196 : tensor<1536xbf16>, tensor<1x384x1536xbf16> -> tensor<1x384x1536xbf16>
      %198 = sim.matmul %197, %171 {transpose_rhs} : (tensor<1x384x1536xbf16>, tensor<24576x1536xbf16>) -> tensor<1x384x24576xbf16>
      %199 = sim.matmul %188, %172 {transpose_rhs} : (tensor<1x384x7168xbf16>, tensor<576x7168xbf16>) -> tensor<1x384x576xbf16>
      %200 = sim.generic "aten.split_with_sizes"(%199) {flop_count = 0.000000e+00 : f64, byte_count = 0.000000e+00 : f64} : (tensor<1x384x576xbf16>) -> tensor<1x384x512xbf16>
      %201 = sim.elementwise "cast" %200 : tensor<1x384x512xbf16> -> tensor<1x384x512xf32>
      %202 = sim.elementwise "pow" %201 : tensor<1x384x512xf32> -> tensor<1x384x512xf32>
      %203 = sim.reduce "mean" %202 [2] : tensor<1x384x512xf32> -> tensor<1x384x1xf32>
      %204 = sim.elementwise "add" %203 : tensor<1x384x1xf32> -> tensor<1x384x1xf32>
      %205 = sim.elementwise "rsqrt" %204 : tensor<1x384x1xf32> -> tensor<1x384x1xf32>
      %206 = sim.elementwise "mul" %201, %205 : tensor<1x384x512xf32>, tensor<1x384x1xf32> -> tensor<1x384x512xf32>
      %207 = sim.elementwise "cast" %206 : tensor<1x384x512xf32> -> tensor<1x384x512xbf16>
      %208 = sim.elementwise "mul" %173, %207 : tensor<512xbf16>, tensor<1x384x512xbf16> -> tensor<1x384x512xbf16>
      %209 = sim.generic "aten.slice"(%198) {flop_count = 0.000000e+00 : f64, byte_count = 0.000000e+00 : f64} : (tensor<1x384x24576xbf16>) -> tensor<1x128x384x32xbf16>
      %210 = sim.generic "aten.unsqueeze"(%134) {flop_count = 0.000000e+00 : f64, byte_count = 0.000000e+00 : f64} : (tensor<1x384x64xbf16>) -> tensor<1x1x384x32xbf16>
      %211 = sim.elementwise "mul" %209, %210 : tensor<1x128x384x32xbf16>, tensor<1x1x384x32xbf16> -> tensor<1x128x384x32xbf16>
      %212 = sim.generic "aten.slice"(%198) {flop_count = 0.000000e+00 : f64, byte_count = 0.000000e+00 : f64} : (tensor<1x384x24576xbf16>) -> tensor<1x128x384x32xbf16>
      %213 = sim.generic "aten.unsqueeze"(%135) {flop_count = 0.000000e+00 : f64, byte_count = 0.000000e+00 : f64} : (tensor<1x384x64xbf16>) -> tensor<1x1x384x32xbf16>
      %214 = sim.elementwise "mul" %212, %213 : tensor<1x128x384x32xbf16>, tensor<1x1x384x32xbf16> -> tensor<1x128x384x32xbf16>
      %215 = sim.elementwise "sub" %211, %214 : tensor<1x128x384x32xbf16>, tensor<1x128x384x32xbf16> -> tensor<1x128x384x32xbf16>
      %216 = sim.elementwise "mul" %212, %210 : tensor<1x128x384x32xbf16>, tensor<1x1x384x32xbf16> -> tensor<1x128x384x32xbf16>
      %217 = sim.elementwise "mul" %209, %213 : tensor<1x128x384x32xbf16>, tensor<1x1x384x32xbf16> -> tensor<1x128x384x32xbf16>
      %218 = sim.elementwise "add" %216, %217 : tensor<1x128x384x32xbf16>, tensor<1x128x384x32xbf16> -> tensor<1x128x384x32xbf16>
      %219 = sim.generic "aten.cat"(%215, %218) {flop_count = 0.000000e+00 : f64, byte_count = 0x4168000000000000 : f64} : (tensor<1x128x384x32xbf16>, tensor<1x128x384x32xbf16>) -> tensor<1x128x384x64xbf16>
      %220 = sim.generic "aten.slice"(%199) {flop_count = 0.000000e+00 : f64, byte_count = 0.000000e+00 : f64} : (tensor<1x384x576xbf16>) -> tensor<1x1x384x32xbf16>
      %221 = sim.elementwise "mul" %220, %210 : tensor<1x1x384x32xbf16>, tensor<1x1x384x32xbf16> -> tensor<1x1x384x32xbf16>
      %222 = sim.generic "aten.slice"(%199) {flop_count = 0.000000e+00 : f64, byte_count = 0.000000e+00 : f64} : (tensor<1x384x576xbf16>) -> tensor<1x1x384x32xbf16>
      %223 = sim.elementwise "mul" %222, %213 : tensor<1x1x384x32xbf16>, tensor<1x1x384x32xbf16> -> tensor<1x1x384x32xbf16>
      %224 = sim.elementwise "sub" %221, %223 : tensor<1x1x384x32xbf16>, tensor<1x1x384x32xbf16> -> tensor<1x1x384x32xbf16>
      %225 = sim.elementwise "mul" %222, %210 : tensor<1x1x384x32xbf16>, tensor<1x1x384x32xbf16> -> tensor<1x1x384x32xbf16>
      %226 = sim.elementwise "mul" %220, %213 : tensor<1x1x384x32xbf16>, tensor<1x1x384x32xbf16> -> tensor<1x1x384x32xbf16>
      %227 = sim.elementwise "add" %225, %226 : tensor<1x1x384x32xbf16>, tensor<1x1x384x32xbf16> -> tensor<1x1x384x32xbf16>
      %228 = sim.generic "aten.cat"(%224, %227) {flop_count = 0.000000e+00 : f64, byte_count = 9.830400e+04 : f64} : (tensor<1x1x384x32xbf16>, tensor<1x1x384x32xbf16>) -> tensor<1x1x384x64xbf16>
      %229 = sim.generic "aten.split_with_sizes"(%198) {flop_count = 0.000000e+00 : f64, byte_count = 0.000000e+00 : f64} : (tensor<1x384x24576xbf16>) -> tensor<1x128x384x128xbf16>
      %230 = sim.generic "aten.cat"(%229, %219) {flop_count = 0.000000e+00 : f64, byte_count = 0x4182000000000000 : f64} : (tensor<1x128x384x128xbf16>, tensor<1x128x384x64xbf16>) -> tensor<1x128x384x192xbf16>
      %231 = sim.matmul %208, %174 {transpose_rhs} : (tensor<1x384x512xbf16>, tensor<32768x512xbf16>) -> tensor<1x384x32768xbf16>
      %232 = sim.generic "aten.new_empty"() {flop_count = 0.000000e+00 : f64, byte_count = 0x4172000000000000 : f64} : () -> tensor<1x128x384x192xbf16>
      %233 = sim.generic "aten.slice"(%232) {flop_count = 0.000000e+00 : f64, byte_count = 0.000000e+00 : f64} : (tensor<1x128x384x192xbf16>) -> tensor<1x128x384x128xbf16>
      %234 = sim.generic "aten.split_with_sizes"(%231) {flop_count = 0.000000e+00 : f64, byte_count = 0.000000e+00 : f64} : (tensor<1x384x32768xbf16>) -> tensor<1x128x384x128xbf16>
      %235 = sim.elementwise "copy" %233, %234 : tensor<1x128x384x128xbf16>, tensor<1x128x384x128xbf16> -> tensor<1x128x384x128xbf16>
      %236 = sim.generic "aten.slice_scatter"(%232, %235) {flop_count = 0x4162000000000000 : f64, byte_count = 0x4188000000000000 : f64} : (tensor<1x128x384x192xbf16>, tensor<1x128x384x128xbf16>) -> tensor<1x128x384x192xbf16>
      %237 = sim.generic "aten.slice"(%236) {flop_count = 0.000000e+00 : f64, byte_count = 0.000000e+00 : f64} : (tensor<1x128x384x192xbf16>) -> tensor<1x128x384x64xbf16>
      %238 = sim.elementwise "copy" %237, %228 : tensor<1x128x384x64xbf16>, tensor<1x1x384x64xbf16> -> tensor<1x128x384x64xbf16>
      %239 = sim.generic "aten.slice_scatter"(%236, %238) {flop_count = 0x4162000000000000 : f64, byte_count = 0x4185000000000000 : f64} : (tensor<1x128x384x192xbf16>, tensor<1x128x384x64xbf16>) -> tensor<1x128x384x192xbf16>
      %240 = sim.view %230 : tensor<1x128x384x192xbf16> -> tensor<1x384x128x192xbf16>
      %241 = sim.view %239 : tensor<1x128x384x192xbf16> -> tensor<1x384x128x192xbf16>
      %242 = sim.generic "aten.transpose"(%231) {flop_count = 0.000000e+00 : f64, byte_count = 0.000000e+00 : f64} : (tensor<1x384x32768xbf16>) -> tensor<1x384x128x128xbf16>
      %243 = sim.attention %240, %241, %242 {causal} : (tensor<1x384x128x192xbf16>, tensor<1x384x128x192xbf16>, tensor<1x384x128x128xbf16>) -> tensor<1x384x128x128xbf16>
      %244 = sim.view %243 : tensor<1x384x128x128xbf16> -> tensor<1x384x16384xbf16>
      %245 = sim.matmul %244, %175 {transpose_rhs} : (tensor<1x384x16384xbf16>, tensor<7168x16384xbf16>) -> tensor<1x384x7168xbf16>
      %246 = sim.elementwise "add" %168, %245 : tensor<1x384x7168xbf16>, tensor<1x384x7168xbf16> -> tensor<1x384x7168xbf16>
      %247 = sim.elementwise "cast" %246 : tensor<1x384x7168xbf16> -> tensor<1x384x7168xf32>
      %248 = sim.elementwise "pow" %247 : tensor<1x384x7168xf32> -> tensor<1x384x7168xf32>
      %249 = sim.reduce "mean" %248 [2] : tensor<1x384x7168xf32> -> tensor<1x384x1xf32>
      %250 = sim.elementwise "add" %249 : tensor<1x384x1xf32> -> tensor<1x384x1xf32>
      %251 = sim.elementwise "rsqrt" %250 : tensor<1x384x1xf32> -> tensor<1x384x1xf32>
      %252 = sim.elementwise "mul" %247, %251 : tensor<1x384x7168xf32>, tensor<1x384x1xf32> -> tensor<1x384x7168xf32>
      %253 = sim.elementwise "cast" %252 : tensor<1x384x7168xf32> -> tensor<1x384x7168xbf16>
      %254 = sim.elementwise "mul" %180, %253 : tensor<7168xbf16>, tensor<1x384x7168xbf16> -> tensor<1x384x7168xbf16>
      %255 = sim.matmul %254, %176 {transpose_rhs} : (tensor<1x384x7168xbf16>, tensor<18432x7168xbf16>) -> tensor<1x384x18432xbf16>
      %256 = sim.elementwise "silu" %255 : tensor<1x384x18432xbf16> -> tensor<1x384x18432xbf16>
      %257 = sim.matmul %254, %177 {transpose_rhs} : (tensor<1x384x7168xbf16>, tensor<18432x7168xbf16>) -> tensor<1x384x18432xbf16>
      %258 = sim.elementwise "mul" %256, %257 : tensor<1x384x18432xbf16>, tensor<1x384x18432xbf16> -> tensor<1x384x18432xbf16>
      %259 = sim.matmul %258, %178 {transpose_rhs} : (tensor<1x384x18432xbf16>, tensor<7168x18432xbf16>) -> tensor<1x384x7168xbf16>
      %260 = sim.elementwise "add" %246, %259 : tensor<1x384x7168xbf16>, tensor<1x384x7168xbf16> -> tensor<1x384x7168xbf16>
      %261 = sim.view %188 : tensor<1x384x7168xbf16> -> tensor<384x7168xbf16>
      %262 = sim.view %197 : tensor<1x384x1536xbf16> -> tensor<384x1536xbf16>
      %263 = sim.view %188 : tensor<1x384x7168xbf16> -> tensor<384x7168xbf16>
      %264 = sim.view %208 : tensor<1x384x512xbf16> -> tensor<384x512xbf16>
      %265 = sim.view %243 : tensor<1x384x128x128xbf16> -> tensor<384x16384xbf16>
      %266 = sim.view %254 : tensor<1x384x7168xbf16> -> tensor<384x7168xbf16>
      %267 = sim.view %254 : tensor<1x384x7168xbf16> -> tensor<384x7168xbf16>
      %268 = sim.view %258 : tensor<1x384x18432xbf16> -> tensor<384x18432xbf16>
      sim.yield %260, %181, %185, %185, %187, %261, %190, %194, %194, %196, %262, %263, %201, %205, %205, %207, %264, %240, %242, %241, %243, %265, %247, %251, %251, %253, %266, %255, %256, %267, %257, %268 : tensor<1x384x7168xbf16>, tensor<1x384x7168xf32>, tensor<1x384x1xf32>, tensor<1x384x1xf32>, tensor<1x384x7168xbf16>, tensor<384x7168xbf16>, tensor<1x384x1536xf32>, tensor<1x384x1xf32>, tensor<1x384x1xf32>, tensor<1x384x1536xbf16>, tensor<384x1536xbf16>, tensor<384x7168xbf16>, tensor<1x384x512xf32>, tensor<1x384x1xf32>, tensor<1x384x1xf32>, tensor<1x384x512xbf16>, tensor<384x512xbf16>, tensor<1x384x128x192xbf16>, tensor<1x384x128x128xbf16>, tensor<1x384x128x192xbf16>, tensor<1x384x128x128xbf16>, tensor<384x16384xbf16>, tensor<1x384x7168xf32>, tensor<1x384x1xf32>, tensor<1x384x1xf32>, tensor<1x384x7168xbf16>, tensor<384x7168xbf16>, tensor<1x384x18432xbf16>, tensor<1x384x18432xbf16>, tensor<384x7168xbf16>, tensor<1x384x18432xbf16>, tensor<384x18432xbf16>
    }
    %269, %270, %271, %272, %273, %274, %275, %276, %277, %278, %279, %280, %281, %282, %283, %284, %285, %286, %287, %288, %289, %290, %291, %292, %293, %294, %295, %296, %297, %298, %299, %300, %301, %302, %303, %304, %305, %306, %307, %308, %309, %310, %311, %312, %313 = sim.repeat 58 iter(%136 : tensor<1x384x7168xbf16>) slices(%20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35 : tensor<58x1536x7168xbf16>, tensor<58x1536xbf16>, tensor<58x24576x1536xbf16>, tensor<58x576x7168xbf16>, tensor<58x512xbf16>, tensor<58x32768x512xbf16>, tensor<58x7168x16384xbf16>, tensor<58x256x4096x7168xbf16>, tensor<58x256x7168x2048xbf16>, tensor<58x256x7168xbf16>, tensor<58x2048x7168xbf16>, tensor<58x2048x7168xbf16>, tensor<58x7168x2048xbf16>, tensor<58x7168xbf16>, tensor<58x7168xbf16>, tensor<58x256xbf16>) -> (tensor<1x384x7168xbf16>, tensor<58x1x384x7168xf32>, tensor<58x1x384x1xf32>, tensor<58x1x384x1xf32>, tensor<58x1x384x7168xbf16>, tensor<58x384x7168xbf16>, tensor<58x1x384x1536xf32>, tensor<58x1x384x1xf32>, tensor<58x1x384x1xf32>, tensor<58x1x384x1536xbf16>, tensor<58x384x1536xbf16>, tensor<58x384x7168xbf16>, tensor<58x1x384x512xf32>, tensor<58x1x384x1xf32>, tensor<58x1x384x1xf32>, tensor<58x1x384x512xbf16>, tensor<58x384x512xbf16>, tensor<58x1x384x128x192xbf16>, tensor<58x1x384x128x128xbf16>, tensor<58x1x384x128x192xbf16>, tensor<58x1x384x128x128xbf16>, tensor<58x384x16384xbf16>, tensor<58x1x384x7168xf32>, tensor<58x1x384x1xf32>, tensor<58x1x384x1xf32>, tensor<58x1x384x7168xbf16>, tensor<58x384x7168xf32>, tensor<58x7168x256xf32>, tensor<58x384x256xf32>, tensor<58x384x8xi64>, tensor<58x384x1xf32>, tensor<58x384x8xf32>, tensor<58x256x12x7168xbf16>, tensor<58x256x12x2048xbf16>, tensor<58x256x12x2048xbf16>, tensor<58x256x12x2048xbf16>, tensor<58x256x12x2048xbf16>, tensor<58x256x12x7168xbf16>, tensor<58x384x8xbf16>, tensor<58x384x7168xbf16>, tensor<58x1x384x2048xbf16>, tensor<58x1x384x2048xbf16>, tensor<58x384x7168xbf16>, tensor<58x1x384x2048xbf16>, tensor<58x384x2048xbf16>) {
    ^bb0(%314: tensor<1x384x7168xbf16>, %315: tensor<1536x7168xbf16>, %316: tensor<1536xbf16>, %317: tensor<24576x1536xbf16>, %318: tensor<576x7168xbf16>, %319: tensor<512xbf16>, %320: tensor<32768x512xbf16>, %321: tensor<7168x16384xbf16>, %322: tensor<256x4096x7168xbf16>, %323: tensor<256x7168x2048xbf16>, %324: tensor<256x7168xbf16>, %325: tensor<2048x7168xbf16>, %326: tensor<2048x7168xbf16>, %327: tensor<7168x2048xbf16>, %328: tensor<7168xbf16>, %329: tensor<7168xbf16>, %330: tensor<256xbf16>):
      %331 = sim.elementwise "cast" %314 : tensor<1x384x7168xbf16> -> tensor<1x384x7168xf32>
      %332 = sim.elementwise "pow" %331 : tensor<1x384x7168xf32> -> tensor<1x384x7168xf32>
      %333 = sim.reduce "mean" %332 [2] : tensor<1x384x7168xf32> -> tensor<1x384x1xf32>
      %334 = sim.elementwise "add" %333 : tensor<1x384x1xf32> -> tensor<1x384x1xf32>
      %335 = sim.elementwise "rsqrt" %334 : tensor<1x384x1xf32> -> tensor<1x384x1xf32>
      %336 = sim.elementwise "mul" %331, %335 : tensor<1x384x7168xf32>, tensor<1x384x1xf32> -> tensor<1x384x7168xf32>
      %337 = sim.elementwise "cast" %336 : tensor<1x384x7168xf32> -> tensor<1x384x7168xbf16>
      %338 = sim.elementwise "mul" %328, %337 : tensor<7168xbf16>, tensor<1x384x7168xbf16> -> tensor<1x384x7168xbf16>
      %339 = sim.matmul %338, %315 {transpose_rhs} : (tensor<1x384x7168xbf16>, tensor<1536x7168xbf16>) -> tensor<1x384x1536xbf16>
      %340 = sim.elementwise "cast" %339 : tensor<1x384x1536xbf16> -> tensor<1x384x1536xf32>
      %341 = sim.elementwise "pow" %340 : tensor<1x384x1536xf32> -> tensor<1x384x1536xf32>
      %342 = sim.reduce "mean" %341 [2] : tensor<1x384x1536xf32> -> tensor<1x384x1xf32>
      %343 = sim.elementwise "add" %342 : tensor<1x384x1xf32> -> tensor<1x384x1xf32>
      %344 = sim.elementwise "rsqrt" %343 : tensor<1x384x1xf32> -> tensor<1x384x1xf32>
      %345 = sim.elementwise "mul" %340, %344 : tensor<1x384x1536xf32>, tensor<1x384x1xf32> -> tensor<1x384x1536xf32>
      %346 = sim.elementwise "cast" %345 : tensor<1x384x1536xf32> -> tensor<1x384x1536xbf16>
      %347 = sim.elementwise "mul" %316, %346 : tensor<1536xbf16>, tensor<1x384x1536xbf16> -> tensor<1x384x1536xbf16>
      %348 = sim.matmul %347, %317 {transpose_rhs} : (tensor<1x384x1536xbf16>, tensor<24576x1536xbf16>) -> tensor<1x384x24576xbf16>
      %349 = sim.matmul %338, %318 {transpose_rhs} : (tensor<1x384x7168xbf16>, tensor<576x7168xbf16>) -> tensor<1x384x576xbf16>
      %350 = sim.generic "aten.split_with_sizes"(%349) {flop_count = 0.000000e+00 : f64, byte_count = 0.000000e+00 : f64} : (tensor<1x384x576xbf16>) -> tensor<1x384x512xbf16>
      %351 = sim.elementwise "cast" %350 : tensor<1x384x512xbf16> -> tensor<1x384x512xf32>
      %352 = sim.elementwise "pow" %351 : tensor<1x384x512xf32> -> tensor<1x384x512xf32>
      %353 = sim.reduce "mean" %352 [2] : tensor<1x384x512xf32> -> tensor<1x384x1xf32>
      %354 = sim.elementwise "add" %353 : tensor<1x384x1xf32> -> tensor<1x384x1xf32>
      %355 = sim.elementwise "rsqrt" %354 : tensor<1x384x1xf32> -> tensor<1x384x1xf32>
      %356 = sim.elementwise "mul" %351, %355 : tensor<1x384x512xf32>, tensor<1x384x1xf32> -> tensor<1x384x512xf32>
      %357 = sim.elementwise "cast" %356 : tensor<1x384x512xf32> -> tensor<1x384x512xbf16>
      %358 = sim.elementwise "mul" %319, %357 : tensor<512xbf16>, tensor<1x384x512xbf16> -> tensor<1x384x512xbf16>
      %359 = sim.generic "aten.slice"(%348) {flop_count = 0.000000e+00 : f64, byte_count = 0.000000e+00 : f64} : (tensor<1x384x24576xbf16>) -> tensor<1x128x384x32xbf16>
      %360 = sim.generic "aten.unsqueeze"(%134) {flop_count = 0.000000e+00 : f64, byte_count = 0.000000e+00 : f64} : (tensor<1x384x64xbf16>) -> tensor<1x1x384x32xbf16>
      %361 = sim.elementwise "mul" %359, %360 : tensor<1x128x384x32xbf16>, tensor<1x1x384x32xbf16> -> tensor<1x128x384x32xbf16>
      %362 = sim.generic "aten.slice"(%348) {flop_count = 0.000000e+00 : f64, byte_count = 0.000000e+00 : f64} : (tensor<1x384x24576xbf16>) -> tensor<1x128x384x32xbf16>
      %363 = sim.generic "aten.unsqueeze"(%135) {flop_count = 0.000000e+00 : f64, byte_count = 0.000000e+00 : f64} : (tensor<1x384x64xbf16>) -> tensor<1x1x384x32xbf16>
      %364 = sim.elementwise "mul" %362, %363 : tensor<1x128x384x32xbf16>, tensor<1x1x384x32xbf16> -> tensor<1x128x384x32xbf16>
      %365 = sim.elementwise "sub" %361, %364 : tensor<1x128x384x32xbf16>, tensor<1x128x384x32xbf16> -> tensor<1x128x384x32xbf16>
      %366 = sim.elementwise "mul" %362, %360 : tensor<1x128x384x32xbf16>, tensor<1x1x384x32xbf16> -> tensor<1x128x384x32xbf16>
      %367 = sim.elementwise "mul" %359, %363 : tensor<1x128x384x32xbf16>, tensor<1x1x384x32xbf16> -> tensor<1x128x384x32xbf16>
      %368 = sim.elementwise "add" %366, %367 : tensor<1x128x384x32xbf16>, tensor<1x128x384x32xbf16> -> tensor<1x128x384x32xbf16>
      %369 = sim.generic "aten.cat"(%365, %368) {flop_count = 0.000000e+00 : f64, byte_count = 0x4168000000000000 : f64} : (tensor<1x128x384x32xbf16>, tensor<1x128x384x32xbf16>) -> tensor<1x128x384x64xbf16>
      %370 = sim.generic "aten.slice"(%349) {flop_count = 0.000000e+00 : f64, byte_count = 0.000000e+00 : f64} : (tensor<1x384x576xbf16>) -> tensor<1x1x384x32xbf16>
      %371 = sim.elementwise "mul" %370, %360 : tensor<1x1x384x32xbf16>, tensor<1x1x384x32xbf16> -> tensor<1x1x384x32xbf16>
      %372 = sim.generic "aten.slice"(%349) {flop_count = 0.000000e+00 : f64, byte_count = 0.000000e+00 : f64} : (tensor<1x384x576xbf16>) -> tensor<1x1x384x32xbf16>
      %373 = sim.elementwise "mul" %372, %363 : tensor<1x1x384x32xbf16>, tensor<1x1x384x32xbf16> -> tensor<1x1x384x32xbf16>
      %374 = sim.elementwise "sub" %371, %373 : tensor<1x1x384x32xbf16>, tensor<1x1x384x32xbf16> -> tensor<1x1x384x32xbf16>
      %375 = sim.elementwise "mul" %372, %360 : tensor<1x1x384x32xbf16>, tensor<1x1x384x32xbf16> -> tensor<1x1x384x32xbf16>
      %376 = sim.elementwise "mul" %370, %363 : tensor<1x1x384x32xbf16>, tensor<1x1x384x32xbf16> -> tensor<1x1x384x32xbf16>
      %377 = sim.elementwise "add" %375, %376 : tensor<1x1x384x32xbf16>, tensor<1x1x384x32xbf16> -> tensor<1x1x384x32xbf16>
      %378 = sim.generic "aten.cat"(%374, %377) {flop_count = 0.000000e+00 : f64, byte_count = 9.830400e+04 : f64} : (tensor<1x1x384x32xbf16>, tensor<1x1x384x32xbf16>) -> tensor<1x1x384x64xbf16>
      %379 = sim.generic "aten.split_with_sizes"(%348) {flop_count = 0.000000e+00 : f64, byte_count = 0.000000e+00 : f64} : (tensor<1x384x24576xbf16>) -> tensor<1x128x384x128xbf16>
      %380 = sim.generic "aten.cat"(%379, %369) {flop_count = 0.000000e+00 : f64, byte_count = 0x4182000000000000 : f64} : (tensor<1x128x384x128xbf16>, tensor<1x128x384x64xbf16>) -> tensor<1x128x384x192xbf16>
      %381 = sim.matmul %358, %320 {transpose_rhs} : (tensor<1x384x512xbf16>, tensor<32768x512xbf16>) -> tensor<1x384x32768xbf16>
      %382 = sim.generic "aten.new_empty"() {flop_count = 0.000000e+00 : f64, byte_count = 0x4172000000000000 : f64} : () -> tensor<1x128x384x192xbf16>
      %383 = sim.generic "aten.slice"(%382) {flop_count = 0.000000e+00 : f64, byte_count = 0.000000e+00 : f64} : (tensor<1x128x384x192xbf16>) -> tensor<1x128x384x128xbf16>
      %384 = sim.generic "aten.split_with_sizes"(%381) {flop_count = 0.000000e+00 : f64, byte_count = 0.000000e+00 : f64} : (tensor<1x384x32768xbf16>) -> tensor<1x128x384x128xbf16>
      %385 = sim.elementwise "copy" %383, %384 : tensor<1x128x384x128xbf16>, tensor<1x128x384x128xbf16> -> tensor<1x128x384x128xbf16>
      %386 = sim.generic "aten.slice_scatter"(%382, %385) {flop_count = 0x4162000000000000 : f64, byte_count = 0x4188000000000000 : f64} : (tensor<1x128x384x192xbf16>, tensor<1x128x384x128xbf16>) -> tensor<1x128x384x192xbf16>
      %387 = sim.generic "aten.slice"(%386) {flop_count = 0.000000e+00 : f64, byte_count = 0.000000e+00 : f64} : (tensor<1x128x384x192xbf16>) -> tensor<1x128x384x64xbf16>
      %388 = sim.elementwise "copy" %387, %378 : tensor<1x128x384x64xbf16>, tensor<1x1x384x64xbf16> -> tensor<1x128x384x64xbf16>
      %389 = sim.generic "aten.slice_scatter"(%386, %388) {flop_count = 0x4162000000000000 : f64, byte_count = 0x4185000000000000 : f64} : (tensor<1x128x384x192xbf16>, tensor<1x128x384x64xbf16>) -> tensor<1x128x384x192xbf16>
      %390 = sim.view %380 : tensor<1x128x384x192xbf16> -> tensor<1x384x128x192xbf16>
      %391 = sim.view %389 : tensor<1x128x384x192xbf16> -> tensor<1x384x128x192xbf16>
      %392 = sim.generic "aten.transpose"(%381) {flop_count = 0.000000e+00 : f64, byte_count = 0.000000e+00 : f64} : (tensor<1x384x32768xbf16>) -> tensor<1x384x128x128xbf16>
      %393 = sim.attention %390, %391, %392 {causal} : (tensor<1x384x128x192xbf16>, tensor<1x384x128x192xbf16>, tensor<1x384x128x128xbf16>) -> tensor<1x384x128x128xbf16>
      %394 = sim.view %393 : tensor<1x384x128x128xbf16> -> tensor<1x384x16384xbf16>
      %395 = sim.matmul %394, %321 {transpose_rhs} : (tensor<1x384x16384xbf16>, tensor<7168x16384xbf16>) -> tensor<1x384x7168xbf16>
      %396 = sim.elementwise "add" %314, %395 : tensor<1x384x7168xbf16>, tensor<1x384x7168xbf16> -> tensor<1x384x7168xbf16>
      %397 = sim.elementwise "cast" %396 : tensor<1x384x7168xbf16> -> tensor<1x384x7168xf32>
      %398 = sim.elementwise "pow" %397 : tensor<1x384x7168xf32> -> tensor<1x384x7168xf32>
      %399 = sim.reduce "mean" %398 [2] : tensor<1x384x7168xf32> -> tensor<1x384x1xf32>
      %400 = sim.elementwise "add" %399 : tensor<1x384x1xf32> -> tensor<1x384x1xf32>
      %401 = sim.elementwise "rsqrt" %400 : tensor<1x384x1xf32> -> tensor<1x384x1xf32>
      %402 = sim.elementwise "mul" %397, %401 : tensor<1x384x7168xf32>, tensor<1x384x1xf32> -> tensor<1x384x7168xf32>
      %403 = sim.elementwise "cast" %402 : tensor<1x384x7168xf32> -> tensor<1x384x7168xbf16>
      %404 = sim.elementwise "mul" %329, %403 : tensor<7168xbf16>, tensor<1x384x7168xbf16> -> tensor<1x384x7168xbf16>
      %405 = sim.view %404 : tensor<1x384x7168xbf16> -> tensor<384x7168xbf16>
      %406 = sim.elementwise "cast" %405 : tensor<384x7168xbf16> -> tensor<384x7168xf32>
      %407 = sim.elementwise "cast" %324 : tensor<256x7168xbf16> -> tensor<256x7168xf32>
      %408 = sim.matmul %406, %407 {transpose_rhs} : (tensor<384x7168xf32>, tensor<256x7168xf32>) -> tensor<384x256xf32>
      %409 = sim.elementwise "sigmoid" %408 : tensor<384x256xf32> -> tensor<384x256xf32>
      %410 = sim.elementwise "add" %409, %330 : tensor<384x256xf32>, tensor<256xbf16> -> tensor<384x256xf32>
      %411 = sim.view %410 : tensor<384x256xf32> -> tensor<384x8x32xf32>
      %412, %413 = sim.topk %411 k = 2 : tensor<384x8x32xf32> -> (tensor<384x8x2xf32>, tensor<384x8x2xi64>)
      %414 = sim.reduce "sum" %412 [2] : tensor<384x8x2xf32> -> tensor<384x8xf32>
      %415, %416 = sim.topk %414 k = 4 : tensor<384x8xf32> -> (tensor<384x4xf32>, tensor<384x4xi64>)
      %417 = sim.generic "aten.zeros_like"() {flop_count = 0.000000e+00 : f64, byte_count = 1.228800e+04 : f64} : () -> tensor<384x8xf32>
      %418 = sim.generic "aten.scatter"(%417, %416) {flop_count = 0.000000e+00 : f64, byte_count = 3.686400e+04 : f64} : (tensor<384x8xf32>, tensor<384x4xi64>) -> tensor<384x8xf32>
      %419 = sim.generic "aten._unsafe_view"(%418) {flop_count = 0.000000e+00 : f64, byte_count = 0.000000e+00 : f64} : (tensor<384x8xf32>) -> tensor<384x256xf32>
      %420 = sim.elementwise "cast" %419 : tensor<384x256xf32> -> tensor<384x256xi1>
      %421 = sim.elementwise "not" %420 : tensor<384x256xi1> -> tensor<384x256xi1>
      %422 = sim.elementwise "where" %410, %421 : tensor<384x256xf32>, tensor<384x256xi1> -> tensor<384x256xf32>
      %423, %424 = sim.topk %422 k = 8 : tensor<384x256xf32> -> (tensor<384x8xf32>, tensor<384x8xi64>)
      %425 = sim.generic "aten.gather"(%409, %424) {flop_count = 0.000000e+00 : f64, byte_count = 4.300800e+05 : f64} : (tensor<384x256xf32>, tensor<384x8xi64>) -> tensor<384x8xf32>
      %426 = sim.reduce "sum" %425 [1] : tensor<384x8xf32> -> tensor<384x1xf32>
      %427 = sim.elementwise "add" %426 : tensor<384x1xf32> -> tensor<384x1xf32>
      %428 = sim.elementwise "div" %425, %427 : tensor<384x8xf32>, tensor<384x1xf32> -> tensor<384x8xf32>
      %429 = sim.elementwise "mul" %428 : tensor<384x8xf32> -> tensor<384x8xf32>
      %430 = sim.view %404 : tensor<1x384x7168xbf16> -> tensor<384x7168xbf16>
      %431 = sim.moe_dispatch %430, %424 : (tensor<384x7168xbf16>, tensor<384x8xi64>) -> tensor<256x12x7168xbf16>
      %432 = sim.matmul %431, %322 {transpose_rhs} : (tensor<256x12x7168xbf16>, tensor<256x4096x7168xbf16>) -> tensor<256x12x4096xbf16>
      %433 = sim.generic "aten.split"(%432) {flop_count = 0.000000e+00 : f64, byte_count = 0.000000e+00 : f64} : (tensor<256x12x4096xbf16>) -> tensor<256x12x2048xbf16>
      %434 = sim.elementwise "silu" %433 : tensor<256x12x2048xbf16> -> tensor<256x12x2048xbf16>
      %435 = sim.generic "aten.split"(%432) {flop_count = 0.000000e+00 : f64, byte_count = 0.000000e+00 : f64} : (tensor<256x12x4096xbf16>) -> tensor<256x12x2048xbf16>
      %436 = sim.elementwise "mul" %434, %435 : tensor<256x12x2048xbf16>, tensor<256x12x2048xbf16> -> tensor<256x12x2048xbf16>
      %437 = sim.matmul %436, %323 {transpose_rhs} : (tensor<256x12x2048xbf16>, tensor<256x7168x2048xbf16>) -> tensor<256x12x7168xbf16>
      %438 = sim.elementwise "cast" %429 : tensor<384x8xf32> -> tensor<384x8xbf16>
      %439 = sim.moe_combine %437, %424 weights %438 : tensor<384x8xbf16> : (tensor<256x12x7168xbf16>, tensor<384x8xi64>) -> tensor<384x7168xbf16>
      %440 = sim.matmul %404, %325 {transpose_rhs} : (tensor<1x384x7168xbf16>, tensor<2048x7168xbf16>) -> tensor<1x384x2048xbf16>
      %441 = sim.elementwise "silu" %440 : tensor<1x384x2048xbf16> -> tensor<1x384x2048xbf16>
      %442 = sim.matmul %404, %326 {transpose_rhs} : (tensor<1x384x7168xbf16>, tensor<2048x7168xbf16>) -> tensor<1x384x2048xbf16>
      %443 = sim.elementwise "mul" %441, %442 : tensor<1x384x2048xbf16>, tensor<1x384x2048xbf16> -> tensor<1x384x2048xbf16>
      %444 = sim.matmul %443, %327 {transpose_rhs} : (tensor<1x384x2048xbf16>, tensor<7168x2048xbf16>) -> tensor<1x384x7168xbf16>
      %445 = sim.view %439 : tensor<384x7168xbf16> -> tensor<1x384x7168xbf16>
      %446 = sim.elementwise "add" %445, %444 : tensor<1x384x7168xbf16>, tensor<1x384x7168xbf16> -> tensor<1x384x7168xbf16>
      %447 = sim.elementwise "add" %396, %446 : tensor<1x384x7168xbf16>, tensor<1x384x7168xbf16> -> tensor<1x384x7168xbf16>
      %448 = sim.view %338 : tensor<1x384x7168xbf16> -> tensor<384x7168xbf16>
      %449 = sim.view %347 : tensor<1x384x1536xbf16> -> tensor<384x1536xbf16>
      %450 = sim.view %338 : tensor<1x384x7168xbf16> -> tensor<384x7168xbf16>
      %451 = sim.view %358 : tensor<1x384x512xbf16> -> tensor<384x512xbf16>
      %452 = sim.view %393 : tensor<1x384x128x128xbf16> -> tensor<384x16384xbf16>
      %453 = sim.view %407 : tensor<256x7168xf32> -> tensor<7168x256xf32>
      %454 = sim.view %404 : tensor<1x384x7168xbf16> -> tensor<384x7168xbf16>
      %455 = sim.view %404 : tensor<1x384x7168xbf16> -> tensor<384x7168xbf16>
      %456 = sim.view %443 : tensor<1x384x2048xbf16> -> tensor<384x2048xbf16>
      sim.yield %447, %331, %335, %335, %337, %448, %340, %344, %344, %346, %449, %450, %351, %355, %355, %357, %451, %390, %392, %391, %393, %452, %397, %401, %401, %403, %406, %453, %409, %424, %427, %425, %431, %433, %435, %434, %436, %437, %438, %454, %440, %441, %455, %442, %456 : tensor<1x384x7168xbf16>, tensor<1x384x7168xf32>, tensor<1x384x1xf32>, tensor<1x384x1xf32>, tensor<1x384x7168xbf16>, tensor<384x7168xbf16>, tensor<1x384x1536xf32>, tensor<1x384x1xf32>, tensor<1x384x1xf32>, tensor<1x384x1536xbf16>, tensor<384x1536xbf16>, tensor<384x7168xbf16>, tensor<1x384x512xf32>, tensor<1x384x1xf32>, tensor<1x384x1xf32>, tensor<1x384x512xbf16>, tensor<384x512xbf16>, tensor<1x384x128x192xbf16>, tensor<1x384x128x128xbf16>, tensor<1x384x128x192xbf16>, tensor<1x384x128x128xbf16>, tensor<384x16384xbf16>, tensor<1x384x7168xf32>, tensor<1x384x1xf32>, tensor<1x384x1xf32>, tensor<1x384x7168xbf16>, tensor<384x7168xf32>, tensor<7168x256xf32>, tensor<384x256xf32>, tensor<384x8xi64>, tensor<384x1xf32>, tensor<384x8xf32>, tensor<256x12x7168xbf16>, tensor<256x12x2048xbf16>, tensor<256x12x2048xbf16>, tensor<256x12x2048xbf16>, tensor<256x12x2048xbf16>, tensor<256x12x7168xbf16>, tensor<384x8xbf16>, tensor<384x7168xbf16>, tensor<1x384x2048xbf16>, tensor<1x384x2048xbf16>, tensor<384x7168xbf16>, tensor<1x384x2048xbf16>, tensor<384x2048xbf16>
    }
    %457 = sim.elementwise "cast" %269 : tensor<1x384x7168xbf16> -> tensor<1x384x7168xf32>
    %458 = sim.elementwise "pow" %457 : tensor<1x384x7168xf32> -> tensor<1x384x7168xf32>
    %459 = sim.reduce "mean" %458 [2] : tensor<1x384x7168xf32> -> tensor<1x384x1xf32>
    %460 = sim.elementwise "add" %459 : tensor<1x384x1xf32> -> tensor<1x384x1xf32>
    %461 = sim.elementwise "rsqrt" %460 : tensor<1x384x1xf32> -> tensor<1x384x1xf32>
    %462 = sim.elementwise "mul" %457, %461 : tensor<1x384x7168xf32>, tensor<1x384x1xf32> -> tensor<1x384x7168xf32>
    %463 = sim.elementwise "cast" %462 : tensor<1x384x7168xf32> -> tensor<1x384x7168xbf16>
    %464 = sim.elementwise "mul" %5, %463 : tensor<7168xbf16>, tensor<1x384x7168xbf16> -> tensor<1x384x7168xbf16>
    %465 = sim.matmul %464, %6 {transpose_rhs} : (tensor<1x384x7168xbf16>, tensor<129280x7168xbf16>) -> tensor<1x384x129280xbf16>
    %466 = sim.elementwise "cast" %465 : tensor<1x384x129280xbf16> -> tensor<1x384x129280xf32>
    %467 = sim.view %466 : tensor<1x384x129280xf32> -> tensor<384x129280xf32>
    %468 = sim.generic "aten._log_softmax"(%467) {flop_count = 0x4187AC0000000000 : f64, byte_count = 0x41B7AC0000000000 : f64} : (tensor<384x129280xf32>) -> tensor<384x129280xf32>
    %469 = sim.view %7 : tensor<1x384xi64> -> tensor<384xi64>
    %470, %471 = sim.generic "aten.nll_loss_forward"(%468, %469) {flop_count = 2.000000e+00 : f64, byte_count = 0x41A7AC1810000000 : f64} : (tensor<384x129280xf32>, tensor<384xi64>) -> (tensor<f32>, tensor<f32>)
    %472 = sim.view %464 : tensor<1x384x7168xbf16> -> tensor<384x7168xbf16>
    sim.yield %470, %3, %137, %138, %139, %140, %141, %142, %143, %144, %145, %146, %147, %148, %149, %150, %151, %152, %153, %154, %155, %156, %157, %158, %159, %160, %161, %162, %163, %164, %165, %166, %167, %270, %271, %272, %273, %274, %275, %276, %277, %278, %279, %280, %281, %282, %283, %284, %285, %286, %287, %288, %289, %290, %291, %292, %293, %294, %295, %296, %297, %298, %299, %300, %301, %302, %303, %304, %305, %306, %307, %308, %309, %310, %311, %312, %313, %457, %461, %461, %463, %472, %469, %468, %468, %471, %134, %135 : tensor<f32>, tensor<1x384xi64>, tensor<3x1x384x7168xf32>, tensor<3x1x384x1xf32>, tensor<3x1x384x1xf32>, tensor<3x1x384x7168xbf16>, tensor<3x384x7168xbf16>, tensor<3x1x384x1536xf32>, tensor<3x1x384x1xf32>, tensor<3x1x384x1xf32>, tensor<3x1x384x1536xbf16>, tensor<3x384x1536xbf16>, tensor<3x384x7168xbf16>, tensor<3x1x384x512xf32>, tensor<3x1x384x1xf32>, tensor<3x1x384x1xf32>, tensor<3x1x384x512xbf16>, tensor<3x384x512xbf16>, tensor<3x1x384x128x192xbf16>, tensor<3x1x384x128x128xbf16>, tensor<3x1x384x128x192xbf16>, tensor<3x1x384x128x128xbf16>, tensor<3x384x16384xbf16>, tensor<3x1x384x7168xf32>, tensor<3x1x384x1xf32>, tensor<3x1x384x1xf32>, tensor<3x1x384x7168xbf16>, tensor<3x384x7168xbf16>, tensor<3x1x384x18432xbf16>, tensor<3x1x384x18432xbf16>, tensor<3x384x7168xbf16>, tensor<3x1x384x18432xbf16>, tensor<3x384x18432xbf16>, tensor<58x1x384x7168xf32>, tensor<58x1x384x1xf32>, tensor<58x1x384x1xf32>, tensor<58x1x384x7168xbf16>, tensor<58x384x7168xbf16>, tensor<58x1x384x1536xf32>, tensor<58x1x384x1xf32>, tensor<58x1x384x1xf32>, tensor<58x1x384x1536xbf16>, tensor<58x384x1536xbf16>, tensor<58x384x7168xbf16>, tensor<58x1x384x512xf32>, tensor<58x1x384x1xf32>, tensor<58x1x384x1xf32>, tensor<58x1x384x512xbf16>, tensor<58x384x512xbf16>, tensor<58x1x384x128x192xbf16>, tensor<58x1x384x128x128xbf16>, tensor<58x1x384x128x192xbf16>, tensor<58x1x384x128x128xbf16>, tensor<58x384x16384xbf16>, tensor<58x1x384x7168xf32>, tensor<58x1x384x1xf32>, tensor<58x1x384x1xf32>, tensor<58x1x384x7168xbf16>, tensor<58x384x7168xf32>, tensor<58x7168x256xf32>, tensor<58x384x256xf32>, tensor<58x384x8xi64>, tensor<58x384x1xf32>, tensor<58x384x8xf32>, tensor<58x256x12x7168xbf16>, tensor<58x256x12x2048xbf16>, tensor<58x256x12x2048xbf16>, tensor<58x256x12x2048xbf16>, tensor<58x256x12x2048xbf16>, tensor<58x256x12x7168xbf16>, tensor<58x384x8xbf16>, tensor<58x384x7168xbf16>, tensor<58x1x384x2048xbf16>, tensor<58x1x384x2048xbf16>, tensor<58x384x7168xbf16>, tensor<58x1x384x2048xbf16>, tensor<58x384x2048xbf16>, tensor<1x384x7168xf32>, tensor<1x384x1xf32>, tensor<1x384x1xf32>, tensor<1x384x7168xbf16>, tensor<384x7168xbf16>, tensor<384xi64>, tensor<384x129280xf32>, tensor<384x129280xf32>, tensor<f32>, tensor<1x384x64xbf16>, tensor<1x384x64xbf16>
  }
  %473, %474, %475, %476, %477, %478, %479, %480, %481, %482, %483, %484, %485, %486, %487, %488, %489, %490, %491, %492, %493, %494, %495, %496, %497, %498, %499, %500, %501, %502 = sim.phase "backward" -> tensor<129280x7168xbf16>, tensor<7168xbf16>, tensor<129280x7168xbf16>, tensor<3x1536x7168xbf16>, tensor<3x1536xbf16>, tensor<3x24576x1536xbf16>, tensor<3x576x7168xbf16>, tensor<3x512xbf16>, tensor<3x32768x512xbf16>, tensor<3x7168x16384xbf16>, tensor<3x18432x7168xbf16>, tensor<3x18432x7168xbf16>, tensor<3x7168x18432xbf16>, tensor<3x7168xbf16>, tensor<3x7168xbf16>, tensor<58x1536x7168xbf16>, tensor<58x1536xbf16>, tensor<58x24576x1536xbf16>, tensor<58x576x7168xbf16>, tensor<58x512xbf16>, tensor<58x32768x512xbf16>, tensor<58x7168x16384xbf16>, tensor<58x256x4096x7168xbf16>, tensor<58x256x7168x2048xbf16>, tensor<58x256x7168xbf16>, tensor<58x2048x7168xbf16>, tensor<58x2048x7168xbf16>, tensor<58x7168x2048xbf16>, tensor<58x7168xbf16>, tensor<58x7168xbf16> {
    %503 = sim.generic "aten.nll_loss_backward"(%36, %120, %119, %122) {flop_count = 0x4187AC0000000000 : f64, byte_count = 0x41B7AC0C08000000 : f64} : (tensor<f32>, tensor<384x129280xf32>, tensor<384xi64>, tensor<f32>) -> tensor<384x129280xf32>
    %504 = sim.generic "aten._log_softmax_backward_data"(%503, %121) {flop_count = 0x4187AC0000000000 : f64, byte_count = 0x41C1C10000000000 : f64} : (tensor<384x129280xf32>, tensor<384x129280xf32>) -> tensor<384x129280xf32>
    %505 = sim.view %504 : tensor<384x129280xf32> -> tensor<1x384x129280xf32>
    %506 = sim.elementwise "cast" %505 : tensor<1x384x129280xf32> -> tensor<1x384x129280xbf16>
    %507 = sim.view %506 : tensor<1x384x129280xbf16> -> tensor<384x129280xbf16>
    %508 = sim.matmul %507, %118 {transpose_lhs} : (tensor<384x129280xbf16>, tensor<384x7168xbf16>) -> tensor<129280x7168xbf16>
    %509 = sim.matmul %506, %6 : (tensor<1x384x129280xbf16>, tensor<129280x7168xbf16>) -> tensor<1x384x7168xbf16>
    %510 = sim.elementwise "mul" %509, %5 : tensor<1x384x7168xbf16>, tensor<7168xbf16> -> tensor<1x384x7168xbf16>
    %511 = sim.elementwise "mul" %509, %117 : tensor<1x384x7168xbf16>, tensor<1x384x7168xbf16> -> tensor<1x384x7168xbf16>
    %512 = sim.reduce "sum" %511 [0, 1] : tensor<1x384x7168xbf16> -> tensor<1x1x7168xbf16>
    %513 = sim.elementwise "cast" %510 : tensor<1x384x7168xbf16> -> tensor<1x384x7168xf32>
    %514 = sim.elementwise "mul" %513, %114 : tensor<1x384x7168xf32>, tensor<1x384x7168xf32> -> tensor<1x384x7168xf32>
    %515 = sim.elementwise "mul" %513, %115 : tensor<1x384x7168xf32>, tensor<1x384x1xf32> -> tensor<1x384x7168xf32>
    %516 = sim.reduce "sum" %514 [2] : tensor<1x384x7168xf32> -> tensor<1x384x1xf32>
    %517 = sim.elementwise "pow" %116 : tensor<1x384x1xf32> -> tensor<1x384x1xf32>
    %518 = sim.elementwise "mul" %516 : tensor<1x384x1xf32> -> tensor<1x384x1xf32>
    %519 = sim.elementwise "mul" %518, %517 : tensor<1x384x1xf32>, tensor<1x384x1xf32> -> tensor<1x384x1xf32>
    %520 = sim.elementwise "div" %519 : tensor<1x384x1xf32> -> tensor<1x384x7168xf32>
    %521 = sim.elementwise "pow" %114 : tensor<1x384x7168xf32> -> tensor<1x384x7168xf32>
    %522 = sim.elementwise "mul" %521 : tensor<1x384x7168xf32> -> tensor<1x384x7168xf32>
    %523 = sim.elementwise "mul" %520, %522 : tensor<1x384x7168xf32>, tensor<1x384x7168xf32> -> tensor<1x384x7168xf32>
    %524 = sim.elementwise "add" %515, %523 : tensor<1x384x7168xf32>, tensor<1x384x7168xf32> -> tensor<1x384x7168xf32>
    %525 = sim.elementwise "cast" %524 : tensor<1x384x7168xf32> -> tensor<1x384x7168xbf16>
    %526 = sim.view %512 : tensor<1x1x7168xbf16> -> tensor<7168xbf16>
    %527, %528, %529, %530, %531, %532, %533, %534, %535, %536, %537, %538, %539, %540, %541, %542 = sim.repeat 58 iter(%525 : tensor<1x384x7168xbf16>) slices(%20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, %96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, %112, %113 : tensor<58x1536x7168xbf16>, tensor<58x1536xbf16>, tensor<58x24576x1536xbf16>, tensor<58x576x7168xbf16>, tensor<58x512xbf16>, tensor<58x32768x512xbf16>, tensor<58x7168x16384xbf16>, tensor<58x256x4096x7168xbf16>, tensor<58x256x7168x2048xbf16>, tensor<58x256x7168xbf16>, tensor<58x2048x7168xbf16>, tensor<58x2048x7168xbf16>, tensor<58x7168x2048xbf16>, tensor<58x7168xbf16>, tensor<58x7168xbf16>, tensor<58x256xbf16>, tensor<58x1x384x7168xf32>, tensor<58x1x384x1xf32>, tensor<58x1x384x1xf32>, tensor<58x1x384x7168xbf16>, tensor<58x384x7168xbf16>, tensor<58x1x384x1536xf32>, tensor<58x1x384x1xf32>, tensor<58x1x384x1xf32>, tensor<58x1x384x1536xbf16>, tensor<58x384x1536xbf16>, tensor<58x384x7168xbf16>, tensor<58x1x384x512xf32>, tensor<58x1x384x1xf32>, tensor<58x1x384x1xf32>, tensor<58x1x384x512xbf16>, tensor<58x384x512xbf16>, tensor<58x1x384x128x192xbf16>, tensor<58x1x384x128x128xbf16>, tensor<58x1x384x128x192xbf16>, tensor<58x1x384x128x128xbf16>, tensor<58x384x16384xbf16>, tensor<58x1x384x7168xf32>, tensor<58x1x384x1xf32>, tensor<58x1x384x1xf32>, tensor<58x1x384x7168xbf16>, tensor<58x384x7168xf32>, tensor<58x7168x256xf32>, tensor<58x384x256xf32>, tensor<58x384x8xi64>, tensor<58x384x1xf32>, tensor<58x384x8xf32>, tensor<58x256x12x7168xbf16>, tensor<58x256x12x2048xbf16>, tensor<58x256x12x2048xbf16>, tensor<58x256x12x2048xbf16>, tensor<58x256x12x2048xbf16>, tensor<58x256x12x7168xbf16>, tensor<58x384x8xbf16>, tensor<58x384x7168xbf16>, tensor<58x1x384x2048xbf16>, tensor<58x1x384x2048xbf16>, tensor<58x384x7168xbf16>, tensor<58x1x384x2048xbf16>, tensor<58x384x2048xbf16>) {reverse} -> (tensor<1x384x7168xbf16>, tensor<58x1536x7168xbf16>, tensor<58x1536xbf16>, tensor<58x24576x1536xbf16>, tensor<58x576x7168xbf16>, tensor<58x512xbf16>, tensor<58x32768x512xbf16>, tensor<58x7168x16384xbf16>, tensor<58x256x4096x7168xbf16>, tensor<58x256x7168x2048xbf16>, tensor<58x256x7168xbf16>, tensor<58x2048x7168xbf16>, tensor<58x2048x7168xbf16>, tensor<58x7168x2048xbf16>, tensor<58x7168xbf16>, tensor<58x7168xbf16>) {
    ^bb0(%543: tensor<1x384x7168xbf16>, %544: tensor<1536x7168xbf16>, %545: tensor<1536xbf16>, %546: tensor<24576x1536xbf16>, %547: tensor<576x7168xbf16>, %548: tensor<512xbf16>, %549: tensor<32768x512xbf16>, %550: tensor<7168x16384xbf16>, %551: tensor<256x4096x7168xbf16>, %552: tensor<256x7168x2048xbf16>, %553: tensor<256x7168xbf16>, %554: tensor<2048x7168xbf16>, %555: tensor<2048x7168xbf16>, %556: tensor<7168x2048xbf16>, %557: tensor<7168xbf16>, %558: tensor<7168xbf16>, %559: tensor<256xbf16>, %560: tensor<1x384x7168xf32>, %561: tensor<1x384x1xf32>, %562: tensor<1x384x1xf32>, %563: tensor<1x384x7168xbf16>, %564: tensor<384x7168xbf16>, %565: tensor<1x384x1536xf32>, %566: tensor<1x384x1xf32>, %567: tensor<1x384x1xf32>, %568: tensor<1x384x1536xbf16>, %569: tensor<384x1536xbf16>, %570: tensor<384x7168xbf16>, %571: tensor<1x384x512xf32>, %572: tensor<1x384x1xf32>, %573: tensor<1x384x1xf32>, %574: tensor<1x384x512xbf16>, %575: tensor<384x512xbf16>, %576: tensor<1x384x128x192xbf16>, %577: tensor<1x384x128x128xbf16>, %578: tensor<1x384x128x192xbf16>, %579: tensor<1x384x128x128xbf16>, %580: tensor<384x16384xbf16>, %581: tensor<1x384x7168xf32>, %582: tensor<1x384x1xf32>, %583: tensor<1x384x1xf32>, %584: tensor<1x384x7168xbf16>, %585: tensor<384x7168xf32>, %586: tensor<7168x256xf32>, %587: tensor<384x256xf32>, %588: tensor<384x8xi64>, %589: tensor<384x1xf32>, %590: tensor<384x8xf32>, %591: tensor<256x12x7168xbf16>, %592: tensor<256x12x2048xbf16>, %593: tensor<256x12x2048xbf16>, %594: tensor<256x12x2048xbf16>, %595: tensor<256x12x2048xbf16>, %596: tensor<256x12x7168xbf16>, %597: tensor<384x8xbf16>, %598: tensor<384x7168xbf16>, %599: tensor<1x384x2048xbf16>, %600: tensor<1x384x2048xbf16>, %601: tensor<384x7168xbf16>, %602: tensor<1x384x2048xbf16>, %603: tensor<384x2048xbf16>):
      %604 = sim.view %543 : tensor<1x384x7168xbf16> -> tensor<384x7168xbf16>
      %605 = sim.matmul %604, %603 {transpose_lhs} : (tensor<384x7168xbf16>, tensor<384x2048xbf16>) -> tensor<7168x2048xbf16>
      %606 = sim.matmul %543, %556 : (tensor<1x384x7168xbf16>, tensor<7168x2048xbf16>) -> tensor<1x384x2048xbf16>
      %607 = sim.elementwise "mul" %606, %600 : tensor<1x384x2048xbf16>, tensor<1x384x2048xbf16> -> tensor<1x384x2048xbf16>
      %608 = sim.elementwise "mul" %606, %602 : tensor<1x384x2048xbf16>, tensor<1x384x2048xbf16> -> tensor<1x384x2048xbf16>
      %609 = sim.view %607 : tensor<1x384x2048xbf16> -> tensor<384x2048xbf16>
      %610 = sim.matmul %609, %601 {transpose_lhs} : (tensor<384x2048xbf16>, tensor<384x7168xbf16>) -> tensor<2048x7168xbf16>
      %611 = sim.matmul %607, %555 : (tensor<1x384x2048xbf16>, tensor<2048x7168xbf16>) -> tensor<1x384x7168xbf16>
      %612 = sim.elementwise "silu_grad" %608, %599 : tensor<1x384x2048xbf16>, tensor<1x384x2048xbf16> -> tensor<1x384x2048xbf16>
      %613 = sim.view %612 : tensor<1x384x2048xbf16> -> tensor<384x2048xbf16>
      %614 = sim.matmul %613, %598 {transpose_lhs} : (tensor<384x2048xbf16>, tensor<384x7168xbf16>) -> tensor<2048x7168xbf16>
      %615 = sim.matmul %612, %554 : (tensor<1x384x2048xbf16>, tensor<2048x7168xbf16>) -> tensor<1x384x7168xbf16>
      %616 = sim.elementwise "add" %611, %615 : tensor<1x384x7168xbf16>, tensor<1x384x7168xbf16> -> tensor<1x384x7168xbf16>
      %617 = sim.view %543 : tensor<1x384x7168xbf16> -> tensor<384x7168xbf16>
      %618 = sim.moe_dispatch %617, %588 : (tensor<384x7168xbf16>, tensor<384x8xi64>) -> tensor<256x12x7168xbf16>
      %619 = sim.generic "moe_combine_weight_grad"(%596, %617, %588) {flop_count = 0x4185000000000000 : f64, byte_count = 0x4187A3C000000000 : f64} : (tensor<256x12x7168xbf16>, tensor<384x7168xbf16>, tensor<384x8xi64>) -> tensor<384x8xbf16>
      %620 = sim.elementwise "cast" %619 : tensor<384x8xbf16> -> tensor<384x8xf32>
      %621 = sim.matmul %595, %618 {transpose_lhs} : (tensor<256x12x2048xbf16>, tensor<256x12x7168xbf16>) -> tensor<256x2048x7168xbf16>
      %622 = sim.matmul %618, %552 : (tensor<256x12x7168xbf16>, tensor<256x7168x2048xbf16>) -> tensor<256x12x2048xbf16>
      %623 = sim.elementwise "mul" %622, %594 : tensor<256x12x2048xbf16>, tensor<256x12x2048xbf16> -> tensor<256x12x2048xbf16>
      %624 = sim.elementwise "mul" %622, %593 : tensor<256x12x2048xbf16>, tensor<256x12x2048xbf16> -> tensor<256x12x2048xbf16>
      %625 = sim.elementwise "silu_grad" %624, %592 : tensor<256x12x2048xbf16>, tensor<256x12x2048xbf16> -> tensor<256x12x2048xbf16>
      %626 = sim.generic "aten.cat"(%625, %623) {flop_count = 0.000000e+00 : f64, byte_count = 0x4188000000000000 : f64} : (tensor<256x12x2048xbf16>, tensor<256x12x2048xbf16>) -> tensor<256x12x4096xbf16>
      %627 = sim.matmul %591, %626 {transpose_lhs} : (tensor<256x12x7168xbf16>, tensor<256x12x4096xbf16>) -> tensor<256x7168x4096xbf16>
      %628 = sim.matmul %626, %551 : (tensor<256x12x4096xbf16>, tensor<256x4096x7168xbf16>) -> tensor<256x12x7168xbf16>
      %629 = sim.moe_combine %628, %588 : (tensor<256x12x7168xbf16>, tensor<384x8xi64>) -> tensor<384x7168xbf16>
      %630 = sim.view %629 : tensor<384x7168xbf16> -> tensor<1x384x7168xbf16>
      %631 = sim.elementwise "add" %616, %630 : tensor<1x384x7168xbf16>, tensor<1x384x7168xbf16> -> tensor<1x384x7168xbf16>
      %632 = sim.elementwise "mul" %620 : tensor<384x8xf32> -> tensor<384x8xf32>
      %633 = sim.elementwise "div" %590, %589 : tensor<384x8xf32>, tensor<384x1xf32> -> tensor<384x8xf32>
      %634 = sim.elementwise "div" %633, %589 : tensor<384x8xf32>, tensor<384x1xf32> -> tensor<384x8xf32>
      %635 = sim.elementwise "neg" %632 : tensor<384x8xf32> -> tensor<384x8xf32>
      %636 = sim.elementwise "mul" %635, %634 : tensor<384x8xf32>, tensor<384x8xf32> -> tensor<384x8xf32>
      %637 = sim.elementwise "div" %632, %589 : tensor<384x8xf32>, tensor<384x1xf32> -> tensor<384x8xf32>
      %638 = sim.reduce "sum" %636 [1] : tensor<384x8xf32> -> tensor<384x1xf32>
      %639 = sim.elementwise "add" %637, %638 : tensor<384x8xf32>, tensor<384x1xf32> -> tensor<384x8xf32>
      %640 = sim.generic "aten.new_zeros"() {flop_count = 0.000000e+00 : f64, byte_count = 3.932160e+05 : f64} : () -> tensor<384x256xf32>
      %641 = sim.generic "aten.scatter_add"(%640, %588, %639) {flop_count = 0.000000e+00 : f64, byte_count = 8.232960e+05 : f64} : (tensor<384x256xf32>, tensor<384x8xi64>, tensor<384x8xf32>) -> tensor<384x256xf32>
      %642 = sim.elementwise "sigmoid_grad" %641, %587 : tensor<384x256xf32>, tensor<384x256xf32> -> tensor<384x256xf32>
      %643 = sim.matmul %642, %585 {transpose_lhs} : (tensor<384x256xf32>, tensor<384x7168xf32>) -> tensor<256x7168xf32>
      %644 = sim.matmul %642, %586 {transpose_rhs} : (tensor<384x256xf32>, tensor<7168x256xf32>) -> tensor<384x7168xf32>
      %645 = sim.elementwise "cast" %643 : tensor<256x7168xf32> -> tensor<256x7168xbf16>
      %646 = sim.elementwise "cast" %644 : tensor<384x7168xf32> -> tensor<384x7168xbf16>
      %647 = sim.view %646 : tensor<384x7168xbf16> -> tensor<1x384x7168xbf16>
      %648 = sim.elementwise "add" %631, %647 : tensor<1x384x7168xbf16>, tensor<1x384x7168xbf16> -> tensor<1x384x7168xbf16>
      %649 = sim.elementwise "mul" %648, %558 : tensor<1x384x7168xbf16>, tensor<7168xbf16> -> tensor<1x384x7168xbf16>
      %650 = sim.elementwise "mul" %648, %584 : tensor<1x384x7168xbf16>, tensor<1x384x7168xbf16> -> tensor<1x384x7168xbf16>
      %651 = sim.reduce "sum" %650 [0, 1] : tensor<1x384x7168xbf16> -> tensor<1x1x7168xbf16>
      %652 = sim.elementwise "cast" %649 : tensor<1x384x7168xbf16> -> tensor<1x384x7168xf32>
      %653 = sim.elementwise "mul" %652, %581 : tensor<1x384x7168xf32>, tensor<1x384x7168xf32> -> tensor<1x384x7168xf32>
      %654 = sim.elementwise "mul" %652, %582 : tensor<1x384x7168xf32>, tensor<1x384x1xf32> -> tensor<1x384x7168xf32>
      %655 = sim.reduce "sum" %653 [2] : tensor<1x384x7168xf32> -> tensor<1x384x1xf32>
      %656 = sim.elementwise "pow" %583 : tensor<1x384x1xf32> -> tensor<1x384x1xf32>
      %657 = sim.elementwise "mul" %655 : tensor<1x384x1xf32> -> tensor<1x384x1xf32>
      %658 = sim.elementwise "mul" %657, %656 : tensor<1x384x1xf32>, tensor<1x384x1xf32> -> tensor<1x384x1xf32>
      %659 = sim.elementwise "div" %658 : tensor<1x384x1xf32> -> tensor<1x384x7168xf32>
      %660 = sim.elementwise "pow" %581 : tensor<1x384x7168xf32> -> tensor<1x384x7168xf32>
      %661 = sim.elementwise "mul" %660 : tensor<1x384x7168xf32> -> tensor<1x384x7168xf32>
      %662 = sim.elementwise "mul" %659, %661 : tensor<1x384x7168xf32>, tensor<1x384x7168xf32> -> tensor<1x384x7168xf32>
      %663 = sim.elementwise "add" %654, %662 : tensor<1x384x7168xf32>, tensor<1x384x7168xf32> -> tensor<1x384x7168xf32>
      %664 = sim.elementwise "cast" %663 : tensor<1x384x7168xf32> -> tensor<1x384x7168xbf16>
      %665 = sim.elementwise "add" %543, %664 : tensor<1x384x7168xbf16>, tensor<1x384x7168xbf16> -> tensor<1x384x7168xbf16>
      %666 = sim.view %665 : tensor<1x384x7168xbf16> -> tensor<384x7168xbf16>
      %667 = sim.matmul %666, %580 {transpose_lhs} : (tensor<384x7168xbf16>, tensor<384x16384xbf16>) -> tensor<7168x16384xbf16>
      %668 = sim.matmul %665, %550 : (tensor<1x384x7168xbf16>, tensor<7168x16384xbf16>) -> tensor<1x384x16384xbf16>
      %669 = sim.view %668 : tensor<1x384x16384xbf16> -> tensor<1x384x128x128xbf16>
      %670, %671, %672 = sim.attention_grad %576, %578, %577, %579, %669 {causal} : (tensor<1x384x128x192xbf16>, tensor<1x384x128x192xbf16>, tensor<1x384x128x128xbf16>, tensor<1x384x128x128xbf16>, tensor<1x384x128x128xbf16>) -> (tensor<1x384x128x192xbf16>, tensor<1x384x128x192xbf16>, tensor<1x384x128x128xbf16>)
      %673 = sim.generic "aten.new_empty_strided"() {flop_count = 0.000000e+00 : f64, byte_count = 0x4172000000000000 : f64} : () -> tensor<1x128x384x192xbf16>
      %674 = sim.view %671 : tensor<1x384x128x192xbf16> -> tensor<1x128x384x192xbf16>
      %675 = sim.elementwise "copy" %673, %674 : tensor<1x128x384x192xbf16>, tensor<1x128x384x192xbf16> -> tensor<1x128x384x192xbf16>
      %676 = sim.generic "aten.zeros_like"() {flop_count = 0.000000e+00 : f64, byte_count = 0x4158000000000000 : f64} : () -> tensor<1x128x384x64xbf16>
      %677 = sim.generic "aten.slice"(%675) {flop_count = 0.000000e+00 : f64, byte_count = 0.000000e+00 : f64} : (tensor<1x128x384x192xbf16>) -> tensor<1x128x384x64xbf16>
      %678 = sim.elementwise "copy" %677, %676 : tensor<1x128x384x64xbf16>, tensor<1x128x384x64xbf16> -> tensor<1x128x384x64xbf16>
      %679 = sim.generic "aten.slice_scatter"(%675, %678) {flop_count = 0x4162000000000000 : f64, byte_count = 0x4185000000000000 : f64} : (tensor<1x128x384x192xbf16>, tensor<1x128x384x64xbf16>) -> tensor<1x128x384x192xbf16>
      %680 = sim.generic "aten.new_empty_strided"() {flop_count = 0.000000e+00 : f64, byte_count = 0x4172000000000000 : f64} : () -> tensor<1x128x384x192xbf16>
      %681 = sim.elementwise "copy" %680, %679 : tensor<1x128x384x192xbf16>, tensor<1x128x384x192xbf16> -> tensor<1x128x384x192xbf16>
      %682 = sim.generic "aten.clone"(%675) {flop_count = 0.000000e+00 : f64, byte_count = 0.000000e+00 : f64} : (tensor<1x128x384x192xbf16>) -> tensor<1x128x384x64xbf16>
      %683 = sim.reduce "sum" %682 [1] : tensor<1x128x384x64xbf16> -> tensor<1x1x384x64xbf16>
      %684 = sim.generic "aten.clone"(%681) {flop_count = 0.000000e+00 : f64, byte_count = 0.000000e+00 : f64} : (tensor<1x128x384x192xbf16>) -> tensor<1x128x384x128xbf16>
      %685 = sim.view %672 : tensor<1x384x128x128xbf16> -> tensor<1x128x384x128xbf16>
      %686 = sim.generic "aten.cat"(%684, %685) {flop_count = 0.000000e+00 : f64, byte_count = 0x4188000000000000 : f64} : (tensor<1x128x384x128xbf16>, tensor<1x128x384x128xbf16>) -> tensor<1x128x384x256xbf16>
      %687 = sim.view %686 : tensor<1x128x384x256xbf16> -> tensor<384x32768xbf16>
      %688 = sim.matmul %687, %575 {transpose_lhs} : (tensor<384x32768xbf16>, tensor<384x512xbf16>) -> tensor<32768x512xbf16>
      %689 = sim.matmul %687, %549 : (tensor<384x32768xbf16>, tensor<32768x512xbf16>) -> tensor<384x512xbf16>
      %690 = sim.generic "aten.slice"(%683) {flop_count = 0.000000e+00 : f64, byte_count = 0.000000e+00 : f64} : (tensor<1x1x384x64xbf16>) -> tensor<1x1x384x32xbf16>
      %691 = sim.generic "aten.unsqueeze"(%124) {flop_count = 0.000000e+00 : f64, byte_count = 0.000000e+00 : f64} : (tensor<1x384x64xbf16>) -> tensor<1x1x384x32xbf16>
      %692 = sim.elementwise "mul" %690, %691 : tensor<1x1x384x32xbf16>, tensor<1x1x384x32xbf16> -> tensor<1x1x384x32xbf16>
      %693 = sim.generic "aten.unsqueeze"(%123) {flop_count = 0.000000e+00 : f64, byte_count = 0.000000e+00 : f64} : (tensor<1x384x64xbf16>) -> tensor<1x1x384x32xbf16>
      %694 = sim.elementwise "mul" %690, %693 : tensor<1x1x384x32xbf16>, tensor<1x1x384x32xbf16> -> tensor<1x1x384x32xbf16>
      %695 = sim.generic "aten.slice"(%683) {flop_count = 0.000000e+00 : f64, byte_count = 0.000000e+00 : f64} : (tensor<1x1x384x64xbf16>) -> tensor<1x1x384x32xbf16>
      %696 = sim.elementwise "neg" %695 : tensor<1x1x384x32xbf16> -> tensor<1x1x384x32xbf16>
      %697 = sim.elementwise "mul" %696, %691 : tensor<1x1x384x32xbf16>, tensor<1x1x384x32xbf16> -> tensor<1x1x384x32xbf16>
      %698 = sim.elementwise "add" %694, %697 : tensor<1x1x384x32xbf16>, tensor<1x1x384x32xbf16> -> tensor<1x1x384x32xbf16>
      %699 = sim.elementwise "mul" %695, %693 : tensor<1x1x384x32xbf16>, tensor<1x1x384x32xbf16> -> tensor<1x1x384x32xbf16>
      %700 = sim.elementwise "add" %692, %699 : tensor<1x1x384x32xbf16>, tensor<1x1x384x32xbf16> -> tensor<1x1x384x32xbf16>
      %701 = sim.generic "aten.slice"(%670) {flop_count = 0.000000e+00 : f64, byte_count = 0.000000e+00 : f64} : (tensor<1x384x128x192xbf16>) -> tensor<1x128x384x32xbf16>
      %702 = sim.elementwise "mul" %701, %691 : tensor<1x128x384x32xbf16>, tensor<1x1x384x32xbf16> -> tensor<1x128x384x32xbf16>
      %703 = sim.elementwise "mul" %701, %693 : tensor<1x128x384x32xbf16>, tensor<1x1x384x32xbf16> -> tensor<1x128x384x32xbf16>
      %704 = sim.generic "aten.slice"(%670) {flop_count = 0.000000e+00 : f64, byte_count = 0.000000e+00 : f64} : (tensor<1x384x128x192xbf16>) -> tensor<1x128x384x32xbf16>
      %705 = sim.elementwise "neg" %704 : tensor<1x128x384x32xbf16> -> tensor<1x128x384x32xbf16>
      %706 = sim.elementwise "mul" %705, %691 : tensor<1x128x384x32xbf16>, tensor<1x1x384x32xbf16> -> tensor<1x128x384x32xbf16>
      %707 = sim.elementwise "add" %703, %706 : tensor<1x128x384x32xbf16>, tensor<1x128x384x32xbf16> -> tensor<1x128x384x32xbf16>
      %708 = sim.elementwise "mul" %704, %693 : tensor<1x128x384x32xbf16>, tensor<1x1x384x32xbf16> -> tensor<1x128x384x32xbf16>
      %709 = sim.elementwise "add" %702, %708 : tensor<1x128x384x32xbf16>, tensor<1x128x384x32xbf16> -> tensor<1x128x384x32xbf16>
      %710 = sim.generic "aten.slice_backward"(%698) {flop_count = 0.000000e+00 : f64, byte_count = 7.372800e+04 : f64} : (tensor<1x1x384x32xbf16>) -> tensor<1x1x384x64xbf16>
      %711 = sim.generic "aten.slice_backward"(%700) {flop_count = 0.000000e+00 : f64, byte_count = 7.372800e+04 : f64} : (tensor<1x1x384x32xbf16>) -> tensor<1x1x384x64xbf16>
      %712 = sim.elementwise "add" %710, %711 : tensor<1x1x384x64xbf16>, tensor<1x1x384x64xbf16> -> tensor<1x1x384x64xbf16>
      %713 = sim.generic "aten.slice_backward"(%707) {flop_count = 0.000000e+00 : f64, byte_count = 0x4162000000000000 : f64} : (tensor<1x128x384x32xbf16>) -> tensor<1x128x384x64xbf16>
      %714 = sim.generic "aten.slice_backward"(%709) {flop_count = 0.000000e+00 : f64, byte_count = 0x4162000000000000 : f64} : (tensor<1x128x384x32xbf16>) -> tensor<1x128x384x64xbf16>
      %715 = sim.elementwise "add" %713, %714 : tensor<1x128x384x64xbf16>, tensor<1x128x384x64xbf16> -> tensor<1x128x384x64xbf16>
      %716 = sim.view %689 : tensor<384x512xbf16> -> tensor<1x384x512xbf16>
      %717 = sim.elementwise "mul" %716, %548 : tensor<1x384x512xbf16>, tensor<512xbf16> -> tensor<1x384x512xbf16>
      %718 = sim.elementwise "mul" %716, %574 : tensor<1x384x512xbf16>, tensor<1x384x512xbf16> -> tensor<1x384x512xbf16>
      %719 = sim.reduce "sum" %718 [0, 1] : tensor<1x384x512xbf16> -> tensor<1x1x512xbf16>
      %720 = sim.elementwise "cast" %717 : tensor<1x384x512xbf16> -> tensor<1x384x512xf32>
      %721 = sim.elementwise "mul" %720, %571 : tensor<1x384x512xf32>, tensor<1x384x512xf32> -> tensor<1x384x512xf32>
      %722 = sim.elementwise "mul" %720, %572 : tensor<1x384x512xf32>, tensor<1x384x1xf32> -> tensor<1x384x512xf32>
      %723 = sim.reduce "sum" %721 [2] : tensor<1x384x512xf32> -> tensor<1x384x1xf32>
      %724 = sim.elementwise "pow" %573 : tensor<1x384x1xf32> -> tensor<1x384x1xf32>
      %725 = sim.elementwise "mul" %723 : tensor<1x384x1xf32> -> tensor<1x384x1xf32>
      %726 = sim.elementwise "mul" %725, %724 : tensor<1x384x1xf32>, tensor<1x384x1xf32> -> tensor<1x384x1xf32>
      %727 = sim.elementwise "div" %726 : tensor<1x384x1xf32> -> tensor<1x384x512xf32>
      %728 = sim.elementwise "pow" %571 : tensor<1x384x512xf32> -> tensor<1x384x512xf32>
      %729 = sim.elementwise "mul" %728 : tensor<1x384x512xf32> -> tensor<1x384x512xf32>
      %730 = sim.elementwise "mul" %727, %729 : tensor<1x384x512xf32>, tensor<1x384x512xf32> -> tensor<1x384x512xf32>
      %731 = sim.elementwise "add" %722, %730 : tensor<1x384x512xf32>, tensor<1x384x512xf32> -> tensor<1x384x512xf32>
      %732 = sim.elementwise "cast" %731 : tensor<1x384x512xf32> -> tensor<1x384x512xbf16>
      %733 = sim.view %712 : tensor<1x1x384x64xbf16> -> tensor<1x384x64xbf16>
      %734 = sim.generic "aten.cat"(%732, %733) {flop_count = 0.000000e+00 : f64, byte_count = 8.847360e+05 : f64} : (tensor<1x384x512xbf16>, tensor<1x384x64xbf16>) -> tensor<1x384x576xbf16>
      %735 = sim.view %734 : tensor<1x384x576xbf16> -> tensor<384x576xbf16>
      %736 = sim.matmul %735, %570 {transpose_lhs} : (tensor<384x576xbf16>, tensor<384x7168xbf16>) -> tensor<576x7168xbf16>
      %737 = sim.matmul %734, %547 : (tensor<1x384x576xbf16>, tensor<576x7168xbf16>) -> tensor<1x384x7168xbf16>
      %738 = sim.generic "aten.slice"(%670) {flop_count = 0.000000e+00 : f64, byte_count = 0.000000e+00 : f64} : (tensor<1x384x128x192xbf16>) -> tensor<1x128x384x128xbf16>
      %739 = sim.generic "aten.cat"(%738, %715) {flop_count = 0.000000e+00 : f64, byte_count = 0x4182000000000000 : f64} : (tensor<1x128x384x128xbf16>, tensor<1x128x384x64xbf16>) -> tensor<1x128x384x192xbf16>
      %740 = sim.view %739 : tensor<1x128x384x192xbf16> -> tensor<384x24576xbf16>
      %741 = sim.matmul %740, %569 {transpose_lhs} : (tensor<384x24576xbf16>, tensor<384x1536xbf16>) -> tensor<24576x1536xbf16>
      %742 = sim.matmul %740, %546 : (tensor<384x24576xbf16>, tensor<24576x1536xbf16>) -> tensor<384x1536xbf16>
      %743 = sim.view %742 : tensor<384x1536xbf16> -> tensor<1x384x1536xbf16>
      %744 = sim.elementwise "mul" %743, %545 : tensor<1x384x1536xbf16>, tensor<1536xbf16> -> tensor<1x384x1536xbf16>
      %745 = sim.elementwise "mul" %743, %568 : tensor<1x384x1536xbf16>, tensor<1x384x1536xbf16> -> tensor<1x384x1536xbf16>
      %746 = sim.reduce "sum" %745 [0, 1] : tensor<1x384x1536xbf16> -> tensor<1x1x1536xbf16>
      %747 = sim.elementwise "cast" %744 : tensor<1x384x1536xbf16> -> tensor<1x384x1536xf32>
      %748 = sim.elementwise "mul" %747, %565 : tensor<1x384x1536xf32>, tensor<1x384x1536xf32> -> tensor<1x384x1536xf32>
      %749 = sim.elementwise "mul" %747, %566 : tensor<1x384x1536xf32>, tensor<1x384x1xf32> -> tensor<1x384x1536xf32>
      %750 = sim.reduce "sum" %748 [2] : tensor<1x384x1536xf32> -> tensor<1x384x1xf32>
      %751 = sim.elementwise "pow" %567 : tensor<1x384x1xf32> -> tensor<1x384x1xf32>
      %752 = sim.elementwise "mul" %750 : tensor<1x384x1xf32> -> tensor<1x384x1xf32>
      %753 = sim.elementwise "mul" %752, %751 : tensor<1x384x1xf32>, tensor<1x384x1xf32> -> tensor<1x384x1xf32>
      %754 = sim.elementwise "div" %753 : tensor<1x384x1xf32> -> tensor<1x384x1536xf32>
      %755 = sim.elementwise "pow" %565 : tensor<1x384x1536xf32> -> tensor<1x384x1536xf32>
      %756 = sim.elementwise "mul" %755 : tensor<1x384x1536xf32> -> tensor<1x384x1536xf32>
      %757 = sim.elementwise "mul" %754, %756 : tensor<1x384x1536xf32>, tensor<1x384x1536xf32> -> tensor<1x384x1536xf32>
      %758 = sim.elementwise "add" %749, %757 : tensor<1x384x1536xf32>, tensor<1x384x1536xf32> -> tensor<1x384x1536xf32>
      %759 = sim.elementwise "cast" %758 : tensor<1x384x1536xf32> -> tensor<1x384x1536xbf16>
      %760 = sim.view %759 : tensor<1x384x1536xbf16> -> tensor<384x1536xbf16>
      %761 = sim.matmul %760, %564 {transpose_lhs} : (tensor<384x1536xbf16>, tensor<384x7168xbf16>) -> tensor<1536x7168xbf16>
      %762 = sim.matmul %759, %544 : (tensor<1x384x1536xbf16>, tensor<1536x7168xbf16>) -> tensor<1x384x7168xbf16>
      %763 = sim.elementwise "add" %737, %762 : tensor<1x384x7168xbf16>, tensor<1x384x7168xbf16> -> tensor<1x384x7168xbf16>
      %764 = sim.elementwise "mul" %763, %557 : tensor<1x384x7168xbf16>, tensor<7168xbf16> -> tensor<1x384x7168xbf16>
      %765 = sim.elementwise "mul" %763, %563 : tensor<1x384x7168xbf16>, tensor<1x384x7168xbf16> -> tensor<1x384x7168xbf16>
      %766 = sim.reduce "sum" %765 [0, 1] : tensor<1x384x7168xbf16> -> tensor<1x1x7168xbf16>
      %767 = sim.elementwise "cast" %764 : tensor<1x384x7168xbf16> -> tensor<1x384x7168xf32>
      %768 = sim.elementwise "mul" %767, %560 : tensor<1x384x7168xf32>, tensor<1x384x7168xf32> -> tensor<1x384x7168xf32>
      %769 = sim.elementwise "mul" %767, %561 : tensor<1x384x7168xf32>, tensor<1x384x1xf32> -> tensor<1x384x7168xf32>
      %770 = sim.reduce "sum" %768 [2] : tensor<1x384x7168xf32> -> tensor<1x384x1xf32>
      %771 = sim.elementwise "pow" %562 : tensor<1x384x1xf32> -> tensor<1x384x1xf32>
      %772 = sim.elementwise "mul" %770 : tensor<1x384x1xf32> -> tensor<1x384x1xf32>
      %773 = sim.elementwise "mul" %772, %771 : tensor<1x384x1xf32>, tensor<1x384x1xf32> -> tensor<1x384x1xf32>
      %774 = sim.elementwise "div" %773 : tensor<1x384x1xf32> -> tensor<1x384x7168xf32>
      %775 = sim.elementwise "pow" %560 : tensor<1x384x7168xf32> -> tensor<1x384x7168xf32>
      %776 = sim.elementwise "mul" %775 : tensor<1x384x7168xf32> -> tensor<1x384x7168xf32>
      %777 = sim.elementwise "mul" %774, %776 : tensor<1x384x7168xf32>, tensor<1x384x7168xf32> -> tensor<1x384x7168xf32>
      %778 = sim.elementwise "add" %769, %777 : tensor<1x384x7168xf32>, tensor<1x384x7168xf32> -> tensor<1x384x7168xf32>
      %779 = sim.elementwise "cast" %778 : tensor<1x384x7168xf32> -> tensor<1x384x7168xbf16>
      %780 = sim.elementwise "add" %665, %779 : tensor<1x384x7168xbf16>, tensor<1x384x7168xbf16> -> tensor<1x384x7168xbf16>
      %781 = sim.view %746 : tensor<1x1x1536xbf16> -> tensor<1536xbf16>
      %782 = sim.view %719 : tensor<1x1x512xbf16> -> tensor<512xbf16>
      %783 = sim.view %627 : tensor<256x7168x4096xbf16> -> tensor<256x4096x7168xbf16>
      %784 = sim.view %621 : tensor<256x2048x7168xbf16> -> tensor<256x7168x2048xbf16>
      %785 = sim.view %766 : tensor<1x1x7168xbf16> -> tensor<7168xbf16>
      %786 = sim.view %651 : tensor<1x1x7168xbf16> -> tensor<7168xbf16>
      sim.yield %780, %761, %781, %741, %736, %782, %688, %667, %783, %784, %645, %614, %610, %605, %785, %786 : tensor<1x384x7168xbf16>, tensor<1536x7168xbf16>, tensor<1536xbf16>, tensor<24576x1536xbf16>, tensor<576x7168xbf16>, tensor<512xbf16>, tensor<32768x512xbf16>, tensor<7168x16384xbf16>, tensor<256x4096x7168xbf16>, tensor<256x7168x2048xbf16>, tensor<256x7168xbf16>, tensor<2048x7168xbf16>, tensor<2048x7168xbf16>, tensor<7168x2048xbf16>, tensor<7168xbf16>, tensor<7168xbf16>
    }
    %787, %788, %789, %790, %791, %792, %793, %794, %795, %796, %797, %798, %799 = sim.repeat 3 iter(%527 : tensor<1x384x7168xbf16>) slices(%8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69 : tensor<3x1536x7168xbf16>, tensor<3x1536xbf16>, tensor<3x24576x1536xbf16>, tensor<3x576x7168xbf16>, tensor<3x512xbf16>, tensor<3x32768x512xbf16>, tensor<3x7168x16384xbf16>, tensor<3x18432x7168xbf16>, tensor<3x18432x7168xbf16>, tensor<3x7168x18432xbf16>, tensor<3x7168xbf16>, tensor<3x7168xbf16>, tensor<3x1x384x7168xf32>, tensor<3x1x384x1xf32>, tensor<3x1x384x1xf32>, tensor<3x1x384x7168xbf16>, tensor<3x384x7168xbf16>, tensor<3x1x384x1536xf32>, tensor<3x1x384x1xf32>, tensor<3x1x384x1xf32>, tensor<3x1x384x1536xbf16>, tensor<3x384x1536xbf16>, tensor<3x384x7168xbf16>, tensor<3x1x384x512xf32>, tensor<3x1x384x1xf32>, tensor<3x1x384x1xf32>, tensor<3x1x384x512xbf16>, tensor<3x384x512xbf16>, tensor<3x1x384x128x192xbf16>, tensor<3x1x384x128x128xbf16>, tensor<3x1x384x128x192xbf16>, tensor<3x1x384x128x128xbf16>, tensor<3x384x16384xbf16>, tensor<3x1x384x7168xf32>, tensor<3x1x384x1xf32>, tensor<3x1x384x1xf32>, tensor<3x1x384x7168xbf16>, tensor<3x384x7168xbf16>, tensor<3x1x384x18432xbf16>, tensor<3x1x384x18432xbf16>, tensor<3x384x7168xbf16>, tensor<3x1x384x18432xbf16>, tensor<3x384x18432xbf16>) {reverse} -> (tensor<1x384x7168xbf16>, tensor<3x1536x7168xbf16>, tensor<3x1536xbf16>, tensor<3x24576x1536xbf16>, tensor<3x576x7168xbf16>, tensor<3x512xbf16>, tensor<3x32768x512xbf16>, tensor<3x7168x16384xbf16>, tensor<3x18432x7168xbf16>, tensor<3x18432x7168xbf16>, tensor<3x7168x18432xbf16>, tensor<3x7168xbf16>, tensor<3x7168xbf16>) {
    ^bb0(%800: tensor<1x384x7168xbf16>, %801: tensor<1536x7168xbf16>, %802: tensor<1536xbf16>, %803: tensor<24576x1536xbf16>, %804: tensor<576x7168xbf16>, %805: tensor<512xbf16>, %806: tensor<32768x512xbf16>, %807: tensor<7168x16384xbf16>, %808: tensor<18432x7168xbf16>, %809: tensor<18432x7168xbf16>, %810: tensor<7168x18432xbf16>, %811: tensor<7168xbf16>, %812: tensor<7168xbf16>, %813: tensor<1x384x7168xf32>, %814: tensor<1x384x1xf32>, %815: tensor<1x384x1xf32>, %816: tensor<1x384x7168xbf16>, %817: tensor<384x7168xbf16>, %818: tensor<1x384x1536xf32>, %819: tensor<1x384x1xf32>, %820: tensor<1x384x1xf32>, %821: tensor<1x384x1536xbf16>, %822: tensor<384x1536xbf16>, %823: tensor<384x7168xbf16>, %824: tensor<1x384x512xf32>, %825: tensor<1x384x1xf32>, %826: tensor<1x384x1xf32>, %827: tensor<1x384x512xbf16>, %828: tensor<384x512xbf16>, %829: tensor<1x384x128x192xbf16>, %830: tensor<1x384x128x128xbf16>, %831: tensor<1x384x128x192xbf16>, %832: tensor<1x384x128x128xbf16>, %833: tensor<384x16384xbf16>, %834: tensor<1x384x7168xf32>, %835: tensor<1x384x1xf32>, %836: tensor<1x384x1xf32>, %837: tensor<1x384x7168xbf16>, %838: tensor<384x7168xbf16>, %839: tensor<1x384x18432xbf16>, %840: tensor<1x384x18432xbf16>, %841: tensor<384x7168xbf16>, %842: tensor<1x384x18432xbf16>, %843: tensor<384x18432xbf16>):
      %844 = sim.view %800 : tensor<1x384x7168xbf16> -> tensor<384x7168xbf16>
      %845 = sim.matmul %844, %843 {transpose_lhs} : (tensor<384x7168xbf16>, tensor<384x18432xbf16>) -> tensor<7168x18432xbf16>
      %846 = sim.matmul %800, %810 : (tensor<1x384x7168xbf16>, tensor<7168x18432xbf16>) -> tensor<1x384x18432xbf16>
      %847 = sim.elementwise "mul" %846, %840 : tensor<1x384x18432xbf16>, tensor<1x384x18432xbf16> -> tensor<1x384x18432xbf16>
      %848 = sim.elementwise "mul" %846, %842 : tensor<1x384x18432xbf16>, tensor<1x384x18432xbf16> -> tensor<1x384x18432xbf16>
      %849 = sim.view %847 : tensor<1x384x18432xbf16> -> tensor<384x18432xbf16>
      %850 = sim.matmul %849, %841 {transpose_lhs} : (tensor<384x18432xbf16>, tensor<384x7168xbf16>) -> tensor<18432x7168xbf16>
      %851 = sim.matmul %847, %809 : (tensor<1x384x18432xbf16>, tensor<18432x7168xbf16>) -> tensor<1x384x7168xbf16>
      %852 = sim.elementwise "silu_grad" %848, %839 : tensor<1x384x18432xbf16>, tensor<1x384x18432xbf16> -> tensor<1x384x18432xbf16>
      %853 = sim.view %852 : tensor<1x384x18432xbf16> -> tensor<384x18432xbf16>
      %854 = sim.matmul %853, %838 {transpose_lhs} : (tensor<384x18432xbf16>, tensor<384x7168xbf16>) -> tensor<18432x7168xbf16>
      %855 = sim.matmul %852, %808 : (tensor<1x384x18432xbf16>, tensor<18432x7168xbf16>) -> tensor<1x384x7168xbf16>
      %856 = sim.elementwise "add" %851, %855 : tensor<1x384x7168xbf16>, tensor<1x384x7168xbf16> -> tensor<1x384x7168xbf16>
      %857 = sim.elementwise "mul" %856, %812 : tensor<1x384x7168xbf16>, tensor<7168xbf16> -> tensor<1x384x7168xbf16>
      %858 = sim.elementwise "mul" %856, %837 : tensor<1x384x7168xbf16>, tensor<1x384x7168xbf16> -> tensor<1x384x7168xbf16>
      %859 = sim.reduce "sum" %858 [0, 1] : tensor<1x384x7168xbf16> -> tensor<1x1x7168xbf16>
      %860 = sim.elementwise "cast" %857 : tensor<1x384x7168xbf16> -> tensor<1x384x7168xf32>
      %861 = sim.elementwise "mul" %860, %834 : tensor<1x384x7168xf32>, tensor<1x384x7168xf32> -> tensor<1x384x7168xf32>
      %862 = sim.elementwise "mul" %860, %835 : tensor<1x384x7168xf32>, tensor<1x384x1xf32> -> tensor<1x384x7168xf32>
      %863 = sim.reduce "sum" %861 [2] : tensor<1x384x7168xf32> -> tensor<1x384x1xf32>
      %864 = sim.elementwise "pow" %836 : tensor<1x384x1xf32> -> tensor<1x384x1xf32>
      %865 = sim.elementwise "mul" %863 : tensor<1x384x1xf32> -> tensor<1x384x1xf32>
      %866 = sim.elementwise "mul" %865, %864 : tensor<1x384x1xf32>, tensor<1x384x1xf32> -> tensor<1x384x1xf32>
      %867 = sim.elementwise "div" %866 : tensor<1x384x1xf32> -> tensor<1x384x7168xf32>
      %868 = sim.elementwise "pow" %834 : tensor<1x384x7168xf32> -> tensor<1x384x7168xf32>
      %869 = sim.elementwise "mul" %868 : tensor<1x384x7168xf32> -> tensor<1x384x7168xf32>
      %870 = sim.elementwise "mul" %867, %869 : tensor<1x384x7168xf32>, tensor<1x384x7168xf32> -> tensor<1x384x7168xf32>
      %871 = sim.elementwise "add" %862, %870 : tensor<1x384x7168xf32>, tensor<1x384x7168xf32> -> tensor<1x384x7168xf32>
      %872 = sim.elementwise "cast" %871 : tensor<1x384x7168xf32> -> tensor<1x384x7168xbf16>
      %873 = sim.elementwise "add" %800, %872 : tensor<1x384x7168xbf16>, tensor<1x384x7168xbf16> -> tensor<1x384x7168xbf16>
      %874 = sim.view %873 : tensor<1x384x7168xbf16> -> tensor<384x7168xbf16>
      %875 = sim.matmul %874, %833 {transpose_lhs} : (tensor<384x7168xbf16>, tensor<384x16384xbf16>) -> tensor<7168x16384xbf16>
      %876 = sim.matmul %873, %807 : (tensor<1x384x7168xbf16>, tensor<7168x16384xbf16>) -> tensor<1x384x16384xbf16>
      %877 = sim.view %876 : tensor<1x384x16384xbf16> -> tensor<1x384x128x128xbf16>
      %878, %879, %880 = sim.attention_grad %829, %831, %830, %832, %877 {causal} : (tensor<1x384x128x192xbf16>, tensor<1x384x128x192xbf16>, tensor<1x384x128x128xbf16>, tensor<1x384x128x128xbf16>, tensor<1x384x128x128xbf16>) -> (tensor<1x384x128x192xbf16>, tensor<1x384x128x192xbf16>, tensor<1x384x128x128xbf16>)
      %881 = sim.generic "aten.new_empty_strided"() {flop_count = 0.000000e+00 : f64, byte_count = 0x4172000000000000 : f64} : () -> tensor<1x128x384x192xbf16>
      %882 = sim.view %879 : tensor<1x384x128x192xbf16> -> tensor<1x128x384x192xbf16>
      %883 = sim.elementwise "copy" %881, %882 : tensor<1x128x384x192xbf16>, tensor<1x128x384x192xbf16> -> tensor<1x128x384x192xbf16>
      %884 = sim.generic "aten.zeros_like"() {flop_count = 0.000000e+00 : f64, byte_count = 0x4158000000000000 : f64} : () -> tensor<1x128x384x64xbf16>
      %885 = sim.generic "aten.slice"(%883) {flop_count = 0.000000e+00 : f64, byte_count = 0.000000e+00 : f64} : (tensor<1x128x384x192xbf16>) -> tensor<1x128x384x64xbf16>
      %886 = sim.elementwise "copy" %885, %884 : tensor<1x128x384x64xbf16>, tensor<1x128x384x64xbf16> -> tensor<1x128x384x64xbf16>
      %887 = sim.generic "aten.slice_scatter"(%883, %886) {flop_count = 0x4162000000000000 : f64, byte_count = 0x4185000000000000 : f64} : (tensor<1x128x384x192xbf16>, tensor<1x128x384x64xbf16>) -> tensor<1x128x384x192xbf16>
      %888 = sim.generic "aten.new_empty_strided"() {flop_count = 0.000000e+00 : f64, byte_count = 0x4172000000000000 : f64} : () -> tensor<1x128x384x192xbf16>
      %889 = sim.elementwise "copy" %888, %887 : tensor<1x128x384x192xbf16>, tensor<1x128x384x192xbf16> -> tensor<1x128x384x192xbf16>
      %890 = sim.generic "aten.clone"(%883) {flop_count = 0.000000e+00 : f64, byte_count = 0.000000e+00 : f64} : (tensor<1x128x384x192xbf16>) -> tensor<1x128x384x64xbf16>
      %891 = sim.reduce "sum" %890 [1] : tensor<1x128x384x64xbf16> -> tensor<1x1x384x64xbf16>
      %892 = sim.generic "aten.clone"(%889) {flop_count = 0.000000e+00 : f64, byte_count = 0.000000e+00 : f64} : (tensor<1x128x384x192xbf16>) -> tensor<1x128x384x128xbf16>
      %893 = sim.view %880 : tensor<1x384x128x128xbf16> -> tensor<1x128x384x128xbf16>
      %894 = sim.generic "aten.cat"(%892, %893) {flop_count = 0.000000e+00 : f64, byte_count = 0x4188000000000000 : f64} : (tensor<1x128x384x128xbf16>, tensor<1x128x384x128xbf16>) -> tensor<1x128x384x256xbf16>
      %895 = sim.view %894 : tensor<1x128x384x256xbf16> -> tensor<384x32768xbf16>
      %896 = sim.matmul %895, %828 {transpose_lhs} : (tensor<384x32768xbf16>, tensor<384x512xbf16>) -> tensor<32768x512xbf16>
      %897 = sim.matmul %895, %806 : (tensor<384x32768xbf16>, tensor<32768x512xbf16>) -> tensor<384x512xbf16>
      %898 = sim.generic "aten.slice"(%891) {flop_count = 0.000000e+00 : f64, byte_count = 0.000000e+00 : f64} : (tensor<1x1x384x64xbf16>) -> tensor<1x1x384x32xbf16>
      %899 = sim.generic "aten.unsqueeze"(%124) {flop_count = 0.000000e+00 : f64, byte_count = 0.000000e+00 : f64} : (tensor<1x384x64xbf16>) -> tensor<1x1x384x32xbf16>
      %900 = sim.elementwise "mul" %898, %899 : tensor<1x1x384x32xbf16>, tensor<1x1x384x32xbf16> -> tensor<1x1x384x32xbf16>
      %901 = sim.generic "aten.unsqueeze"(%123) {flop_count = 0.000000e+00 : f64, byte_count = 0.000000e+00 : f64} : (tensor<1x384x64xbf16>) -> tensor<1x1x384x32xbf16>
      %902 = sim.elementwise "mul" %898, %901 : tensor<1x1x384x32xbf16>, tensor<1x1x384x32xbf16> -> tensor<1x1x384x32xbf16>
      %903 = sim.generic "aten.slice"(%891) {flop_count = 0.000000e+00 : f64, byte_count = 0.000000e+00 : f64} : (tensor<1x1x384x64xbf16>) -> tensor<1x1x384x32xbf16>
      %904 = sim.elementwise "neg" %903 : tensor<1x1x384x32xbf16> -> tensor<1x1x384x32xbf16>
      %905 = sim.elementwise "mul" %904, %899 : tensor<1x1x384x32xbf16>, tensor<1x1x384x32xbf16> -> tensor<1x1x384x32xbf16>
      %906 = sim.elementwise "add" %902, %905 : tensor<1x1x384x32xbf16>, tensor<1x1x384x32xbf16> -> tensor<1x1x384x32xbf16>
      %907 = sim.elementwise "mul" %903, %901 : tensor<1x1x384x32xbf16>, tensor<1x1x384x32xbf16> -> tensor<1x1x384x32xbf16>
      %908 = sim.elementwise "add" %900, %907 : tensor<1x1x384x32xbf16>, tensor<1x1x384x32xbf16> -> tensor<1x1x384x32xbf16>
      %909 = sim.generic "aten.slice"(%878) {flop_count = 0.000000e+00 : f64, byte_count = 0.000000e+00 : f64} : (tensor<1x384x128x192xbf16>) -> tensor<1x128x384x32xbf16>
      %910 = sim.elementwise "mul" %909, %899 : tensor<1x128x384x32xbf16>, tensor<1x1x384x32xbf16> -> tensor<1x128x384x32xbf16>
      %911 = sim.elementwise "mul" %909, %901 : tensor<1x128x384x32xbf16>, tensor<1x1x384x32xbf16> -> tensor<1x128x384x32xbf16>
      %912 = sim.generic "aten.slice"(%878) {flop_count = 0.000000e+00 : f64, byte_count = 0.000000e+00 : f64} : (tensor<1x384x128x192xbf16>) -> tensor<1x128x384x32xbf16>
      %913 = sim.elementwise "neg" %912 : tensor<1x128x384x32xbf16> -> tensor<1x128x384x32xbf16>
      %914 = sim.elementwise "mul" %913, %899 : tensor<1x128x384x32xbf16>, tensor<1x1x384x32xbf16> -> tensor<1x128x384x32xbf16>
      %915 = sim.elementwise "add" %911, %914 : tensor<1x128x384x32xbf16>, tensor<1x128x384x32xbf16> -> tensor<1x128x384x32xbf16>
      %916 = sim.elementwise "mul" %912, %901 : tensor<1x128x384x32xbf16>, tensor<1x1x384x32xbf16> -> tensor<1x128x384x32xbf16>
      %917 = sim.elementwise "add" %910, %916 : tensor<1x128x384x32xbf16>, tensor<1x128x384x32xbf16> -> tensor<1x128x384x32xbf16>
      %918 = sim.generic "aten.slice_backward"(%906) {flop_count = 0.000000e+00 : f64, byte_count = 7.372800e+04 : f64} : (tensor<1x1x384x32xbf16>) -> tensor<1x1x384x64xbf16>
      %919 = sim.generic "aten.slice_backward"(%908) {flop_count = 0.000000e+00 : f64, byte_count = 7.372800e+04 : f64} : (tensor<1x1x384x32xbf16>) -> tensor<1x1x384x64xbf16>
      %920 = sim.elementwise "add" %918, %919 : tensor<1x1x384x64xbf16>, tensor<1x1x384x64xbf16> -> tensor<1x1x384x64xbf16>
      %921 = sim.generic "aten.slice_backward"(%915) {flop_count = 0.000000e+00 : f64, byte_count = 0x4162000000000000 : f64} : (tensor<1x128x384x32xbf16>) -> tensor<1x128x384x64xbf16>
      %922 = sim.generic "aten.slice_backward"(%917) {flop_count = 0.000000e+00 : f64, byte_count = 0x4162000000000000 : f64} : (tensor<1x128x384x32xbf16>) -> tensor<1x128x384x64xbf16>
      %923 = sim.elementwise "add" %921, %922 : tensor<1x128x384x64xbf16>, tensor<1x128x384x64xbf16> -> tensor<1x128x384x64xbf16>
      %924 = sim.view %897 : tensor<384x512xbf16> -> tensor<1x384x512xbf16>
      %925 = sim.elementwise "mul" %924, %805 : tensor<1x384x512xbf16>, tensor<512xbf16> -> tensor<1x384x512xbf16>
      %926 = sim.elementwise "mul" %924, %827 : tensor<1x384x512xbf16>, tensor<1x384x512xbf16> -> tensor<1x384x512xbf16>
      %927 = sim.reduce "sum" %926 [0, 1] : tensor<1x384x512xbf16> -> tensor<1x1x512xbf16>
      %928 = sim.elementwise "cast" %925 : tensor<1x384x512xbf16> -> tensor<1x384x512xf32>
      %929 = sim.elementwise "mul" %928, %824 : tensor<1x384x512xf32>, tensor<1x384x512xf32> -> tensor<1x384x512xf32>
      %930 = sim.elementwise "mul" %928, %825 : tensor<1x384x512xf32>, tensor<1x384x1xf32> -> tensor<1x384x512xf32>
      %931 = sim.reduce "sum" %929 [2] : tensor<1x384x512xf32> -> tensor<1x384x1xf32>
      %932 = sim.elementwise "pow" %826 : tensor<1x384x1xf32> -> tensor<1x384x1xf32>
      %933 = sim.elementwise "mul" %931 : tensor<1x384x1xf32> -> tensor<1x384x1xf32>
      %934 = sim.elementwise "mul" %933, %932 : tensor<1x384x1xf32>, tensor<1x384x1xf32> -> tensor<1x384x1xf32>
      %935 = sim.elementwise "div" %934 : tensor<1x384x1xf32> -> tensor<1x384x512xf32>
      %936 = sim.elementwise "pow" %824 : tensor<1x384x512xf32> -> tensor<1x384x512xf32>
      %937 = sim.elementwise "mul" %936 : tensor<1x384x512xf32> -> tensor<1x384x512xf32>
      %938 = sim.elementwise "mul" %935, %937 : tensor<1x384x512xf32>, tensor<1x384x512xf32> -> tensor<1x384x512xf32>
      %939 = sim.elementwise "add" %930, %938 : tensor<1x384x512xf32>, tensor<1x384x512xf32> -> tensor<1x384x512xf32>
      %940 = sim.elementwise "cast" %939 : tensor<1x384x512xf32> -> tensor<1x384x512xbf16>
      %941 = sim.view %920 : tensor<1x1x384x64xbf16> -> tensor<1x384x64xbf16>
      %942 = sim.generic "aten.cat"(%940, %941) {flop_count = 0.000000e+00 : f64, byte_count = 8.847360e+05 : f64} : (tensor<1x384x512xbf16>, tensor<1x384x64xbf16>) -> tensor<1x384x576xbf16>
      %943 = sim.view %942 : tensor<1x384x576xbf16> -> tensor<384x576xbf16>
      %944 = sim.matmul %943, %823 {transpose_lhs} : (tensor<384x576xbf16>, tensor<384x7168xbf16>) -> tensor<576x7168xbf16>
      %945 = sim.matmul %942, %804 : (tensor<1x384x576xbf16>, tensor<576x7168xbf16>) -> tensor<1x384x7168xbf16>
      %946 = sim.generic "aten.slice"(%878) {flop_count = 0.000000e+00 : f64, byte_count = 0.000000e+00 : f64} : (tensor<1x384x128x192xbf16>) -> tensor<1x128x384x128xbf16>
      %947 = sim.generic "aten.cat"(%946, %923) {flop_count = 0.000000e+00 : f64, byte_count = 0x4182000000000000 : f64} : (tensor<1x128x384x128xbf16>, tensor<1x128x384x64xbf16>) -> tensor<1x128x384x192xbf16>
      %948 = sim.view %947 : tensor<1x128x384x192xbf16> -> tensor<384x24576xbf16>
      %949 = sim.matmul %948, %822 {transpose_lhs} : (tensor<384x24576xbf16>, tensor<384x1536xbf16>) -> tensor<24576x1536xbf16>
      %950 = sim.matmul %948, %803 : (tensor<384x24576xbf16>, tensor<24576x1536xbf16>) -> tensor<384x1536xbf16>
      %951 = sim.view %950 : tensor<384x1536xbf16> -> tensor<1x384x1536xbf16>
      %952 = sim.elementwise "mul" %951, %802 : tensor<1x384x1536xbf16>, tensor<1536xbf16> -> tensor<1x384x1536xbf16>
      %953 = sim.elementwise "mul" %951, %821 : tensor<1x384x1536xbf16>, tensor<1x384x1536xbf16> -> tensor<1x384x1536xbf16>
      %954 = sim.reduce "sum" %953 [0, 1] : tensor<1x384x1536xbf16> -> tensor<1x1x1536xbf16>
      %955 = sim.elementwise "cast" %952 : tensor<1x384x1536xbf16> -> tensor<1x384x1536xf32>
      %956 = sim.elementwise "mul" %955, %818 : tensor<1x384x1536xf32>, tensor<1x384x1536xf32> -> tensor<1x384x1536xf32>
      %957 = sim.elementwise "mul" %955, %819 : tensor<1x384x1536xf32>, tensor<1x384x1xf32> -> tensor<1x384x1536xf32>
      %958 = sim.reduce "sum" %956 [2] : tensor<1x384x1536xf32> -> tensor<1x384x1xf32>
      %959 = sim.elementwise "pow" %820 : tensor<1x384x1xf32> -> tensor<1x384x1xf32>
      %960 = sim.elementwise "mul" %958 : tensor<1x384x1xf32> -> tensor<1x384x1xf32>
      %961 = sim.elementwise "mul" %960, %959 : tensor<1x384x1xf32>, tensor<1x384x1xf32> -> tensor<1x384x1xf32>
      %962 = sim.elementwise "div" %961 : tensor<1x384x1xf32> -> tensor<1x384x1536xf32>
      %963 = sim.elementwise "pow" %818 : tensor<1x384x1536xf32> -> tensor<1x384x1536xf32>
      %964 = sim.elementwise "mul" %963 : tensor<1x384x1536xf32> -> tensor<1x384x1536xf32>
      %965 = sim.elementwise "mul" %962, %964 : tensor<1x384x1536xf32>, tensor<1x384x1536xf32> -> tensor<1x384x1536xf32>
      %966 = sim.elementwise "add" %957, %965 : tensor<1x384x1536xf32>, tensor<1x384x1536xf32> -> tensor<1x384x1536xf32>
      %967 = sim.elementwise "cast" %966 : tensor<1x384x1536xf32> -> tensor<1x384x1536xbf16>
      %968 = sim.view %967 : tensor<1x384x1536xbf16> -> tensor<384x1536xbf16>
      %969 = sim.matmul %968, %817 {transpose_lhs} : (tensor<384x1536xbf16>, tensor<384x7168xbf16>) -> tensor<1536x7168xbf16>
      %970 = sim.matmul %967, %801 : (tensor<1x384x1536xbf16>, tensor<1536x7168xbf16>) -> tensor<1x384x7168xbf16>
      %971 = sim.elementwise "add" %945, %970 : tensor<1x384x7168xbf16>, tensor<1x384x7168xbf16> -> tensor<1x384x7168xbf16>
      %972 = sim.elementwise "mul" %971, %811 : tensor<1x384x7168xbf16>, tensor<7168xbf16> -> tensor<1x384x7168xbf16>
      %973 = sim.elementwise "mul" %971, %816 : tensor<1x384x7168xbf16>, tensor<1x384x7168xbf16> -> tensor<1x384x7168xbf16>
      %974 = sim.reduce "sum" %973 [0, 1] : tensor<1x384x7168xbf16> -> tensor<1x1x7168xbf16>
      %975 = sim.elementwise "cast" %972 : tensor<1x384x7168xbf16> -> tensor<1x384x7168xf32>
      %976 = sim.elementwise "mul" %975, %813 : tensor<1x384x7168xf32>, tensor<1x384x7168xf32> -> tensor<1x384x7168xf32>
      %977 = sim.elementwise "mul" %975, %814 : tensor<1x384x7168xf32>, tensor<1x384x1xf32> -> tensor<1x384x7168xf32>
      %978 = sim.reduce "sum" %976 [2] : tensor<1x384x7168xf32> -> tensor<1x384x1xf32>
      %979 = sim.elementwise "pow" %815 : tensor<1x384x1xf32> -> tensor<1x384x1xf32>
      %980 = sim.elementwise "mul" %978 : tensor<1x384x1xf32> -> tensor<1x384x1xf32>
      %981 = sim.elementwise "mul" %980, %979 : tensor<1x384x1xf32>, tensor<1x384x1xf32> -> tensor<1x384x1xf32>
      %982 = sim.elementwise "div" %981 : tensor<1x384x1xf32> -> tensor<1x384x7168xf32>
      %983 = sim.elementwise "pow" %813 : tensor<1x384x7168xf32> -> tensor<1x384x7168xf32>
      %984 = sim.elementwise "mul" %983 : tensor<1x384x7168xf32> -> tensor<1x384x7168xf32>
      %985 = sim.elementwise "mul" %982, %984 : tensor<1x384x7168xf32>, tensor<1x384x7168xf32> -> tensor<1x384x7168xf32>
      %986 = sim.elementwise "add" %977, %985 : tensor<1x384x7168xf32>, tensor<1x384x7168xf32> -> tensor<1x384x7168xf32>
      %987 = sim.elementwise "cast" %986 : tensor<1x384x7168xf32> -> tensor<1x384x7168xbf16>
      %988 = sim.elementwise "add" %873, %987 : tensor<1x384x7168xbf16>, tensor<1x384x7168xbf16> -> tensor<1x384x7168xbf16>
      %989 = sim.view %954 : tensor<1x1x1536xbf16> -> tensor<1536xbf16>
      %990 = sim.view %927 : tensor<1x1x512xbf16> -> tensor<512xbf16>
      %991 = sim.view %974 : tensor<1x1x7168xbf16> -> tensor<7168xbf16>
      %992 = sim.view %859 : tensor<1x1x7168xbf16> -> tensor<7168xbf16>
      sim.yield %988, %969, %989, %949, %944, %990, %896, %875, %854, %850, %845, %991, %992 : tensor<1x384x7168xbf16>, tensor<1536x7168xbf16>, tensor<1536xbf16>, tensor<24576x1536xbf16>, tensor<576x7168xbf16>, tensor<512xbf16>, tensor<32768x512xbf16>, tensor<7168x16384xbf16>, tensor<18432x7168xbf16>, tensor<18432x7168xbf16>, tensor<7168x18432xbf16>, tensor<7168xbf16>, tensor<7168xbf16>
    }
    %993 = sim.generic "aten.embedding_dense_backward"(%787, %38) {flop_count = 0.000000e+00 : f64, byte_count = 0x41DBB30300000000 : f64} : (tensor<1x384x7168xbf16>, tensor<1x384xi64>) -> tensor<129280x7168xbf16>
    sim.yield %993, %526, %508, %788, %789, %790, %791, %792, %793, %794, %795, %796, %797, %798, %799, %528, %529, %530, %531, %532, %533, %534, %535, %536, %537, %538, %539, %540, %541, %542 : tensor<129280x7168xbf16>, tensor<7168xbf16>, tensor<129280x7168xbf16>, tensor<3x1536x7168xbf16>, tensor<3x1536xbf16>, tensor<3x24576x1536xbf16>, tensor<3x576x7168xbf16>, tensor<3x512xbf16>, tensor<3x32768x512xbf16>, tensor<3x7168x16384xbf16>, tensor<3x18432x7168xbf16>, tensor<3x18432x7168xbf16>, tensor<3x7168x18432xbf16>, tensor<3x7168xbf16>, tensor<3x7168xbf16>, tensor<58x1536x7168xbf16>, tensor<58x1536xbf16>, tensor<58x24576x1536xbf16>, tensor<58x576x7168xbf16>, tensor<58x512xbf16>, tensor<58x32768x512xbf16>, tensor<58x7168x16384xbf16>, tensor<58x256x4096x7168xbf16>, tensor<58x256x7168x2048xbf16>, tensor<58x256x7168xbf16>, tensor<58x2048x7168xbf16>, tensor<58x2048x7168xbf16>, tensor<58x7168x2048xbf16>, tensor<58x7168xbf16>, tensor<58x7168xbf16>
  }
  sim.phase "optimizer" {
    sim.optimizer_step "adamw"(%0, %5, %6, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34 : tensor<129280x7168xbf16>, tensor<7168xbf16>, tensor<129280x7168xbf16>, tensor<3x1536x7168xbf16>, tensor<3x1536xbf16>, tensor<3x24576x1536xbf16>, tensor<3x576x7168xbf16>, tensor<3x512xbf16>, tensor<3x32768x512xbf16>, tensor<3x7168x16384xbf16>, tensor<3x18432x7168xbf16>, tensor<3x18432x7168xbf16>, tensor<3x7168x18432xbf16>, tensor<3x7168xbf16>, tensor<3x7168xbf16>, tensor<58x1536x7168xbf16>, tensor<58x1536xbf16>, tensor<58x24576x1536xbf16>, tensor<58x576x7168xbf16>, tensor<58x512xbf16>, tensor<58x32768x512xbf16>, tensor<58x7168x16384xbf16>, tensor<58x256x4096x7168xbf16>, tensor<58x256x7168x2048xbf16>, tensor<58x256x7168xbf16>, tensor<58x2048x7168xbf16>, tensor<58x2048x7168xbf16>, tensor<58x7168x2048xbf16>, tensor<58x7168xbf16>, tensor<58x7168xbf16>) grads(%473, %474, %475, %476, %477, %478, %479, %480, %481, %482, %483, %484, %485, %486, %487, %488, %489, %490, %491, %492, %493, %494, %495, %496, %497, %498, %499, %500, %501, %502 : tensor<129280x7168xbf16>, tensor<7168xbf16>, tensor<129280x7168xbf16>, tensor<3x1536x7168xbf16>, tensor<3x1536xbf16>, tensor<3x24576x1536xbf16>, tensor<3x576x7168xbf16>, tensor<3x512xbf16>, tensor<3x32768x512xbf16>, tensor<3x7168x16384xbf16>, tensor<3x18432x7168xbf16>, tensor<3x18432x7168xbf16>, tensor<3x7168x18432xbf16>, tensor<3x7168xbf16>, tensor<3x7168xbf16>, tensor<58x1536x7168xbf16>, tensor<58x1536xbf16>, tensor<58x24576x1536xbf16>, tensor<58x576x7168xbf16>, tensor<58x512xbf16>, tensor<58x32768x512xbf16>, tensor<58x7168x16384xbf16>, tensor<58x256x4096x7168xbf16>, tensor<58x256x7168x2048xbf16>, tensor<58x256x7168xbf16>, tensor<58x2048x7168xbf16>, tensor<58x2048x7168xbf16>, tensor<58x7168x2048xbf16>, tensor<58x7168xbf16>, tensor<58x7168xbf16>)
    sim.yield
  }
}
