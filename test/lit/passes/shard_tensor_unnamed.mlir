// shard-tensor on a module none of whose weights has a split or a role it splits
// refuses, naming what it saw (it added the grid and nothing else: a "tp=2" run
// identical to tp=1). The shipped tiny step's weights carry the roles and splits
// the frontend gives them, so it shards.
// RUN: not charon-opt %s -p 'shard-tensor{tp=2}' 2>&1 | filecheck %s
// RUN: charon-opt %S/../../../examples/llama_tiny_step.mlir -p 'shard-tensor{tp=2}' | filecheck %s --check-prefix=TINY
// RUN: charon-opt %s -p 'shard-tensor{tp=1}' | filecheck %s --check-prefix=ONE

// CHECK: charon-opt: error: shard-tensor: option 'tp' (2) splits no weight: none has a split (#sim.split<column|kv|row>) or the role embedding, head or expert (the frontend sets them); the module's: w_in, w_out

// TINY: coll.grid @mesh(axes = ["tp"], shape = 2)
// TINY: %{{.*}} = sim.param "model.layers[0:2].self_attn.q_proj.weight" {role = #sim.role<attention>, split = #sim.split<column>, stacked} : tensor<2x128x256xbf16>
// TINY: coll.all_reduce

// ONE: sim.param "w_in" : tensor<64x32xbf16>

builtin.module {
  %x = sim.input "x" : tensor<8x32xbf16>
  %w_in = sim.param "w_in" : tensor<64x32xbf16>
  %w_out = sim.param "w_out" : tensor<32x64xbf16>
  %h = sim.matmul %x, %w_in {transpose_rhs} : (tensor<8x32xbf16>, tensor<64x32xbf16>) -> tensor<8x64xbf16>
  %y = sim.matmul %h, %w_out {transpose_rhs} : (tensor<8x64xbf16>, tensor<32x64xbf16>) -> tensor<8x32xbf16>
}
