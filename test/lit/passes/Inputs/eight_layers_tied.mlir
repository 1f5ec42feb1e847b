// Eight identical layers between an embedding and a head that share one weight (tied
// input and output embeddings): its gradient is the head's partial plus the embedding's.
builtin.module {
  %ids = sim.input "tokens" {tokens} : tensor<1x64xi64>
  %table = sim.param "embed" : tensor<1000x64xbf16>
  %ws = sim.param "layers.w" : tensor<8x64x64xbf16>
  %f:3 = sim.phase "forward" -> tensor<1x64x64xbf16>, tensor<8x1x64x64xbf16>, tensor<1x64x1000xbf16> {
    %x = sim.embedding %table, %ids : (tensor<1000x64xbf16>, tensor<1x64xi64>) -> tensor<1x64x64xbf16>
    %r:2 = sim.repeat 8 iter(%x : tensor<1x64x64xbf16>) slices(%ws : tensor<8x64x64xbf16>) -> (tensor<1x64x64xbf16>, tensor<8x1x64x64xbf16>) {
    ^bb0(%h: tensor<1x64x64xbf16>, %w: tensor<64x64xbf16>):
      %y = sim.matmul %h, %w : (tensor<1x64x64xbf16>, tensor<64x64xbf16>) -> tensor<1x64x64xbf16>
      sim.yield %y, %h : tensor<1x64x64xbf16>, tensor<1x64x64xbf16>
    }
    %logits = sim.matmul %r#0, %table {transpose_rhs} : (tensor<1x64x64xbf16>, tensor<1000x64xbf16>) -> tensor<1x64x1000xbf16>
    sim.yield %r#0, %r#1, %logits : tensor<1x64x64xbf16>, tensor<8x1x64x64xbf16>, tensor<1x64x1000xbf16>
  }
  %b:2 = sim.phase "backward" -> tensor<1000x64xbf16>, tensor<8x64x64xbf16> {
    %dl = sim.elementwise "fill" %f#2 : tensor<1x64x1000xbf16> -> tensor<1x64x1000xbf16>
    %dh = sim.matmul %dl, %table : (tensor<1x64x1000xbf16>, tensor<1000x64xbf16>) -> tensor<1x64x64xbf16>
    %dhead = sim.matmul %dl, %f#0 {transpose_lhs} : (tensor<1x64x1000xbf16>, tensor<1x64x64xbf16>) -> tensor<1x1000x64xbf16>
    %dheadr = sim.view %dhead : tensor<1x1000x64xbf16> -> tensor<1000x64xbf16>
    %rb:2 = sim.repeat 8 iter(%dh : tensor<1x64x64xbf16>) slices(%f#1, %ws : tensor<8x1x64x64xbf16>, tensor<8x64x64xbf16>) {reverse} -> (tensor<1x64x64xbf16>, tensor<8x64x64xbf16>) {
    ^bb0(%g: tensor<1x64x64xbf16>, %a: tensor<1x64x64xbf16>, %w: tensor<64x64xbf16>):
      %dx = sim.matmul %g, %w {transpose_rhs} : (tensor<1x64x64xbf16>, tensor<64x64xbf16>) -> tensor<1x64x64xbf16>
      %dw = sim.matmul %a, %g {transpose_lhs} : (tensor<1x64x64xbf16>, tensor<1x64x64xbf16>) -> tensor<1x64x64xbf16>
      %dwr = sim.view %dw : tensor<1x64x64xbf16> -> tensor<64x64xbf16>
      sim.yield %dx, %dwr : tensor<1x64x64xbf16>, tensor<64x64xbf16>
    }
    %dt = sim.generic "embedding_backward"(%rb#0, %ids) {flop_count = 0.0 : f64, byte_count = 1.0e6 : f64} : (tensor<1x64x64xbf16>, tensor<1x64xi64>) -> tensor<1000x64xbf16>
    %dtable = sim.elementwise "add" %dheadr, %dt : tensor<1000x64xbf16>, tensor<1000x64xbf16> -> tensor<1000x64xbf16>
    sim.yield %dtable, %rb#1 : tensor<1000x64xbf16>, tensor<8x64x64xbf16>
  }
  sim.phase "optimizer" {
    sim.optimizer_step "adamw"(%table, %ws : tensor<1000x64xbf16>, tensor<8x64x64xbf16>) grads(%b#0, %b#1 : tensor<1000x64xbf16>, tensor<8x64x64xbf16>)
    sim.yield
  }
}
