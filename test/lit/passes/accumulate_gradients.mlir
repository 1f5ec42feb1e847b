// RUN: charon-opt %examples/llama_tiny_step.mlir -p 'accumulate-gradients' | filecheck %s
// RUN: charon-opt %examples/llama_tiny_step.mlir -p 'accumulate-gradients{bytes-per-element=10}' | filecheck %s --check-prefix=FP32
// RUN: not charon-opt %examples/llama_tiny_step.mlir -p 'accumulate-gradients,accumulate-gradients' 2>&1 | filecheck %s --check-prefix=TWICE
// RUN: not charon-opt %examples/llama_tiny_step.mlir -p 'accumulate-gradients{bytes-per-element=0}' 2>&1 | filecheck %s --check-prefix=BYTES

// Each micro-batch's weight gradients are added into the gradient buffer by a
// kernel of their own: one inside the backward layer repeat, reading the layer's
// gradients (its per-iteration outputs), one before the phase's yield for the
// gradient made outside the layers (the head's). The tiny step's layer has
// 256 + 256x256 + 2 x 128x256 + 256x256 + 256 + 3 x 688x256 = 725,504 gradient
// elements, 6 bytes each (16-bit gradient read, buffer read and written):
// 4,353,024 bytes, written by the printer as the f64 0x41509B0000000000; the
// head's 1024x256 = 262,144 elements: 1,572,864 bytes (0x4138000000000000).

// CHECK:      sim.phase "backward"
// CHECK:        sim.repeat 2
// CHECK:          sim.generic "accumulate_grads"(%[[LN1:.*]], %[[WQ:.*]], %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[WD:.*]]) {flop_count = 0.000000e+00 : f64, byte_count = 0x41509B0000000000 : f64}
// CHECK-NEXT:     sim.yield %{{.*}}, %[[LN1]], %[[WQ]], %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[WD]] :
// CHECK:        sim.generic "accumulate_grads"(%[[HEAD:.*]]) {flop_count = 0.000000e+00 : f64, byte_count = 0x4138000000000000 : f64} : (tensor<1024x256xbf16>) -> ()
// CHECK-NEXT:   sim.yield %[[HEAD]], %{{.*}} :
// CHECK:      sim.phase "optimizer"

// An fp32 buffer: 10 bytes per element.
// FP32: sim.generic "accumulate_grads"({{.*}}) {flop_count = 0.000000e+00 : f64, byte_count = 7.255040e+06 : f64}
// FP32: sim.generic "accumulate_grads"({{.*}}) {flop_count = 0.000000e+00 : f64, byte_count = 2.621440e+06 : f64}

// TWICE: charon-opt: error: accumulate-gradients: the gradients already accumulate in their own kernels
// BYTES: charon-opt: error: accumulate-gradients: option 'bytes-per-element' must be > 0, got 0
