"""`charon-opt`: xdsl-opt with Charon's dialects, passes and targets.

Differences from stock xdsl-opt:
- `--pass-pipeline='builtin.module(a{x=1},b)'` (MLIR spelling) beside `-p 'a{x=1},b'`;
- every op parsed remembers its file:line:col, and the module is verified right after
  parsing, so a verifier error names the op's place in the file;
- any error is one line `FILE:LINE:COL: error: ...` or `charon-opt: error: ...`,
  exit code 1, never a traceback;
- the module is verified after every pass, use before definition included, and a
  failure names the pass (`--no-verify-each` skips it, as MLIR's
  `--verify-each=false`); a pass that rewrites `sim` IR refuses a module already
  lowered to events instead of finding nothing to do.

It never imports torch: dialects, passes and targets load through lazy factories.
"""

from __future__ import annotations

import argparse
import dataclasses
import io
import os
import re
import sys
import textwrap
import typing
from collections.abc import Callable, Mapping, Sequence
from decimal import Decimal
from typing import IO

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, Operation, OpResult
from xdsl.parser import Parser
from xdsl.passes import ModulePass, PassPipeline
from xdsl.transforms import get_all_passes
from xdsl.utils.exceptions import ArgSpecParseError, DiagnosticException, ParseError, VerifyException
from xdsl.utils.lexer import Span
from xdsl.xdsl_opt_main import xDSLOptMain

import charon_ir.xdsl_lexer  # noqa: F401  (xDSL's string-literal lexer, linear: before any parse)
from charon_ir.errors import CharonError, one_line
from charon_ir.registry import ALL_DIALECTS, ALL_PASSES, ALL_TARGETS


def first_line(message: object) -> str:
    text = str(message).strip()
    return text.splitlines()[0] if text else type(message).__name__


class LocatingParser(Parser):
    """A parser that records where each op starts, to locate verifier errors."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.op_spans: dict[int, Span] = {}

    def parse_operation(self) -> Operation:
        start = self._current_token.span
        try:
            op = super().parse_operation()
        except VerifyException as e:
            # an attribute or property rejected while the op is being built
            raise ParseError(start, first_line(e)) from None
        self.op_spans[id(op)] = start
        return op


def span_location(span: Span) -> str:
    return str(span.get_location())


class LocatedVerifyError(DiagnosticException):
    """A verifier error already rendered as one `FILE:LINE:COL: error: ...` line
    (a DiagnosticException, so `--verify-diagnostics` prints it and goes on)."""


def check_defined_before(op: Operation, order: dict[Block, dict[Operation, int]]) -> None:
    """Each value `op` reads is defined above it in its block or an enclosing one:
    xDSL checks no dominance, and a value read before its definition would be
    simulated as if it were there. (A value of a region that does not enclose `op`
    is the phase verifier's to report.)"""
    for i, value in enumerate(op.operands):
        if not isinstance(value, OpResult) or (block := value.op.parent_block()) is None:
            continue
        at = block.find_ancestor_op_in_block(op)
        if at is None:
            continue
        if block not in order:
            order[block] = {o: k for k, o in enumerate(block.ops)}
        if order[block][value.op] >= order[block][at]:
            name = f"%{value.name_hint}" if value.name_hint else f"#{i}"
            raise VerifyException(f"operand {name} is used before it is defined")


def first_invalid_op(module: ModuleOp) -> tuple[Operation, Exception] | None:
    """The first op (in walk order) that fails its verifier or reads a value
    defined after it, with the error; None when the module is valid."""
    order: dict[Block, dict[Operation, int]] = {}
    for op in module.walk():
        try:
            op.verify(verify_nested_ops=False)
            check_defined_before(op, order)
        except (VerifyException, DiagnosticException) as e:
            return op, e
    return None


def verify_located(module: ModuleOp, spans: dict[int, Span]) -> None:
    """Verify op by op so the first failing op is reported at its own place."""
    failure = first_invalid_op(module)
    if failure is not None:
        op, e = failure
        span = spans.get(id(op))
        where = span_location(span) if span else "<unknown>"
        raise LocatedVerifyError(f"{where}: error: '{op.name}' op {first_line(e)}")


def verify_after(module_pass: ModulePass, module: ModuleOp) -> None:
    """Verify the module a pass returned, as the parser's output is verified (use
    before definition included): invalid IR is the pass's bug, so the error names
    the pass, not a place in the input."""
    failure = first_invalid_op(module)
    if failure is not None:
        op, e = failure
        raise CharonError(f"{module_pass.name}: produced invalid IR (a bug, please report it): "
                          f"'{op.name}' op {first_line(e)}")


WORK_ON_EVENTS = frozenset({"set-target"})
"""Charon's passes that also take a module lowered to events: set-target attaches
the target a hand-written event program is simulated on. Every other Charon pass
rewrites `sim` IR, of which a lowered module has none left."""


def refuse_lowered(module_pass: ModulePass, module: ModuleOp) -> None:
    """A `sim` pass after lower-to-events found nothing to rewrite and changed
    nothing, silently (`lower-to-events,data-parallel{dp=2}` simulated dp = 1)."""
    if module_pass.name not in ALL_PASSES or module_pass.name in WORK_ON_EVENTS:
        return
    if any(op.name == "event.program" for op in module.body.block.ops):
        name = module_pass.name
        before = f"; run {name} before lower-to-events" if name != "lower-to-events" else ""
        raise CharonError(f"{name}: the module is already lowered to events{before}")


MAX_PARSED_OPS = 20_000
"""The most ops of an IR file read: xDSL's parser takes ~0.7-0.9 ms per op on the
project's 2-CPU machines (a third of it in its lexer, `MLIRLexer.lex`, 27 tokens
an op; a sixth re-parsing the same tensor types), so 20,000 ops take ~15 s and a
200,000-op file took over 300 s. A model that large is built in memory
(`charon simulate --model CONFIG`), not read as text: text IR is for tests."""

OP_LINE = re.compile(r'^[ \t]*(?:%[^=\n]*=[ \t]*)?"?[A-Za-z_][\w$]*\.[\w.]+', re.MULTILINE)
"""The start of an op (`%x = sim.matmul`, `"sim.yield"`, `coll.grid @mesh`), one per line
as charon-opt prints them."""


def check_module_size(text: str, name: str) -> None:
    """Refuse a file of more than MAX_PARSED_OPS ops before parsing it (counted by
    their lines: milliseconds where parsing them would take minutes)."""
    ops = sum(1 for _ in OP_LINE.finditer(text))
    if ops > MAX_PARSED_OPS:
        raise CharonError(f"{name}: {ops:,} operations; an IR file holds at most {MAX_PARSED_OPS:,} "
                          "(~15 s with xDSL's parser at ~0.8 ms an op): build a model that large "
                          "from its config (charon simulate --model CONFIG)")


def parse_located(ctx: Context, text: str, name: str) -> ModuleOp:
    """Parse and verify `text` as charon-opt does, for the other tools that read
    IR files: a parse or verifier error is one CharonError naming `name:line:col`
    (and the op a verifier rejected)."""
    if not text.strip():  # xDSL's own word for it is "Could not parse entire input!"
        raise CharonError(f"{name}: the file is empty (expected a builtin.module)")
    check_module_size(text, name)
    parser = LocatingParser(ctx, text, name)
    try:
        module = parser.parse_module()
        verify_located(module, parser.op_spans)
    except ParseError as e:
        raise CharonError(f"{span_location(e.span)}: {e.msg}") from None
    except LocatedVerifyError as e:
        raise CharonError(str(e).replace(": error: ", ": ", 1)) from None
    except RecursionError:
        raise CharonError(too_deep(name)) from None
    return module


def too_deep(name: str) -> str:
    """Regions nested past Python's recursion limit (xDSL parses, verifies and
    prints recursively): a few hundred levels where a model needs two or three."""
    return f"{name}: regions nest too deeply (past Python's recursion limit of {sys.getrecursionlimit()})"


class DeferredOutputFile(io.StringIO):
    """The `-o` file, written only once the whole run succeeded: an error never
    leaves a partial output file behind."""

    def __init__(self, path: str):
        super().__init__()
        self.path = path
        self.text: str | None = None

    def close(self) -> None:
        if self.text is None and not self.closed:
            self.text = self.getvalue()
        super().close()

    def commit(self) -> None:
        text = self.text if self.text is not None else self.getvalue()
        with open(self.path, "w") as f:
            f.write(text)


XDSL_TARGETS = ("mlir",)
"""The targets of stock xDSL kept beside Charon-IR's own (`simulate`)."""


class CharonOptMain(xDSLOptMain):
    _deferred_output: DeferredOutputFile | None = None

    def prepare_output(self) -> IO[str]:
        if self.args.output_file is None:
            return sys.stdout
        self._deferred_output = DeferredOutputFile(self.args.output_file)
        return self._deferred_output

    def run(self):
        super().run()
        if self._deferred_output is not None:
            self._deferred_output.commit()

    def register_all_dialects(self):
        super().register_all_dialects()
        for name, factory in ALL_DIALECTS.items():
            if name not in self.ctx.registered_dialect_names:
                self.ctx.register_dialect(name, factory)

    def register_all_passes(self):
        super().register_all_passes()
        for name, factory in ALL_PASSES.items():
            self.available_passes.setdefault(name, factory)

    def register_all_targets(self):
        super().register_all_targets()
        # xDSL's code generators (llvm, riscv-asm, wgsl, ...) have nothing to lower a
        # simulation to: printing the IR and simulating it are the targets here
        self.available_targets = {name: factory for name, factory in self.available_targets.items()
                                  if name in XDSL_TARGETS}
        for name, factory in ALL_TARGETS.items():
            self.available_targets.setdefault(name, factory)

    def register_all_frontends(self):
        super().register_all_frontends()

        def parse_mlir(io: IO[bytes]) -> ModuleOp:
            try:
                text = io.read().decode()
            except UnicodeDecodeError as e:
                raise CharonError(f"{self.get_input_name()}: not UTF-8 text (byte {e.start})") from None
            check_module_size(text, self.get_input_name())
            parser = LocatingParser(self.ctx, text, self.get_input_name())
            try:
                module = parser.parse_module()
                if not self.args.disable_verify:
                    spans = {
                        k: dataclasses.replace(v, line_offset=self._chunk_line_offset)
                        for k, v in parser.op_spans.items()
                    }
                    verify_located(module, spans)
            except RecursionError:
                raise CharonError(too_deep(self.get_input_name())) from None
            return module

        self.available_frontends["mlir"] = parse_mlir

    _chunk_line_offset = 0

    def parse_chunk(self, chunk: IO[bytes], file_extension: str, start_offset: int = 0):
        # with --split-input-file, report lines of the whole file, not of the chunk
        self._chunk_line_offset = start_offset
        return super().parse_chunk(chunk, file_extension, start_offset)

    def register_all_arguments(self, arg_parser: argparse.ArgumentParser):
        super().register_all_arguments(arg_parser)

        def one_line_error(message: str):
            # argparse prints the whole usage first; a mistyped flag is bad input
            # like any other, so it gets the same one line (and argparse's exit 2)
            print_error(message)
            sys.exit(2)

        arg_parser.error = one_line_error  # pyright: ignore[reportAttributeAccessIssue]
        # xDSL's help lists every pass of every dialect as one comma-joined word list,
        # broken at hyphens ("shard-\ntensor"): here each of ours once, with its options
        for action in arg_parser._actions:
            if "-p" in action.option_strings:
                action.help = ("pipeline of passes, e.g. 'shard-tensor{tp=8},pipeline{pp=4}' "
                               "(options separated by spaces; the passes are listed below)")
            elif "-t" in action.option_strings:
                action.help = f"what to print: {', '.join(self.available_targets)} (default: mlir)"
        arg_parser.formatter_class = HelpFormatter
        xdsl_own = get_all_passes()
        arg_parser.epilog = pass_listing({name: factory for name, factory in self.available_passes.items()
                                          if name not in ALL_PASSES and name not in xdsl_own})
        arg_parser.add_argument(
            "--no-verify-each",
            action="store_true",
            help="do not verify the module after each pass (it is still verified when parsed)",
        )
        arg_parser.add_argument(
            "--pass-pipeline",
            type=str,
            default=None,
            help="MLIR-style pipeline, e.g. 'builtin.module(set-target{hardware=H100},cost-annotate)'",
        )

    def setup_pipeline(self):
        if self.args.pass_pipeline is not None:
            if self.args.passes:
                raise CharonError("use either -p or --pass-pipeline, not both")
            self.args.passes = strip_module_wrapper(self.args.pass_pipeline)
        if self.args.passes:
            self.args.passes = decimal_numbers(self.args.passes)
            check_repeated_options(self.args.passes)
        try:
            super().setup_pipeline()
        except CharonError:
            raise
        except ArgSpecParseError as e:  # a BaseException in xDSL: the spec's syntax
            raise CharonError(f"invalid pass pipeline '{self.args.passes}': {spec_syntax_error(e)}") from None
        except Exception as e:  # xDSL raises ValueError/Exception for bad specs
            raise CharonError(f"invalid pass pipeline '{self.args.passes}': {first_line(e)}") from None
        for module_pass in self.pipeline.passes:
            check_option_ranges(module_pass)
        self.pipeline = PassPipeline(self.pipeline.passes, self.between_passes(self.pipeline.callback))

    def between_passes(self, xdsl_callback):
        """The callback run before the first pass, between passes and after the
        last: our verification (`verify_after`) and refusal (`refuse_lowered`),
        then xDSL's own (--print-between-passes, --time-passes) without its
        `module.verify()`, which would verify each module a second time."""

        def callback(previous: ModulePass | None, module: ModuleOp, next_pass: ModulePass | None) -> None:
            if previous is not None and not (self.args.disable_verify or self.args.no_verify_each):
                verify_after(previous, module)
            if next_pass is not None:
                refuse_lowered(next_pass, module)
            if xdsl_callback is not None:
                disable_verify, self.args.disable_verify = self.args.disable_verify, True
                try:
                    xdsl_callback(previous, module, next_pass)
                finally:
                    self.args.disable_verify = disable_verify

        return callback


I64 = range(-(2**63), 2**63)

SCIENTIFIC = re.compile(r"(?<=[=,\[ ])([+-]?\d+(?:\.\d*)?[eE][+-]?\d+)(?=[ ,\]}])")
QUOTED = re.compile(r'("[^"]*")')


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """argparse's, with the pass listing kept as written and no line broken at a
    hyphen (a pass name is one word: "shard-tensor", not "shard-\ntensor")."""

    def _split_lines(self, text: str, width: int) -> list[str]:
        return textwrap.wrap(" ".join(text.split()), width, break_on_hyphens=False)


def pass_listing(plugins: Mapping[str, Callable[[], type[ModulePass]]] | None = None) -> str:
    """Each Charon-IR pass once, as `mlir-opt --help` lists them: its name, what it
    does (the first sentence of its file's docstring) and its options with their
    defaults (a fixed set of values as a|b|c); then those of `plugins`, the passes
    installed packages add through their `xdsl.universe` entry points."""
    lines = ["Charon-IR passes (-p 'name{option=value option=value},name'):"]
    for name, factory in ALL_PASSES.items():
        lines += _pass_lines(name, factory())
    if plugins:
        lines.append("Passes of installed plugins (xdsl.universe entry points):")
        for name, factory in sorted(plugins.items()):
            try:
                lines += _pass_lines(name, factory())
            except ImportError as e:  # the rest of the help is still worth printing
                lines.append(f"  {name:<22} (cannot load: {first_line(e)})")
    lines.append("xDSL's own passes are accepted too (see xdsl-opt --help).")
    return "\n".join(lines)


def _pass_lines(name: str, cls: type[ModulePass]) -> list[str]:
    doc = " ".join((sys.modules[cls.__module__].__doc__ or "").strip().split("\n\n")[0].split())
    sentence = re.split(r"(?<!al\.)(?<=\.)\s", doc, maxsplit=1)[0]
    if len(sentence) > 100:
        sentence = sentence[:99].rsplit(" ", 1)[0] + " …"
    lines = [f"  {name:<22} {sentence}"]
    hints = typing.get_type_hints(cls)
    options = []
    for field in dataclasses.fields(cls):
        hint = hints.get(field.name)
        choices = typing.get_args(hint) if typing.get_origin(hint) is typing.Literal else ()
        value = "|".join(map(str, choices)) if choices else _option_value(field.default)
        options.append(f"{field.name.replace('_', '-')}={value}")
    if options:
        lines.append(f"  {'':<22} options: {' '.join(options)}")
    return lines


def _option_value(default: object) -> str:
    if isinstance(default, bool):
        return str(default).lower()
    if isinstance(default, tuple):
        return ",".join(map(str, default)) or "(none)"
    return repr(default) if default == "" else str(default)


def decimal_numbers(spec: str) -> str:
    """`limit-gb=1e-9` as `limit-gb=0.000000001`: xDSL's option parser reads a
    number in scientific notation as a word ("Incompatible types"). Quoted
    values (a cluster file's path) are left as written."""
    parts = QUOTED.split(spec)
    return "".join(part if i % 2 else SCIENTIFIC.sub(lambda m: format(Decimal(m.group(1)), "f"), part)
                   for i, part in enumerate(parts))


PASS_OPTIONS = re.compile(r"([\w.-]+)\{([^}]*)\}")
OPTION_NAME = re.compile(r"(?:^|\s)([\w-]+)\s*=")


def check_repeated_options(spec: str) -> None:
    """`shard-tensor{tp=2 tp=4}`: xDSL keeps the last value without a word."""
    for match in PASS_OPTIONS.finditer(QUOTED.sub('""', spec)):
        names = OPTION_NAME.findall(match.group(2))
        repeated = next((n for i, n in enumerate(names) if n in names[:i]), None)
        if repeated is not None:
            raise CharonError(f"pass '{match.group(1)}': option '{repeated}' is given twice")


def check_option_ranges(module_pass: ModulePass) -> None:
    """Integer options end up in i64 attributes: a value outside that range is the
    option's error, not a verifier's failure on an attribute the user never wrote."""
    for option in dataclasses.fields(module_pass):
        if "float" in str(option.type):  # a float option takes any size
            continue
        value = getattr(module_pass, option.name)
        values = value if isinstance(value, tuple) else (value,)
        for v in values:
            if isinstance(v, int) and not isinstance(v, bool) and v not in I64:
                raise CharonError(f"pass '{module_pass.name}': option "
                                  f"'{option.name.replace('_', '-')}' ({v}) is out of the 64-bit "
                                  f"integer range")


def spec_syntax_error(error: ArgSpecParseError) -> str:
    """`column C: what` from xDSL's multi-line pipeline syntax error (its lines:
    a header, `pass-pipeline:L:C`, the spec, a caret, the message)."""
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    where = next((line for line in lines if line.startswith("pass-pipeline:")), "")
    column = where.rsplit(":", 1)[-1] if where else ""
    message = lines[-1] if lines else "malformed"
    return f"column {column}: {message}" if column.isdigit() else message


def strip_module_wrapper(pipeline: str) -> str:
    text = pipeline.strip()
    if text.startswith("builtin.module(") and text.endswith(")"):
        return text[len("builtin.module(") : -1]
    if text.startswith("builtin.module"):
        raise CharonError(f"malformed --pass-pipeline '{pipeline}': expected builtin.module(...)")
    return text


def print_error(message: str, located: bool = False) -> None:
    """Every diagnostic of charon-opt goes out here, as one line capped by
    `one_line`: `FILE:LINE:COL: error: ...` when `located` (the message is
    already placed in the input), else `charon-opt: error: ...`."""
    print(one_line(message if located else f"charon-opt: error: {message}"), file=sys.stderr)


def print_diagnostic(message: str) -> None:
    """A CharonError's or a verifier's message: it may already be placed."""
    print_error(message, located=": error: " in message)


def main(args: Sequence[str] | None = None) -> None:
    try:
        CharonOptMain(description="Charon-IR modular optimizer driver", args=args).run()
    except ArgSpecParseError as e:  # a BaseException in xDSL: the -t spec's syntax (its options unquoted)
        print_error(f"invalid target spec: {spec_syntax_error(e)} (quote an option's value: "
                    "-t 'chakra{dir=\"out\"}')")
        sys.exit(1)
    except ParseError as e:
        print_error(f"{span_location(e.span)}: error: {e.msg}", located=True)
        sys.exit(1)
    except CharonError as e:
        print_diagnostic(str(e))
        sys.exit(1)
    except OSError as e:  # the input or -o file: name it, not the errno
        where = f"{e.filename}: " if e.filename else ""
        print_error(f"{where}{e.strerror or first_line(e)}")
        sys.exit(1)
    except (DiagnosticException, ValueError, KeyError) as e:
        print_diagnostic(first_line(e))
        sys.exit(1)
    except Exception as e:  # a bug, not bad input: one line unless asked for more (as `charon`)
        if os.environ.get("CHARON_DEBUG"):
            raise
        print_error(f"internal error, please report it (CHARON_DEBUG=1 shows the traceback): "
                    f"{type(e).__name__}: {first_line(e)}")
        sys.exit(1)


if __name__ == "__main__":
    main()
