"""Chakra execution traces: the schema and the file framing.

The message classes (GlobalMetadata, Node, AttributeProto, ...) are built at run
time from the schema shipped beside this file (`et_def.proto`, Chakra's field
numbers), read by a parser of the proto3 subset it uses into a
`FileDescriptorProto`: no protoc, no generated code to keep in step with it.

A trace file is Chakra's framing (`protolib.encodeMessage`): each message
prefixed with its length as a base-128 varint, GlobalMetadata first, then one
Node per message.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import IO, Any

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from google.protobuf.message import DecodeError

from charon_ir.errors import CharonError

SCHEMA = Path(__file__).with_name("et_def.proto")
PACKAGE = "ChakraProtoMsg"
VERSION = "0.0.4"
"""The Chakra schema version written in GlobalMetadata (ASTRA-sim's feeder reads it)."""

_SCALARS = {
    "double": "TYPE_DOUBLE", "float": "TYPE_FLOAT", "int32": "TYPE_INT32", "int64": "TYPE_INT64",
    "uint32": "TYPE_UINT32", "uint64": "TYPE_UINT64", "sint32": "TYPE_SINT32", "sint64": "TYPE_SINT64",
    "fixed32": "TYPE_FIXED32", "fixed64": "TYPE_FIXED64", "sfixed32": "TYPE_SFIXED32",
    "sfixed64": "TYPE_SFIXED64", "bool": "TYPE_BOOL", "string": "TYPE_STRING", "bytes": "TYPE_BYTES",
}
_TOKEN = re.compile(r"\s*(?://[^\n]*|([A-Za-z_][\w.]*|\d+|\"[^\"]*\"|[{}=;]))")


def _tokens(text: str, where: str) -> list[str]:
    out, pos = [], 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None:
            if text[pos:].strip():
                line = text.count("\n", 0, pos) + 1
                raise CharonError(f"{where}:{line}: unexpected text {text[pos:pos + 20].split()[0]!r}")
            break
        pos = m.end()
        if m.group(1):
            out.append(m.group(1))
    return out


def parse_proto(text: str, where: str = "et_def.proto"):
    """The FileDescriptorProto of a proto3 file made of top-level messages (plain,
    `repeated` and `oneof` fields) and enums: the subset Chakra's schema uses."""
    tokens = _tokens(text, where)
    fdp = descriptor_pb2.FileDescriptorProto(name="charon_et_def.proto", syntax="proto3")
    messages = {}
    enums = set()
    i = 0

    def take(expected: str | None = None) -> str:
        nonlocal i
        if i >= len(tokens):
            raise CharonError(f"{where}: unexpected end of file" + (f", expected {expected!r}" if expected else ""))
        tok = tokens[i]
        i += 1
        if expected is not None and tok != expected:
            raise CharonError(f"{where}: expected {expected!r}, got {tok!r}")
        return tok

    def field(msg, type_name: str, repeated: bool, oneof: int | None) -> None:
        name = take()
        take("=")
        number = int(take())
        take(";")
        f = msg.field.add(name=name, number=number, json_name=name)
        f.label = f.LABEL_REPEATED if repeated else f.LABEL_OPTIONAL
        if type_name in _SCALARS:
            f.type = getattr(f, _SCALARS[type_name])
        else:
            f.type_name = f".{PACKAGE}.{type_name}"  # resolved below: message or enum
        if oneof is not None:
            f.oneof_index = oneof

    while i < len(tokens):
        tok = take()
        if tok in ("syntax", "package"):
            take("=") if tok == "syntax" else None
            value = take()
            take(";")
            if tok == "syntax" and value != '"proto3"':
                raise CharonError(f"{where}: only proto3 schemas are read, got syntax {value}")
            if tok == "package":
                fdp.package = value
        elif tok == "enum":
            enum = fdp.enum_type.add(name=take())
            enums.add(enum.name)
            take("{")
            while tokens[i] != "}":
                name = take()
                take("=")
                enum.value.add(name=name, number=int(take()))
                take(";")
            take("}")
        elif tok == "message":
            msg = fdp.message_type.add(name=take())
            messages[msg.name] = msg
            take("{")
            while (tok := take()) != "}":
                if tok == "oneof":
                    index = len(msg.oneof_decl)
                    msg.oneof_decl.add(name=take())
                    take("{")
                    while (t := take()) != "}":
                        field(msg, t, False, index)
                elif tok == "repeated":
                    field(msg, take(), True, None)
                else:
                    field(msg, tok, False, None)
        else:
            raise CharonError(f"{where}: unexpected {tok!r} at the top level (message, enum, syntax, package)")
    for msg in fdp.message_type:
        for f in msg.field:
            if f.type_name:
                short = f.type_name.rsplit(".", 1)[1]
                if short in enums:
                    f.type = f.TYPE_ENUM
                elif short in messages:
                    f.type = f.TYPE_MESSAGE
                else:
                    raise CharonError(f"{where}: field {msg.name}.{f.name} has unknown type {short!r}")
    return fdp


class Schema:
    """The schema's message classes and enum values, by their Chakra names."""

    def __init__(self, fdp) -> None:
        pool = descriptor_pool.DescriptorPool()  # private: no clash with another copy of the schema
        pool.Add(fdp)
        file = pool.FindFileByName(fdp.name)
        self.classes = {name: message_factory.GetMessageClass(desc)
                        for name, desc in file.message_types_by_name.items()}
        self.enums = {name: {v.name: v.number for v in desc.values}
                      for name, desc in file.enum_types_by_name.items()}
        self.Node = self.classes["Node"]
        self.GlobalMetadata = self.classes["GlobalMetadata"]
        self.AttributeProto = self.classes["AttributeProto"]
        self.node_types = self.enums["NodeType"]
        self.node_type_names = {v: k for k, v in self.node_types.items()}
        self.comm_types = self.enums["CollectiveCommType"]
        self.comm_type_names = {v: k for k, v in self.comm_types.items()}


@cache
def schema() -> Schema:
    """Chakra's schema, built once from the shipped et_def.proto."""
    return Schema(parse_proto(SCHEMA.read_text(), str(SCHEMA)))


def varint(n: int) -> bytes:
    """`n` as a base-128 varint, low bits first (protobuf's encoding of lengths)."""
    out = bytearray()
    while True:
        low = n & 0x7F
        n >>= 7
        if n:
            out.append(low | 0x80)
        else:
            out.append(low)
            return bytes(out)


def frame(payload: bytes) -> bytes:
    """One message as Chakra's encodeMessage writes it: varint length, then the bytes."""
    return varint(len(payload)) + payload


def read_frames(stream: IO[bytes], where: str) -> Iterator[tuple[int, bytes]]:
    """Each framed message of `stream`, with its offset; a truncated or garbled
    frame is one error naming the file and the offset."""
    data = stream.read()
    pos = 0
    while pos < len(data):
        start, length, shift = pos, 0, 0
        while True:
            if pos >= len(data):
                raise CharonError(f"{where}: truncated length prefix at byte {start}")
            b = data[pos]
            pos += 1
            length |= (b & 0x7F) << shift
            shift += 7
            if not b & 0x80:
                break
            if shift > 63:
                raise CharonError(f"{where}: malformed length prefix at byte {start} (not a Chakra trace?)")
        if pos + length > len(data):
            raise CharonError(f"{where}: message at byte {start} claims {length} bytes, "
                              f"{len(data) - pos} remain (truncated or not a Chakra trace)")
        yield start, data[pos:pos + length]
        pos += length


def attr_value(attr) -> Any:
    """The value of an AttributeProto, whichever member of its oneof is set."""
    which = attr.WhichOneof("value")
    if which is None:
        return None
    value = getattr(attr, which)
    return list(value.values) if which.endswith("_list") else value


def read_trace(path: str | Path):
    """(GlobalMetadata, [Node, ...]) of a Chakra trace file; bad input (no
    metadata, an unparseable message, an unknown node type) is one error naming
    the file and where."""
    s = schema()
    path = Path(path)
    try:
        f = open(path, "rb")
    except OSError as e:
        raise CharonError(f"{path}: cannot read: {e.strerror}") from None
    nodes = []
    meta = None
    with f:
        for offset, payload in read_frames(f, str(path)):
            msg = s.GlobalMetadata() if meta is None else s.Node()
            try:
                msg.ParseFromString(payload)
            except DecodeError as e:
                what = "global metadata" if meta is None else f"node {len(nodes)}"
                raise CharonError(f"{path}: byte {offset}: {what} does not parse: {e}") from None
            if meta is None:
                meta = msg
                continue
            if msg.type not in s.node_type_names or msg.type == s.node_types["INVALID_NODE"]:
                raise CharonError(f"{path}: byte {offset}: node {msg.id} ({msg.name!r}) has unknown "
                                  f"node type {msg.type}")
            nodes.append(msg)
    if meta is None:
        raise CharonError(f"{path}: empty: a Chakra trace starts with its global metadata")
    return meta, nodes


def node_attrs(node) -> dict[str, Any]:
    return {a.name: attr_value(a) for a in node.attr}
