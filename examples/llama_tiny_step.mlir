builtin.module {
  %tokens = sim.input "tokens" {tokens} : tensor<512xi64>
  %embed = sim.param "model.embed_tokens.weight" {role = #sim.role<embedding>} : tensor<1024x256xbf16>
  %head = sim.param "lm_head.weight" {role = #sim.role<head>} : tensor<1024x256xbf16>
  %ln_f = sim.param "model.norm.weight" {role = #sim.role<norm>} : tensor<256xbf16>
  %cos = sim.input "rope_cos" : tensor<512x256xbf16>
  %sin = sim.input "rope_sin" : tensor<512x256xbf16>
  %cos_kv = sim.input "rope_cos_kv" : tensor<512x128xbf16>
  %sin_kv = sim.input "rope_sin_kv" : tensor<512x128xbf16>
  %onehot = sim.input "labels_onehot" : tensor<512x1024xbf16>
  %ln1 = sim.param "model.layers[0:2].input_layernorm.weight" {role = #sim.role<norm>, stacked} : tensor<2x256xbf16>
  %wq = sim.param "model.layers[0:2].self_attn.q_proj.weight" {role = #sim.role<attention>, split = #sim.split<column>, stacked} : tensor<2x256x256xbf16>
  %wk = sim.param "model.layers[0:2].self_attn.k_proj.weight" {role = #sim.role<attention>, split = #sim.split<kv>, stacked} : tensor<2x128x256xbf16>
  %wv = sim.param "model.layers[0:2].self_attn.v_proj.weight" {role = #sim.role<attention>, split = #sim.split<kv>, stacked} : tensor<2x128x256xbf16>
  %wo = sim.param "model.layers[0:2].self_attn.o_proj.weight" {role = #sim.role<attention>, split = #sim.split<row>, stacked} : tensor<2x256x256xbf16>
  %ln2 = sim.param "model.layers[0:2].post_attention_layernorm.weight" {role = #sim.role<norm>, stacked} : tensor<2x256xbf16>
  %wg = sim.param "model.layers[0:2].mlp.gate_proj.weight" {role = #sim.role<mlp>, split = #sim.split<column>, stacked} : tensor<2x688x256xbf16>
  %wu = sim.param "model.layers[0:2].mlp.up_proj.weight" {role = #sim.role<mlp>, split = #sim.split<column>, stacked} : tensor<2x688x256xbf16>
  %wd = sim.param "model.layers[0:2].mlp.down_proj.weight" {role = #sim.role<mlp>, split = #sim.split<row>, stacked} : tensor<2x256x688xbf16>
  %fwd:16 = sim.phase "forward" -> tensor<512x256xbf16>, tensor<512x1024xbf16>, tensor<512x256xbf16>, tensor<2x512x256xbf16>, tensor<2x512x256xbf16>, tensor<2x2x256x4x64xbf16>, tensor<2x2x256x2x64xbf16>, tensor<2x2x256x2x64xbf16>, tensor<2x2x256x4x64xbf16>, tensor<2x512x256xbf16>, tensor<2x512x256xbf16>, tensor<2x512x256xbf16>, tensor<2x512x688xbf16>, tensor<2x512x688xbf16>, tensor<2x512x688xbf16>, tensor<2x512x688xbf16> {
    %x0 = sim.embedding %embed, %tokens : (tensor<1024x256xbf16>, tensor<512xi64>) -> tensor<512x256xbf16>
    %layers:14 = sim.repeat 2 iter(%x0 : tensor<512x256xbf16>) slices(%ln1, %wq, %wk, %wv, %wo, %ln2, %wg, %wu, %wd : tensor<2x256xbf16>, tensor<2x256x256xbf16>, tensor<2x128x256xbf16>, tensor<2x128x256xbf16>, tensor<2x256x256xbf16>, tensor<2x256xbf16>, tensor<2x688x256xbf16>, tensor<2x688x256xbf16>, tensor<2x256x688xbf16>) -> (tensor<512x256xbf16>, tensor<2x512x256xbf16>, tensor<2x512x256xbf16>, tensor<2x2x256x4x64xbf16>, tensor<2x2x256x2x64xbf16>, tensor<2x2x256x2x64xbf16>, tensor<2x2x256x4x64xbf16>, tensor<2x512x256xbf16>, tensor<2x512x256xbf16>, tensor<2x512x256xbf16>, tensor<2x512x688xbf16>, tensor<2x512x688xbf16>, tensor<2x512x688xbf16>, tensor<2x512x688xbf16>) {
      ^bb0(%x: tensor<512x256xbf16>, %ln1_i: tensor<256xbf16>, %wq_i: tensor<256x256xbf16>, %wk_i: tensor<128x256xbf16>, %wv_i: tensor<128x256xbf16>, %wo_i: tensor<256x256xbf16>, %ln2_i: tensor<256xbf16>, %wg_i: tensor<688x256xbf16>, %wu_i: tensor<688x256xbf16>, %wd_i: tensor<256x688xbf16>):
      %n1 = sim.norm "rms" %x, %ln1_i : tensor<512x256xbf16>, tensor<256xbf16>
      %q = sim.matmul %n1, %wq_i {transpose_rhs} : (tensor<512x256xbf16>, tensor<256x256xbf16>) -> tensor<512x256xbf16>
      %k = sim.matmul %n1, %wk_i {transpose_rhs} : (tensor<512x256xbf16>, tensor<128x256xbf16>) -> tensor<512x128xbf16>
      %v = sim.matmul %n1, %wv_i {transpose_rhs} : (tensor<512x256xbf16>, tensor<128x256xbf16>) -> tensor<512x128xbf16>
      %qc = sim.elementwise "mul" %q, %cos : tensor<512x256xbf16>, tensor<512x256xbf16> -> tensor<512x256xbf16>
      %qs = sim.elementwise "mul" %q, %sin : tensor<512x256xbf16>, tensor<512x256xbf16> -> tensor<512x256xbf16>
      %qr = sim.elementwise "add" %qc, %qs : tensor<512x256xbf16>, tensor<512x256xbf16> -> tensor<512x256xbf16>
      %kc = sim.elementwise "mul" %k, %cos_kv : tensor<512x128xbf16>, tensor<512x128xbf16> -> tensor<512x128xbf16>
      %ks = sim.elementwise "mul" %k, %sin_kv : tensor<512x128xbf16>, tensor<512x128xbf16> -> tensor<512x128xbf16>
      %kr = sim.elementwise "add" %kc, %ks : tensor<512x128xbf16>, tensor<512x128xbf16> -> tensor<512x128xbf16>
      %q4 = sim.view %qr : tensor<512x256xbf16> -> tensor<2x256x4x64xbf16>
      %k4 = sim.view %kr : tensor<512x128xbf16> -> tensor<2x256x2x64xbf16>
      %v4 = sim.view %v : tensor<512x128xbf16> -> tensor<2x256x2x64xbf16>
      %a4 = sim.attention %q4, %k4, %v4 {causal, flash} : (tensor<2x256x4x64xbf16>, tensor<2x256x2x64xbf16>, tensor<2x256x2x64xbf16>) -> tensor<2x256x4x64xbf16>
      %a = sim.view %a4 : tensor<2x256x4x64xbf16> -> tensor<512x256xbf16>
      %o = sim.matmul %a, %wo_i {transpose_rhs} : (tensor<512x256xbf16>, tensor<256x256xbf16>) -> tensor<512x256xbf16>
      %x1 = sim.elementwise "add" %x, %o : tensor<512x256xbf16>, tensor<512x256xbf16> -> tensor<512x256xbf16>
      %n2 = sim.norm "rms" %x1, %ln2_i : tensor<512x256xbf16>, tensor<256xbf16>
      %g = sim.matmul %n2, %wg_i {transpose_rhs} : (tensor<512x256xbf16>, tensor<688x256xbf16>) -> tensor<512x688xbf16>
      %u = sim.matmul %n2, %wu_i {transpose_rhs} : (tensor<512x256xbf16>, tensor<688x256xbf16>) -> tensor<512x688xbf16>
      %sg = sim.elementwise "silu" %g : tensor<512x688xbf16> -> tensor<512x688xbf16>
      %m = sim.elementwise "mul" %sg, %u : tensor<512x688xbf16>, tensor<512x688xbf16> -> tensor<512x688xbf16>
      %d = sim.matmul %m, %wd_i {transpose_rhs} : (tensor<512x688xbf16>, tensor<256x688xbf16>) -> tensor<512x256xbf16>
      %x2 = sim.elementwise "add" %x1, %d : tensor<512x256xbf16>, tensor<512x256xbf16> -> tensor<512x256xbf16>
      sim.yield %x2, %x, %n1, %q4, %k4, %v4, %a4, %a, %x1, %n2, %g, %u, %sg, %m : tensor<512x256xbf16>, tensor<512x256xbf16>, tensor<512x256xbf16>, tensor<2x256x4x64xbf16>, tensor<2x256x2x64xbf16>, tensor<2x256x2x64xbf16>, tensor<2x256x4x64xbf16>, tensor<512x256xbf16>, tensor<512x256xbf16>, tensor<512x256xbf16>, tensor<512x688xbf16>, tensor<512x688xbf16>, tensor<512x688xbf16>, tensor<512x688xbf16>
    }
    %hn = sim.norm "rms" %layers#0, %ln_f : tensor<512x256xbf16>, tensor<256xbf16>
    %logits = sim.matmul %hn, %head {transpose_rhs} : (tensor<512x256xbf16>, tensor<1024x256xbf16>) -> tensor<512x1024xbf16>
    %probs = sim.softmax %logits dim 1 : tensor<512x1024xbf16>
    sim.yield %layers#0, %probs, %hn, %layers#1, %layers#2, %layers#3, %layers#4, %layers#5, %layers#6, %layers#7, %layers#8, %layers#9, %layers#10, %layers#11, %layers#12, %layers#13 : tensor<512x256xbf16>, tensor<512x1024xbf16>, tensor<512x256xbf16>, tensor<2x512x256xbf16>, tensor<2x512x256xbf16>, tensor<2x2x256x4x64xbf16>, tensor<2x2x256x2x64xbf16>, tensor<2x2x256x2x64xbf16>, tensor<2x2x256x4x64xbf16>, tensor<2x512x256xbf16>, tensor<2x512x256xbf16>, tensor<2x512x256xbf16>, tensor<2x512x688xbf16>, tensor<2x512x688xbf16>, tensor<2x512x688xbf16>, tensor<2x512x688xbf16>
  }
  %bwd:10 = sim.phase "backward" -> tensor<1024x256xbf16>, tensor<2x256xbf16>, tensor<2x256x256xbf16>, tensor<2x128x256xbf16>, tensor<2x128x256xbf16>, tensor<2x256x256xbf16>, tensor<2x256xbf16>, tensor<2x688x256xbf16>, tensor<2x688x256xbf16>, tensor<2x256x688xbf16> {
    %dlogits = sim.elementwise "sub" %fwd#1, %onehot : tensor<512x1024xbf16>, tensor<512x1024xbf16> -> tensor<512x1024xbf16>
    %dhead = sim.matmul %dlogits, %fwd#2 {transpose_lhs} : (tensor<512x1024xbf16>, tensor<512x256xbf16>) -> tensor<1024x256xbf16>
    %dhn = sim.matmul %dlogits, %head : (tensor<512x1024xbf16>, tensor<1024x256xbf16>) -> tensor<512x256xbf16>
    %nf_t = sim.elementwise "mul" %dhn, %ln_f : tensor<512x256xbf16>, tensor<256xbf16> -> tensor<512x256xbf16>
    %nf_tx = sim.elementwise "mul" %nf_t, %fwd#0 : tensor<512x256xbf16>, tensor<512x256xbf16> -> tensor<512x256xbf16>
    %nf_s = sim.reduce "mean" %nf_tx [1] : tensor<512x256xbf16> -> tensor<512x1xbf16>
    %nf_r = sim.elementwise "mul" %fwd#0, %nf_s : tensor<512x256xbf16>, tensor<512x1xbf16> -> tensor<512x256xbf16>
    %nf_d = sim.elementwise "sub" %nf_t, %nf_r : tensor<512x256xbf16>, tensor<512x256xbf16> -> tensor<512x256xbf16>
    %nf_dx = sim.elementwise "add" %dhn, %nf_d : tensor<512x256xbf16>, tensor<512x256xbf16> -> tensor<512x256xbf16>
    %grads:10 = sim.repeat 2 iter(%nf_dx : tensor<512x256xbf16>) slices(%ln1, %wq, %wk, %wv, %wo, %ln2, %wg, %wu, %wd, %fwd#3, %fwd#4, %fwd#5, %fwd#6, %fwd#7, %fwd#8, %fwd#9, %fwd#10, %fwd#11, %fwd#12, %fwd#13, %fwd#14, %fwd#15 : tensor<2x256xbf16>, tensor<2x256x256xbf16>, tensor<2x128x256xbf16>, tensor<2x128x256xbf16>, tensor<2x256x256xbf16>, tensor<2x256xbf16>, tensor<2x688x256xbf16>, tensor<2x688x256xbf16>, tensor<2x256x688xbf16>, tensor<2x512x256xbf16>, tensor<2x512x256xbf16>, tensor<2x2x256x4x64xbf16>, tensor<2x2x256x2x64xbf16>, tensor<2x2x256x2x64xbf16>, tensor<2x2x256x4x64xbf16>, tensor<2x512x256xbf16>, tensor<2x512x256xbf16>, tensor<2x512x256xbf16>, tensor<2x512x688xbf16>, tensor<2x512x688xbf16>, tensor<2x512x688xbf16>, tensor<2x512x688xbf16>) {reverse} -> (tensor<512x256xbf16>, tensor<2x256xbf16>, tensor<2x256x256xbf16>, tensor<2x128x256xbf16>, tensor<2x128x256xbf16>, tensor<2x256x256xbf16>, tensor<2x256xbf16>, tensor<2x688x256xbf16>, tensor<2x688x256xbf16>, tensor<2x256x688xbf16>) {
      ^bb0(%dx: tensor<512x256xbf16>, %ln1_i: tensor<256xbf16>, %wq_i: tensor<256x256xbf16>, %wk_i: tensor<128x256xbf16>, %wv_i: tensor<128x256xbf16>, %wo_i: tensor<256x256xbf16>, %ln2_i: tensor<256xbf16>, %wg_i: tensor<688x256xbf16>, %wu_i: tensor<688x256xbf16>, %wd_i: tensor<256x688xbf16>, %x_s: tensor<512x256xbf16>, %n1_s: tensor<512x256xbf16>, %q4_s: tensor<2x256x4x64xbf16>, %k4_s: tensor<2x256x2x64xbf16>, %v4_s: tensor<2x256x2x64xbf16>, %a4_s: tensor<2x256x4x64xbf16>, %a_s: tensor<512x256xbf16>, %x1_s: tensor<512x256xbf16>, %n2_s: tensor<512x256xbf16>, %g_s: tensor<512x688xbf16>, %u_s: tensor<512x688xbf16>, %sg_s: tensor<512x688xbf16>, %m_s: tensor<512x688xbf16>):
      %dwd = sim.matmul %dx, %m_s {transpose_lhs} : (tensor<512x256xbf16>, tensor<512x688xbf16>) -> tensor<256x688xbf16>
      %dm = sim.matmul %dx, %wd_i : (tensor<512x256xbf16>, tensor<256x688xbf16>) -> tensor<512x688xbf16>
      %dsg = sim.elementwise "mul" %dm, %u_s : tensor<512x688xbf16>, tensor<512x688xbf16> -> tensor<512x688xbf16>
      %du = sim.elementwise "mul" %dm, %sg_s : tensor<512x688xbf16>, tensor<512x688xbf16> -> tensor<512x688xbf16>
      %dg = sim.elementwise "silu_grad" %dsg, %g_s : tensor<512x688xbf16>, tensor<512x688xbf16> -> tensor<512x688xbf16>
      %dwg = sim.matmul %dg, %n2_s {transpose_lhs} : (tensor<512x688xbf16>, tensor<512x256xbf16>) -> tensor<688x256xbf16>
      %dwu = sim.matmul %du, %n2_s {transpose_lhs} : (tensor<512x688xbf16>, tensor<512x256xbf16>) -> tensor<688x256xbf16>
      %dn2g = sim.matmul %dg, %wg_i : (tensor<512x688xbf16>, tensor<688x256xbf16>) -> tensor<512x256xbf16>
      %dn2u = sim.matmul %du, %wu_i : (tensor<512x688xbf16>, tensor<688x256xbf16>) -> tensor<512x256xbf16>
      %dn2 = sim.elementwise "add" %dn2g, %dn2u : tensor<512x256xbf16>, tensor<512x256xbf16> -> tensor<512x256xbf16>
      %ln2g_t = sim.elementwise "mul" %dn2, %ln2_i : tensor<512x256xbf16>, tensor<256xbf16> -> tensor<512x256xbf16>
      %ln2g_tx = sim.elementwise "mul" %ln2g_t, %x1_s : tensor<512x256xbf16>, tensor<512x256xbf16> -> tensor<512x256xbf16>
      %ln2g_s = sim.reduce "mean" %ln2g_tx [1] : tensor<512x256xbf16> -> tensor<512x1xbf16>
      %ln2g_r = sim.elementwise "mul" %x1_s, %ln2g_s : tensor<512x256xbf16>, tensor<512x1xbf16> -> tensor<512x256xbf16>
      %ln2g_d = sim.elementwise "sub" %ln2g_t, %ln2g_r : tensor<512x256xbf16>, tensor<512x256xbf16> -> tensor<512x256xbf16>
      %ln2g_dx = sim.elementwise "add" %dx, %ln2g_d : tensor<512x256xbf16>, tensor<512x256xbf16> -> tensor<512x256xbf16>
      %dwo = sim.matmul %ln2g_dx, %a_s {transpose_lhs} : (tensor<512x256xbf16>, tensor<512x256xbf16>) -> tensor<256x256xbf16>
      %da = sim.matmul %ln2g_dx, %wo_i : (tensor<512x256xbf16>, tensor<256x256xbf16>) -> tensor<512x256xbf16>
      %da4 = sim.view %da : tensor<512x256xbf16> -> tensor<2x256x4x64xbf16>
      %dq4, %dk4, %dv4 = sim.attention_grad %q4_s, %k4_s, %v4_s, %a4_s, %da4 {causal, flash} : (tensor<2x256x4x64xbf16>, tensor<2x256x2x64xbf16>, tensor<2x256x2x64xbf16>, tensor<2x256x4x64xbf16>, tensor<2x256x4x64xbf16>) -> (tensor<2x256x4x64xbf16>, tensor<2x256x2x64xbf16>, tensor<2x256x2x64xbf16>)
      %dqr = sim.view %dq4 : tensor<2x256x4x64xbf16> -> tensor<512x256xbf16>
      %dkr = sim.view %dk4 : tensor<2x256x2x64xbf16> -> tensor<512x128xbf16>
      %dv = sim.view %dv4 : tensor<2x256x2x64xbf16> -> tensor<512x128xbf16>
      %dqc = sim.elementwise "mul" %dqr, %cos : tensor<512x256xbf16>, tensor<512x256xbf16> -> tensor<512x256xbf16>
      %dqs = sim.elementwise "mul" %dqr, %sin : tensor<512x256xbf16>, tensor<512x256xbf16> -> tensor<512x256xbf16>
      %dq = sim.elementwise "add" %dqc, %dqs : tensor<512x256xbf16>, tensor<512x256xbf16> -> tensor<512x256xbf16>
      %dkc = sim.elementwise "mul" %dkr, %cos_kv : tensor<512x128xbf16>, tensor<512x128xbf16> -> tensor<512x128xbf16>
      %dks = sim.elementwise "mul" %dkr, %sin_kv : tensor<512x128xbf16>, tensor<512x128xbf16> -> tensor<512x128xbf16>
      %dk = sim.elementwise "add" %dkc, %dks : tensor<512x128xbf16>, tensor<512x128xbf16> -> tensor<512x128xbf16>
      %dwq = sim.matmul %dq, %n1_s {transpose_lhs} : (tensor<512x256xbf16>, tensor<512x256xbf16>) -> tensor<256x256xbf16>
      %dwk = sim.matmul %dk, %n1_s {transpose_lhs} : (tensor<512x128xbf16>, tensor<512x256xbf16>) -> tensor<128x256xbf16>
      %dwv = sim.matmul %dv, %n1_s {transpose_lhs} : (tensor<512x128xbf16>, tensor<512x256xbf16>) -> tensor<128x256xbf16>
      %dn1q = sim.matmul %dq, %wq_i : (tensor<512x256xbf16>, tensor<256x256xbf16>) -> tensor<512x256xbf16>
      %dn1k = sim.matmul %dk, %wk_i : (tensor<512x128xbf16>, tensor<128x256xbf16>) -> tensor<512x256xbf16>
      %dn1v = sim.matmul %dv, %wv_i : (tensor<512x128xbf16>, tensor<128x256xbf16>) -> tensor<512x256xbf16>
      %dn1qk = sim.elementwise "add" %dn1q, %dn1k : tensor<512x256xbf16>, tensor<512x256xbf16> -> tensor<512x256xbf16>
      %dn1 = sim.elementwise "add" %dn1qk, %dn1v : tensor<512x256xbf16>, tensor<512x256xbf16> -> tensor<512x256xbf16>
      %ln1g_t = sim.elementwise "mul" %dn1, %ln1_i : tensor<512x256xbf16>, tensor<256xbf16> -> tensor<512x256xbf16>
      %ln1g_tx = sim.elementwise "mul" %ln1g_t, %x_s : tensor<512x256xbf16>, tensor<512x256xbf16> -> tensor<512x256xbf16>
      %ln1g_s = sim.reduce "mean" %ln1g_tx [1] : tensor<512x256xbf16> -> tensor<512x1xbf16>
      %ln1g_r = sim.elementwise "mul" %x_s, %ln1g_s : tensor<512x256xbf16>, tensor<512x1xbf16> -> tensor<512x256xbf16>
      %ln1g_d = sim.elementwise "sub" %ln1g_t, %ln1g_r : tensor<512x256xbf16>, tensor<512x256xbf16> -> tensor<512x256xbf16>
      %ln1g_dx = sim.elementwise "add" %ln2g_dx, %ln1g_d : tensor<512x256xbf16>, tensor<512x256xbf16> -> tensor<512x256xbf16>
      %dln2_p = sim.elementwise "mul" %dn2, %n2_s : tensor<512x256xbf16>, tensor<512x256xbf16> -> tensor<512x256xbf16>
      %dln2 = sim.reduce "sum" %dln2_p [0] : tensor<512x256xbf16> -> tensor<256xbf16>
      %dln1_p = sim.elementwise "mul" %dn1, %n1_s : tensor<512x256xbf16>, tensor<512x256xbf16> -> tensor<512x256xbf16>
      %dln1 = sim.reduce "sum" %dln1_p [0] : tensor<512x256xbf16> -> tensor<256xbf16>
      sim.yield %ln1g_dx, %dln1, %dwq, %dwk, %dwv, %dwo, %dln2, %dwg, %dwu, %dwd : tensor<512x256xbf16>, tensor<256xbf16>, tensor<256x256xbf16>, tensor<128x256xbf16>, tensor<128x256xbf16>, tensor<256x256xbf16>, tensor<256xbf16>, tensor<688x256xbf16>, tensor<688x256xbf16>, tensor<256x688xbf16>
    }
    sim.yield %dhead, %grads#1, %grads#2, %grads#3, %grads#4, %grads#5, %grads#6, %grads#7, %grads#8, %grads#9 : tensor<1024x256xbf16>, tensor<2x256xbf16>, tensor<2x256x256xbf16>, tensor<2x128x256xbf16>, tensor<2x128x256xbf16>, tensor<2x256x256xbf16>, tensor<2x256xbf16>, tensor<2x688x256xbf16>, tensor<2x688x256xbf16>, tensor<2x256x688xbf16>
  }
  sim.phase "optimizer" {
    sim.optimizer_step "adamw" (%head, %ln1, %wq, %wk, %wv, %wo, %ln2, %wg, %wu, %wd : tensor<1024x256xbf16>, tensor<2x256xbf16>, tensor<2x256x256xbf16>, tensor<2x128x256xbf16>, tensor<2x128x256xbf16>, tensor<2x256x256xbf16>, tensor<2x256xbf16>, tensor<2x688x256xbf16>, tensor<2x688x256xbf16>, tensor<2x256x688xbf16>) grads (%bwd#0, %bwd#1, %bwd#2, %bwd#3, %bwd#4, %bwd#5, %bwd#6, %bwd#7, %bwd#8, %bwd#9 : tensor<1024x256xbf16>, tensor<2x256xbf16>, tensor<2x256x256xbf16>, tensor<2x128x256xbf16>, tensor<2x128x256xbf16>, tensor<2x256x256xbf16>, tensor<2x256xbf16>, tensor<2x688x256xbf16>, tensor<2x688x256xbf16>, tensor<2x256x688xbf16>)
    sim.yield
  }
}
