// RUN: not charon-opt %s -p 'recompute{policy=selective}' 2>&1 | filecheck %s
// RUN: not charon-opt %s -p 'set-target{hardware=H100-SXM5-80GB},memory-analysis' 2>&1 | filecheck %s --check-prefix=MEMORY

// A `sim.recompute` mark must be a #sim<recompute ...>: a plain string (IR written
// before the mark was an enum) is refused by the first pass that reads it, in one
// line, rather than read as "not recomputed".

%q = sim.input "q" : tensor<1x16x8x64xbf16>
%k = sim.input "k" : tensor<1x16x4x64xbf16>
%saved = sim.phase "forward" -> tensor<1x16x8x64xbf16> {
  %o = sim.attention %q, %k, %k {causal, sim.recompute = "selective"} : (tensor<1x16x8x64xbf16>, tensor<1x16x4x64xbf16>, tensor<1x16x4x64xbf16>) -> tensor<1x16x8x64xbf16>
  sim.yield %o : tensor<1x16x8x64xbf16>
}
sim.phase "backward" {
  %dq, %dk, %dv = sim.attention_grad %q, %k, %k, %saved, %saved {causal, sim.recompute = "selective"} : (tensor<1x16x8x64xbf16>, tensor<1x16x4x64xbf16>, tensor<1x16x4x64xbf16>, tensor<1x16x8x64xbf16>, tensor<1x16x8x64xbf16>) -> (tensor<1x16x8x64xbf16>, tensor<1x16x4x64xbf16>, tensor<1x16x4x64xbf16>)
  sim.yield
}

// CHECK:      charon-opt: error: 'sim.attention_grad': sim.recompute must be a #sim<recompute ...> (one of selective, selective-op, full), got "selective"
// CHECK-NOT:  Traceback
// MEMORY:     charon-opt: error: 'sim.attention': sim.recompute must be a #sim<recompute ...> (one of selective, selective-op, full), got "selective"
// MEMORY-NOT: Traceback
