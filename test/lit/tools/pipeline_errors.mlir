// An unknown pass, a mistyped option, a bad option value, an unknown graphics card, an
// unknown flash kernel (which the engine would price as its default), a pipeline that does
// not parse, a code generator of stock xDSL (nothing to lower a simulation to) - each one line.
// RUN: not charon-opt %s -p 'set-target{hardware=H100},frobnicate' 2>&1 | filecheck %s --check-prefix=PASS
// RUN: not charon-opt %s -p 'set-target{hardwre=H100}' 2>&1 | filecheck %s --check-prefix=OPTION
// RUN: not charon-opt %s -p 'set-target{hardware=H100 gpus=many}' 2>&1 | filecheck %s --check-prefix=VALUE
// RUN: not charon-opt %s -p 'set-target{hardware=Q9000}' 2>&1 | filecheck %s --check-prefix=GPU
// RUN: not charon-opt %s --pass-pipeline='builtin.module(set-target{hardware=H100}' 2>&1 | filecheck %s --check-prefix=WRAPPER
// RUN: not charon-opt %s -p 'set-target{hardware=Q9000}' 2>&1 | wc -l | filecheck %s --check-prefix=ONE-LINE
// RUN: not charon-opt %s -p 'fuse{attention-kernel=flash9}' 2>&1 | filecheck %s --check-prefix=KERNEL
// RUN: not charon-opt %s -p 'set-target{' 2>&1 | filecheck %s --check-prefix=SYNTAX
// RUN: not charon-opt %s -p 'a,,b' 2>&1 | filecheck %s --check-prefix=EMPTY
// RUN: not charon-opt %s --pass-pipeline='builtin.module(set-target{hardware="H100})' 2>&1 | filecheck %s --check-prefix=QUOTE
// RUN: not charon-opt %s -p 'set-target{' 2>&1 | wc -l | filecheck %s --check-prefix=ONE-LINE
// RUN: not charon-opt %s -t llvm 2>&1 | filecheck %s --check-prefix=TARGET
// RUN: not charon-opt %s -t 'chakra{dir=/x}' 2>&1 | filecheck %s --check-prefix=TARGET-SPEC
// RUN: not charon-opt %s -t 'chakra{dir=/x}' 2>&1 | wc -l | filecheck %s --check-prefix=ONE-LINE

// PASS: charon-opt: error: invalid pass pipeline 'set-target{hardware=H100},frobnicate': Unrecognized passes: ['frobnicate']
// OPTION: charon-opt: error: invalid pass pipeline 'set-target{hardwre=H100}': Provided arguments ["hardwre"] not found in expected arguments ["hardware", "gpus", "gpus_per_node"
// VALUE: charon-opt: error: invalid pass pipeline 'set-target{hardware=H100 gpus=many}': Incompatible types: given ('many',), expected <class 'int'>
// GPU: charon-opt: error: set-target: option 'hardware': unknown GPU 'Q9000' (known: {{.*}})
// KERNEL: charon-opt: error: fuse: option 'attention-kernel': unknown kernel 'flash9' (known: flash2, flash3, triton)
// WRAPPER: charon-opt: error: malformed --pass-pipeline 'builtin.module(set-target{hardware=H100}': expected builtin.module(...)
// SYNTAX: charon-opt: error: invalid pass pipeline 'set-target{': column 12: Expected argument name here
// EMPTY: charon-opt: error: invalid pass pipeline 'a,,b': column 3: Expected pass name here
// QUOTE: charon-opt: error: invalid pass pipeline 'set-target{hardware="H100}': column 21: Unknown token
// TARGET: charon-opt: error: argument -t/--target: invalid choice: 'llvm' (choose from mlir, simulate, chakra)
// ONE-LINE: {{^ *1$}}
builtin.module {
}
// TARGET-SPEC: charon-opt: error: invalid target spec: column {{[0-9]+}}: Unknown token (quote an option's value
