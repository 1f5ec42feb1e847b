// Two 8192^3 layer GEMMs in a repeat and an output-layer GEMM after it.
builtin.module {
  %x = sim.input "x" : tensor<8192x8192xbf16>
  %ws = sim.param "w" : tensor<2x8192x8192xbf16>
  %layers:2 = sim.repeat 2 iter(%x : tensor<8192x8192xbf16>) slices(%ws : tensor<2x8192x8192xbf16>) -> (tensor<8192x8192xbf16>, tensor<2x8192x8192xbf16>) {
  ^bb0(%a: tensor<8192x8192xbf16>, %w: tensor<8192x8192xbf16>):
    %y = sim.matmul %a, %w {transpose_rhs} : (tensor<8192x8192xbf16>, tensor<8192x8192xbf16>) -> tensor<8192x8192xbf16>
    sim.yield %y, %a : tensor<8192x8192xbf16>, tensor<8192x8192xbf16>
  }
  %head = sim.param "head" : tensor<8192x8192xbf16>
  %logits = sim.matmul %layers#0, %head {transpose_rhs} : (tensor<8192x8192xbf16>, tensor<8192x8192xbf16>) -> tensor<8192x8192xbf16>
}
