// RUN: not charon-opt %s -p 'shard-context{cp=2}' 2>&1 | filecheck %s --check-prefix=RING
// RUN: charon-opt %s -p 'shard-context{cp=2 mode=ulysses}' | filecheck %s --check-prefix=ULYSSES

// Chunked attention (Llama 4): the ring prices its remote kv blocks whole, which a
// chunk would undo, so it refuses; Ulysses keeps the whole sequence per rank and
// the chunk with it.

%q = sim.input "q" : tensor<1x32x4x16xbf16>
%k = sim.input "k" : tensor<1x32x2x16xbf16>
%f = sim.phase "forward" -> tensor<1x32x4x16xbf16> {
  %a = sim.attention %q, %k, %k {causal, flash, chunk = 8 : i64} : (tensor<1x32x4x16xbf16>, tensor<1x32x2x16xbf16>, tensor<1x32x2x16xbf16>) -> tensor<1x32x4x16xbf16>
  sim.yield %a : tensor<1x32x4x16xbf16>
}

// RING: charon-opt: error: shard-context: chunked attention (chunk 8) is not modelled on the ring; use the all-to-all (Ulysses) variant

// ULYSSES: %[[A:.*]] = sim.attention %{{.*}}, %{{.*}}, %{{.*}} {causal, flash, chunk = 8 : i64} : (tensor<1x32x2x16xbf16>, tensor<1x32x1x16xbf16>, tensor<1x32x1x16xbf16>) -> tensor<1x32x2x16xbf16>
