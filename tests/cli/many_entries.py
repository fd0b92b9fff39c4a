#!/usr/bin/python3
"""Adds N entries to a safetensors file's header, its data unchanged: zero-size tensors ("tensors",
each {"dtype":"F32","shape":[0],"data_offsets":[0,0]}, named empty.K) or "__metadata__" pairs
("metadata", "key.K": ""). A header a reader must take in linear time to refuse or accept quickly.
Usage: many_entries.py FILE N tensors|metadata"""
import json
import struct
import sys

path, count, kind = sys.argv[1], int(sys.argv[2]), sys.argv[3]
raw = open(path, "rb").read()
n = struct.unpack("<Q", raw[:8])[0]
header = json.loads(raw[8:8 + n])
metadata = header.pop("__metadata__", {})
entries = [json.dumps(k) + ":" + json.dumps(v, separators=(",", ":")) for k, v in metadata.items()]
if kind == "metadata":
    entries += [f'"key.{k}":""' for k in range(count)]
elif kind != "tensors":
    sys.exit(f"many_entries.py: the kind is tensors or metadata, not {kind}")
pieces = ['"__metadata__":{' + ",".join(entries) + "}"] if entries else []
pieces += [json.dumps(k) + ":" + json.dumps(v, separators=(",", ":")) for k, v in header.items()]
if kind == "tensors":
    pieces += [f'"empty.{k}":{{"dtype":"F32","shape":[0],"data_offsets":[0,0]}}' for k in range(count)]
text = ("{" + ",".join(pieces) + "}").encode()
text += b" " * (-len(text) % 8)
open(path, "wb").write(struct.pack("<Q", len(text)) + text + raw[8 + n:])
