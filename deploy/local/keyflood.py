#!/usr/bin/env python3
"""A flood of random NHS API keys from one client while the app's real key keeps asking.

    keyflood.py --url https://127.0.0.1:8443 --ca .data/pki/ca.pem --key "$CWA_NHS_MOBILE_KEY" [--seconds 60]

THREADS threads send POSTs with random keys (random names and random secrets of the app key's name) to the NHS
app routes; one thread sends the real key to each route every 100 ms with a fixed body. Before the flood the real
key's answer to each route is recorded; during it every real-key answer must be that one. Prints one line per
route and a verdict; exits 1 when a real-key answer changed or the flood got anything but 403 or 429.
"""
import argparse
import base64
import collections
import http.client
import os
import ssl
import sys
import threading
import time
import urllib.parse

ROUTES = [
    ("/virology-test/v2/results", b'{"testResultPollingToken":"00000000-0000-0000-0000-000000000000"}'),
    ("/submission/mobile-analytics", b"{}"),
]


def connection(url, context):
    parsed = urllib.parse.urlsplit(url)
    return http.client.HTTPSConnection(parsed.hostname, parsed.port or 443, context=context, timeout=30)


def post(conn, path, body, key):
    conn.request("POST", path, body=body, headers={"Authorization": "Bearer " + key,
                                                   "Content-Type": "application/json"})
    response = conn.getresponse()
    response.read()
    return response.status


def random_key(real_name):
    name = real_name if os.urandom(1)[0] % 2 else "flood-" + os.urandom(6).hex()
    secret = base64.urlsafe_b64encode(os.urandom(32)).decode().rstrip("=")
    return base64.b64encode(f"{name}:{secret}".encode()).decode()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", required=True)
    parser.add_argument("--ca", required=True)
    parser.add_argument("--key", required=True, help="the value after 'Bearer ' of the app's key")
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--threads", type=int, default=16)
    options = parser.parse_args()
    context = ssl.create_default_context(cafile=options.ca)
    real_name = base64.b64decode(options.key).decode().split(":", 1)[0]

    conn = connection(options.url, context)
    baseline = {path: post(conn, path, body, options.key) for path, body in ROUTES}
    conn.close()

    stop = time.monotonic() + options.seconds
    lock = threading.Lock()
    flood = collections.Counter()
    real = {path: collections.Counter() for path, _ in ROUTES}

    def flooder(index):
        conn = connection(options.url, context)
        count = 0
        while time.monotonic() < stop:
            path, body = ROUTES[count % len(ROUTES)]
            count += 1
            try:
                status = post(conn, path, body, random_key(real_name))
            except (OSError, http.client.HTTPException):
                conn.close()
                conn = connection(options.url, context)
                status = "error"
            with lock:
                flood[status] += 1

    def prober():
        conn = connection(options.url, context)
        while time.monotonic() < stop:
            for path, body in ROUTES:
                try:
                    status = post(conn, path, body, options.key)
                except (OSError, http.client.HTTPException):
                    conn.close()
                    conn = connection(options.url, context)
                    status = "error"
                with lock:
                    real[path][status] += 1
            time.sleep(0.1)

    started = time.monotonic()
    threads = [threading.Thread(target=flooder, args=(i,)) for i in range(options.threads)]
    threads.append(threading.Thread(target=prober))
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    elapsed = time.monotonic() - started

    def render(counter):
        return " ".join(f"{status}×{count}" for status, count in sorted(counter.items(), key=str))

    total = sum(flood.values())
    print(f"flood: {total} requests with random keys in {elapsed:.0f} s ({total / elapsed:.0f}/s, "
          f"{options.threads} threads): {render(flood)}")
    changed = 0
    for path, _ in ROUTES:
        other = sum(count for status, count in real[path].items() if status != baseline[path])
        changed += other
        print(f"real key {path}: before {baseline[path]}, during {render(real[path])}, changed: {other}")
    unexpected = sum(count for status, count in flood.items() if status not in (403, 429))
    print(f"verdict: real-key answers changed {changed}, flood answers other than 403/429 {unexpected}")
    return 0 if changed == 0 and unexpected == 0 and all(real[path] for path, _ in ROUTES) else 1


if __name__ == "__main__":
    sys.exit(main())
