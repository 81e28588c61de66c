#!/usr/bin/env python3
"""A tiny CQL client (native protocol v4, standard library only) for scripts/cassandra.

It exists so that the service scripts can check a node and run a statement without
cqlsh or a driver to install. Not for tests: they use the Rust driver.

    cql.py [--host H] [--port P] [--consistency C] [--timeout S] STATEMENT

Prints the rows of a SELECT one per line, columns separated by a tab, with a header line
unless --no-header. Exits 0 on success, 2 on a server error, 3 when the node cannot be
reached or the protocol goes wrong.
"""

import argparse
import ipaddress
import socket
import struct
import sys
import time
import uuid
from datetime import datetime, timezone

PROTOCOL = 0x04
OP_ERROR, OP_STARTUP, OP_READY, OP_AUTHENTICATE, OP_QUERY, OP_RESULT = 0x00, 0x01, 0x02, 0x03, 0x07, 0x08
CONSISTENCY = {
    "any": 0x0000, "one": 0x0001, "two": 0x0002, "three": 0x0003, "quorum": 0x0004,
    "all": 0x0005, "local_quorum": 0x0006, "each_quorum": 0x0007, "serial": 0x0008,
    "local_serial": 0x0009, "local_one": 0x000A,
}


class CqlError(Exception):
    pass


class Reader:
    def __init__(self, data):
        self.data, self.pos = data, 0

    def take(self, n):
        if self.pos + n > len(self.data):
            raise CqlError("truncated frame")
        out = self.data[self.pos:self.pos + n]
        self.pos += n
        return out

    def byte(self):
        return self.take(1)[0]

    def short(self):
        return struct.unpack(">H", self.take(2))[0]

    def int(self):
        return struct.unpack(">i", self.take(4))[0]

    def string(self):
        return self.take(self.short()).decode("utf-8")

    def bytes(self):
        n = self.int()
        return None if n < 0 else self.take(n)

    def type_option(self):
        kind = self.short()
        if kind == 0x00:
            return ("custom", self.string())
        if kind in (0x20, 0x22):
            return (kind, self.type_option())
        if kind == 0x21:
            return (kind, self.type_option(), self.type_option())
        if kind == 0x30:
            self.string(), self.string()
            fields = [(self.string(), self.type_option()) for _ in range(self.short())]
            return (kind, fields)
        if kind == 0x31:
            return (kind, [self.type_option() for _ in range(self.short())])
        return (kind,)


def decode(t, b):
    if b is None:
        return "null"
    kind = t[0]
    if kind in (0x01, 0x0D):  # ascii, text
        return b.decode("utf-8", "replace")
    if kind in (0x02, 0x05, 0x09, 0x13, 0x14, 0x0E):  # bigint counter int smallint tinyint varint
        return str(int.from_bytes(b, "big", signed=True))
    if kind == 0x04:
        return "true" if b and b[0] else "false"
    if kind == 0x07:
        return repr(struct.unpack(">d", b)[0])
    if kind == 0x08:
        return repr(struct.unpack(">f", b)[0])
    if kind == 0x0B:  # timestamp: ms since epoch
        ms = int.from_bytes(b, "big", signed=True)
        return datetime.fromtimestamp(ms / 1000, timezone.utc).isoformat()
    if kind in (0x0C, 0x0F):
        return str(uuid.UUID(bytes=bytes(b)))
    if kind == 0x10:
        return str(ipaddress.ip_address(bytes(b)))
    if kind in (0x20, 0x22):
        r = Reader(b)
        items = [decode(t[1], r.bytes()) for _ in range(r.int())]
        return ("[%s]" if kind == 0x20 else "{%s}") % ", ".join(items)
    if kind == 0x21:
        r = Reader(b)
        pairs = []
        for _ in range(r.int()):
            k = decode(t[1], r.bytes())
            pairs.append("%s: %s" % (k, decode(t[2], r.bytes())))
        return "{%s}" % ", ".join(pairs)
    return "0x" + bytes(b).hex()


class Connection:
    def __init__(self, host, port, timeout):
        try:
            self.sock = socket.create_connection((host, port), timeout=timeout)
        except OSError as e:
            raise ConnectionError("cannot connect to %s:%d: %s" % (host, port, e))
        self.sock.settimeout(timeout)
        self.stream = 0

    def recv_exact(self, n):
        buf = bytearray()
        while len(buf) < n:
            chunk = self.sock.recv(n - len(buf))
            if not chunk:
                raise ConnectionError("connection closed by the server")
            buf += chunk
        return bytes(buf)

    def request(self, opcode, body):
        self.stream = (self.stream + 1) % 32768
        self.sock.sendall(struct.pack(">BBhBi", PROTOCOL, 0, self.stream, opcode, len(body)) + body)
        while True:
            version, _flags, stream, op, length = struct.unpack(">BBhBi", self.recv_exact(9))
            payload = self.recv_exact(length)
            if version & 0x7F != PROTOCOL:
                raise ConnectionError("server answered with protocol version %d" % (version & 0x7F))
            if stream == self.stream:
                break
        if op == OP_ERROR:
            r = Reader(payload)
            code = r.int()
            raise CqlError("server error 0x%04x: %s" % (code, r.string()))
        return op, Reader(payload)

    def startup(self):
        body = struct.pack(">H", 1) + enc_string("CQL_VERSION") + enc_string("3.0.0")
        op, _ = self.request(OP_STARTUP, body)
        if op == OP_AUTHENTICATE:
            raise CqlError("the server requires authentication, which this helper does not do")
        if op != OP_READY:
            raise CqlError("unexpected answer to STARTUP: opcode %d" % op)

    def query(self, cql, consistency):
        q = cql.encode("utf-8")
        body = struct.pack(">i", len(q)) + q + struct.pack(">HB", consistency, 0)
        op, r = self.request(OP_QUERY, body)
        if op != OP_RESULT:
            raise CqlError("unexpected answer to QUERY: opcode %d" % op)
        kind = r.int()
        if kind == 0x0005:  # schema_change: wait, as drivers do, until the nodes agree
            self.await_schema_agreement()
        if kind != 0x0002:  # void, set_keyspace, prepared, schema_change: no rows
            return None, []
        flags, ncols = r.int(), r.int()
        if flags & 0x0002:
            r.bytes()  # paging state: we asked for no paging, but skip it anyway
        if flags & 0x0004:  # no metadata
            raise CqlError("result without metadata")
        global_spec = flags & 0x0001
        if global_spec:
            r.string(), r.string()
        cols = []
        for _ in range(ncols):
            if not global_spec:
                r.string(), r.string()
            cols.append((r.string(), r.type_option()))
        rows = []
        for _ in range(r.int()):
            rows.append([decode(t, r.bytes()) for _, t in cols])
        return [name for name, _ in cols], rows


    def await_schema_agreement(self, seconds=20.0):
        """Poll until this node and every peer it lists report the same schema version.

        A peer that is down keeps its old version in system.peers_v2, so this gives up
        quietly after `seconds` rather than failing."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            _, local = self.query("SELECT schema_version FROM system.local", CONSISTENCY["one"])
            _, peers = self.query("SELECT schema_version FROM system.peers_v2", CONSISTENCY["one"])
            if len({row[0] for row in local + peers}) == 1:
                return
            time.sleep(0.2)


def enc_string(s):
    b = s.encode("utf-8")
    return struct.pack(">H", len(b)) + b


def main():
    p = argparse.ArgumentParser(description="Run one CQL statement (protocol v4, no auth).")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=9042)
    p.add_argument("--consistency", default="one", choices=sorted(CONSISTENCY))
    p.add_argument("--timeout", type=float, default=30.0)
    p.add_argument("--no-header", action="store_true")
    p.add_argument("statement")
    a = p.parse_args()
    try:
        c = Connection(a.host, a.port, a.timeout)
        c.startup()
        header, rows = c.query(a.statement, CONSISTENCY[a.consistency])
    except CqlError as e:
        print("cql: %s: %s" % (a.host, e), file=sys.stderr)
        return 2
    except (ConnectionError, OSError, struct.error) as e:
        print("cql: %s:%d: %s" % (a.host, a.port, e), file=sys.stderr)
        return 3
    if header is not None:
        if not a.no_header:
            print("\t".join(header))
        for row in rows:
            print("\t".join(row))
    return 0


if __name__ == "__main__":
    sys.exit(main())
