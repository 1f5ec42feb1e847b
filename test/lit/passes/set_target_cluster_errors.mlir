// A broken cluster file is one line naming FILE:LINE:COL and what is wrong.
// RUN: not charon-opt %s -p 'set-target{cluster="%S/Inputs/broken_syntax.cluster"}' 2>&1 | filecheck %s --check-prefix=SYNTAX
// RUN: not charon-opt %s -p 'set-target{cluster="%S/Inputs/unknown_gpu.cluster"}' 2>&1 | filecheck %s --check-prefix=GPU
// RUN: not charon-opt %s -p 'set-target{cluster="%S/Inputs/bad_unit.cluster"}' 2>&1 | filecheck %s --check-prefix=UNIT
// RUN: not charon-opt %s -p 'set-target{cluster="%S/Inputs/no_such_file.cluster"}' 2>&1 | filecheck %s --check-prefix=MISSING
// RUN: not charon-opt %s -p 'set-target{cluster=dgx-h1000}' 2>&1 | filecheck %s --check-prefix=PRESET
// RUN: not charon-opt %s -p 'set-target{cluster="%S/Inputs/broken_syntax.cluster"}' 2>&1 | wc -l | filecheck %s --check-prefix=ONE-LINE
// RUN: not charon-opt %s -p 'set-target{cluster="%S/Inputs/unknown_gpu.cluster"}' 2>&1 | wc -l | filecheck %s --check-prefix=ONE-LINE

// SYNTAX: charon-opt: error: {{.*}}Inputs/broken_syntax.cluster:3:12: expected '=' between 'gpu' and 'H100'
// GPU: charon-opt: error: {{.*}}Inputs/unknown_gpu.cluster:2:14: unknown GPU 'Z100' (known: {{.*}}H100-SXM5-80GB{{.*}})
// UNIT: charon-opt: error: {{.*}}Inputs/bad_unit.cluster:3:26: 'speed' must be a bandwidth with a unit ({{.*}}Gb/s{{.*}}), got '400'
// MISSING: charon-opt: error: cluster file '{{.*}}no_such_file.cluster': cannot read: No such file or directory
// PRESET: charon-opt: error: no cluster file or preset 'dgx-h1000' (presets: {{.*}}dgx-h100{{.*}})
// ONE-LINE: {{^ *1$}}
builtin.module {
}
