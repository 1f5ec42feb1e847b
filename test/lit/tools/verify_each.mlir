// charon-opt verifies the module after every pass (a failure names the pass: see
// test/unit/tools/test_charon_opt.py, which registers passes that break the IR);
// --no-verify-each skips it, as MLIR's --verify-each=false does.
// RUN: charon-opt --help | filecheck %s --check-prefix=HELP
// RUN: charon-opt %s --no-verify-each -p 'set-target{hardware=H100 gpus=8},cost-annotate' | filecheck %s

// HELP: --no-verify-each do not verify the module after each pass
// CHECK: sim.matmul
// CHECK-SAME: cost

builtin.module {
  %x = sim.input "x" : tensor<64x128xbf16>
  %w = sim.param "w" : tensor<128x256xbf16>
  %y = sim.matmul %x, %w : (tensor<64x128xbf16>, tensor<128x256xbf16>) -> tensor<64x256xbf16>
}
