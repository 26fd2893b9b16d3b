#!/usr/bin/env python3
"""The gateway under abuse, for make drills (deploy/local/drills.sh): slow clients, bodies over every route's limit and
forged headers, all at once, against a fleet's gateway on loopback. Standard library only.

  abuse.py --conf GATEWAY_CONF [--conf …] --ca CA --lab-cert PEM --lab-key KEY --secret-file FILE --out DIR
           [--slow N] [--forged N] [--hold SECONDS]

- Slow clients: N/2 connections to the app port that send a request's headers one line a second and never finish
  them, N/2 that send whole headers and then the body one byte a second; each is held until the gateway closes it or
  --hold seconds pass.
- Oversize: for every `location` of the rendered configurations with a `client_max_body_size`, a POST to a path the
  location matches with a body one byte over the limit (the lab port with the lab's certificate): 413 expected.
- Forged: --forged requests spread over the app, lab and portal ports, each carrying X-Forwarded-For, X-Real-IP,
  Forwarded, X-SSL-Client-Cert (the lab's own certificate), X-Gateway-Secret (the gateway's real secret) and
  X-Request-ID values a client must not be able to set. Routes: a dummy registration, a CDN file, a lab upload
  without a client certificate, an NHS lab upload without an API key, the portal's login page.

Writes DIR/started when the slow connections are open, and then DIR/report (one `name: status×count …` line per
kind), DIR/forged-ids and DIR/forged-addresses (the forged values, one per line, for the checks of the logs and the
databases). Exits 0 when it could run; the drill script judges the report.
"""

import argparse
import asyncio
import collections
import json
import os
import re
import secrets
import ssl
import sys
import time
import urllib.parse


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--conf", action="append", required=True, help="a rendered gateway configuration")
    parser.add_argument("--ca", required=True)
    parser.add_argument("--lab-cert", required=True)
    parser.add_argument("--lab-key", required=True)
    parser.add_argument("--secret-file", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--slow", type=int, default=300)
    parser.add_argument("--forged", type=int, default=10000)
    parser.add_argument("--hold", type=float, default=30)
    args = parser.parse_args()
    if not (0 <= args.slow <= 2000 and 0 <= args.forged <= 100000 and 1 <= args.hold <= 300):
        parser.error("--slow must be 0…2000, --forged 0…100000, --hold 1…300")
    return args


# ---- the rendered configuration: ports and body limits --------------------------------------------------------

def servers(text):
    """(port, [(location, limit in bytes)]) for every server block: each location with a limit of its own or of its
    server."""
    found = []
    for block in re.split(r"\n\s*server\s*\{", text)[1:]:
        port = re.search(r"listen\s+[\d.]+:(\d+)", block)
        if not port:
            continue
        limits = []
        # The server's own limit (a directive at the depth of `listen`) holds for its locations without one.
        server_limit = size_of(re.search(r"^    client_max_body_size\s+(\d+)([km]?);", block, re.M))
        # A location's block ends at the closing brace indented as its `location` line (it may hold an `if { }`).
        for match in re.finditer(r"^([ \t]*)location\s+(.*?)\s*\{[ \t]*$(.*?)^\1\}", block, re.M | re.S):
            limit = size_of(re.search(r"client_max_body_size\s+(\d+)([km]?);", match.group(3))) or server_limit
            if limit:
                limits.append((match.group(2), limit))
        found.append((int(port.group(1)), limits))
    return found


def size_of(match):
    """The bytes of a `client_max_body_size` match (None without one)."""
    if not match:
        return None
    return int(match.group(1)) * {"": 1, "k": 1024, "m": 1024 * 1024}[match.group(2)]


def sample_path(location):
    """A path the location matches: its exact or prefix path, or for a regular expression the first alternative of
    every group, optional parts left out."""
    location = location.strip()
    if location.startswith("= "):
        return location[2:].strip()
    if not location.startswith("~"):
        path = location
        return path + ("x" if path.endswith("/") else "/x")
    pattern = location.lstrip("~*").strip().strip('"')
    sample = pattern
    for _ in range(20):
        if "(" not in sample:
            break
        sample = re.sub(r"\([^()]*\)\?", "", sample)
        sample = re.sub(r"\[[^\]]*\]\{0,\d+\}", "", sample)
        sample = re.sub(r"\(([^()|]*)(\|[^()]*)?\)(?!\?)", r"\1", sample)
    sample = re.sub(r"\[[^\]]*\]\{0,\d+\}", "", sample).strip("^$")
    if not re.fullmatch(pattern.strip("^$"), sample):
        raise SystemExit(f"no sample path for location {location}")
    return sample


# ---- HTTP/1.1 over TLS, minimal ------------------------------------------------------------------------------

def contexts(args):
    plain = ssl.create_default_context(cafile=args.ca)
    lab = ssl.create_default_context(cafile=args.ca)
    lab.load_cert_chain(args.lab_cert, args.lab_key)
    return plain, lab


async def read_response(reader):
    """(status, body) of one response; reads a Content-Length or chunked body."""
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    headers = {}
    for line in lines[1:]:
        if ":" in line:
            name, value = line.split(":", 1)
            headers[name.strip().lower()] = value.strip()
    body = b""
    if "content-length" in headers:
        body = await reader.readexactly(int(headers["content-length"]))
    elif headers.get("transfer-encoding", "").lower() == "chunked":
        while True:
            size = int((await reader.readuntil(b"\r\n")).strip().split(b";")[0], 16)
            chunk = await reader.readexactly(size + 2)
            if size == 0:
                break
            body += chunk[:-2]
    return status, headers, body


def request_bytes(port, method, path, headers, body=b""):
    lines = [f"{method} {path} HTTP/1.1", f"Host: 127.0.0.1:{port}"]
    lines += [f"{name}: {value}" for name, value in headers]
    if body or method == "POST":
        lines.append(f"Content-Length: {len(body)}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body


# ---- slow clients ----------------------------------------------------------------------------------------------

async def slow_client(port, context, kind, hold, closed):
    started = time.monotonic()
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", port, ssl=context)
    except OSError:
        closed.append((kind, "refused", 0.0))
        return
    if kind == "header":
        writer.write(b"POST /version/v1/registrationToken HTTP/1.1\r\nHost: 127.0.0.1\r\n")
    else:
        writer.write(
            b"POST /version/v1/diagnosis-keys HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            b"Content-Type: application/x-protobuf\r\ncwa-fake: 1\r\ncwa-authorization: x\r\n"
            b"Content-Length: 50000\r\n\r\n"
        )
    outcome = "held"
    try:
        while time.monotonic() - started < hold:
            try:
                data = await asyncio.wait_for(reader.read(1024), timeout=1)
                outcome = "closed"  # an answer (408) or the end of the stream: the gateway gave up on it
                break
            except asyncio.TimeoutError:
                pass
            writer.write(b"X-Slow: 1\r\n" if kind == "header" else b"a")
            await writer.drain()
    except (OSError, asyncio.IncompleteReadError, ssl.SSLError):
        outcome = "closed"
    closed.append((kind, outcome, time.monotonic() - started))
    writer.close()
    try:
        await writer.wait_closed()
    except (OSError, ssl.SSLError):
        pass


# ---- forged headers --------------------------------------------------------------------------------------------

def escaped_certificate(path):
    with open(path) as handle:
        return urllib.parse.quote(handle.read(), safe="")


async def forged_worker(port, context, jobs, results, ids, addresses, forged_headers):
    reader = writer = None
    while jobs:
        name, method, path, extra, body, allowed = jobs.pop()
        number = secrets.token_hex(8)
        address = f"198.51.100.{secrets.randbelow(254) + 1}"
        request_id = f"forged-{number}"
        ids.append(request_id)
        relay = f"203.0.113.{int(number[:2], 16) % 254 + 1}"
        addresses.update((address, relay))
        headers = [
            ("X-Forwarded-For", f"{address}, {relay}"),
            ("X-Real-IP", address),
            ("Forwarded", f"for={address};proto=https"),
            ("X-Request-ID", request_id),
        ] + forged_headers + extra
        for attempt in range(2):
            try:
                if writer is None:
                    reader, writer = await asyncio.open_connection("127.0.0.1", port, ssl=context)
                writer.write(request_bytes(port, method, path, headers, body))
                await writer.drain()
                status, response_headers, _ = await asyncio.wait_for(read_response(reader), timeout=30)
                if response_headers.get("connection", "").lower() == "close":
                    writer.close()
                    writer = None
                break
            except (OSError, asyncio.IncompleteReadError, asyncio.TimeoutError, ssl.SSLError):
                if writer is not None:
                    writer.close()
                writer = None
                status = 0
        results[name].append((status, status in allowed))
    if writer is not None:
        writer.close()


def forged_jobs(count, ports):
    app, lab, portal = ports
    guid = lambda: secrets.token_hex(32)  # noqa: E731
    kinds = [
        # name, share, port, method, path, extra headers, body, allowed answers
        ("dummy registrations (app)", 4, app, "POST", "/version/v1/registrationToken",
         [("Content-Type", "application/json"), ("cwa-fake", "1")],
         lambda: json.dumps({"key": guid(), "keyType": "GUID"}).encode(), {201, 429}),
        ("CDN files (app)", 2, app, "GET", "/version/v1/diagnosis-keys/country", [], lambda: b"", {200, 404, 429}),
        ("lab uploads without a client certificate (lab)", 2, lab, "POST", "/api/v1/lab/results",
         [("Content-Type", "application/json")],
         lambda: json.dumps({"testResults": [{"id": guid(), "result": 6}]}).encode(), {400}),
        ("NHS lab uploads without an API key (lab)", 1, lab, "POST", "/upload/virology-test/v2/npex-result",
         [("Content-Type", "application/json")], lambda: b"{}", {401, 403, 422}),
        ("portal login pages (portal)", 1, portal, "GET", "/login", [], lambda: b"", {200, 429}),
    ]
    total_share = sum(kind[1] for kind in kinds)
    jobs = collections.defaultdict(list)
    for name, share, port, method, path, extra, body, allowed in kinds:
        for _ in range(count * share // total_share):
            jobs[port].append((name, method, path, extra, body(), allowed))
    return jobs, [kind[0] for kind in kinds]


# ---- oversize bodies -------------------------------------------------------------------------------------------

async def oversize(port, context, path, limit):
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", port, ssl=context)
        writer.write(request_bytes(port, "POST", path, [("Content-Type", "application/octet-stream")], b"x" * (limit + 1)))
        try:
            await writer.drain()
        except (OSError, ssl.SSLError):
            pass  # the gateway may answer and close before the whole body is sent
        status, _, _ = await asyncio.wait_for(read_response(reader), timeout=30)
        writer.close()
        return status
    except (OSError, asyncio.IncompleteReadError, asyncio.TimeoutError, ssl.SSLError):
        return 0


# ---- the run ---------------------------------------------------------------------------------------------------

def summary(statuses):
    counted = collections.Counter(statuses)
    return " ".join(f"{status if status else 'none'}×{counted[status]}" for status in sorted(counted))


async def main():
    args = parse_args()
    plain, lab_context = contexts(args)
    configured = []
    for path in args.conf:
        with open(path) as handle:
            configured += servers(handle.read())
    if len(configured) < 3:
        raise SystemExit("the configuration has fewer than three servers (app, lab, portal)")
    app, lab, portal = (port for port, _ in configured[:3])
    with open(args.secret_file) as handle:
        secret = handle.read().strip()
    forged_headers = [("X-SSL-Client-Cert", escaped_certificate(args.lab_cert)), ("X-Gateway-Secret", secret)]

    closed = []
    slow = [
        asyncio.create_task(slow_client(app, plain, "header" if index % 2 == 0 else "body", args.hold, closed))
        for index in range(args.slow)
    ]
    await asyncio.sleep(1)
    open(os.path.join(args.out, "started"), "w").close()

    results = collections.defaultdict(list)
    ids, addresses = [], set()
    jobs, names = forged_jobs(args.forged, (app, lab, portal))
    workers = [
        forged_worker(port, plain, queue, results, ids, addresses, forged_headers)
        for port, queue in jobs.items()
        for _ in range(48)
    ]
    checks = []
    for port, limits in configured:
        context = lab_context if port == lab else plain
        for location, limit in limits:
            checks.append((port, location, limit, oversize(port, context, sample_path(location), limit)))
    forged_started = time.monotonic()
    await asyncio.gather(*workers)
    forged_seconds = time.monotonic() - forged_started
    oversized = await asyncio.gather(*(check[3] for check in checks))
    await asyncio.gather(*slow)

    with open(os.path.join(args.out, "report"), "w") as report:
        for name in names:
            answers = results[name]
            wrong = sum(1 for _, allowed in answers if not allowed)
            report.write(f"forged {name}: {summary([status for status, _ in answers])}, unexpected: {wrong}\n")
        report.write(f"forged total: {sum(len(answers) for answers in results.values())} in {forged_seconds:.1f} s\n")
        wrong = [f"{port} {location} ({limit} bytes)={status}"
                 for (port, location, limit, _), status in zip(checks, oversized) if status != 413]
        report.write(f"oversize: {summary(oversized)}, routes: {len(checks)}, not 413: {'; '.join(wrong) or 0}\n")
        for kind in ("header", "body"):
            outcomes = [(outcome, seconds) for which, outcome, seconds in closed if which == kind]
            shut = [seconds for outcome, seconds in outcomes if outcome == "closed"]
            held = sum(1 for outcome, _ in outcomes if outcome == "held")
            refused = sum(1 for outcome, _ in outcomes if outcome == "refused")
            after = f", after {min(shut):.0f}–{max(shut):.0f} s" if shut else ""
            report.write(f"slow {kind}: {len(outcomes)} opened, {len(shut)} closed by the gateway{after}, "
                         f"{held} still open after {args.hold:.0f} s, {refused} refused\n")
    for name, values in (("forged-ids", ids), ("forged-addresses", sorted(addresses))):
        with open(os.path.join(args.out, name), "w") as handle:
            handle.write("\n".join(values) + "\n")


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        sys.exit(130)
