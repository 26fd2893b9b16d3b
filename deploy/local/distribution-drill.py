#!/usr/bin/env python3
"""distribution-service killed mid-run (make drills): the CDN tree stays consistent and the next run repairs it.

For each store (a directory, as the gateway serves it, and an S3 bucket on a moto server), first one uninterrupted
run into a scratch directory is the reference. Then, KILLS times: the store is emptied, a run starts and gets SIGKILL
at a random moment — half of the moments drawn over the first 90 % of the reference run, half when the store holds a
random number of the tree's objects (so that publishing is hit, which takes a small part of a run). After every kill:

  * the tree is consistent as a phone sees it: every index names only objects that exist, every archive is a whole zip
    whose signature verifies with the public key, every index is whole JSON, and nothing temporary is served (the
    directory's `.tmp-…` files are hidden: the gateway answers 404 for any name starting with a dot);
  * the next run completes, leaves nothing temporary behind, and its tree is identical to the uninterrupted run's
    (the same objects; archives compared by their signed content, as signatures differ at every signing). A next run
    that ends without work because the killed run's database session still holds the lock (it is released within a
    second) is started again, for up to LOCK_BOUND (30) s. The uninterrupted run is taken again whenever the hour a
    run publishes up to changes (HOUR_COMPLETE_AFTER past the hour), and a next run during which it changed is followed
    by one more run, whose tree is the one compared.

Prints one line per store and per failure; exits 1 when anything failed. Standard library, plus `cryptography` and
`moto` (both on PyPI; drills.sh installs them into its venv when the system's Python lacks them).
"""

import argparse
import hashlib
import io
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
import xml.etree.ElementTree as ET
import zipfile

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec

KEYS = "version/v1/diagnosis-keys/country"
TWP = ("version/v1/twp/country", "version/v2/twp/country")
PHASES = ("Retention applied", "Keys read and bundled", "Tree planned")
LOCK_HELD = b"Another distribution run holds the lock"
LOCK_BOUND = 30  # seconds a next run is started again while the killed run's session still holds the lock
HOUR_COMPLETE_AFTER = 60  # seconds (--hour-complete-after); the runs get it, so the drill knows when their tree changes


def set_hour_complete_after(seconds):
    global HOUR_COMPLETE_AFTER
    HOUR_COMPLETE_AFTER = seconds


def publication_hour():
    """The hour a run started now publishes up to (exclusive): the service shifts the clock by HOUR_COMPLETE_AFTER."""
    return int((time.time() - HOUR_COMPLETE_AFTER) // 3600)


def fail(message):
    print(f"distribution-drill: {message}", file=sys.stderr)
    sys.exit(2)


# ---- the stores ----


class DirectoryStore:
    """The tree as the gateway serves it from CDN_DIRECTORY."""

    def __init__(self, root):
        self.root = root
        self.name = "directory"

    def environment(self):
        return {"OBJECT_STORE": "directory", "CDN_DIRECTORY": self.root}

    def clear(self):
        shutil.rmtree(self.root, ignore_errors=True)
        os.makedirs(self.root)

    def _walk(self):
        """(served keys → path, hidden names): `<key>/index` is the object `<key>`; dot-names are never served."""
        served, hidden = {}, []
        for folder, folders, files in os.walk(self.root):
            relative = os.path.relpath(folder, self.root)
            parts = [] if relative == "." else relative.split(os.sep)
            if any(part.startswith(".") for part in parts):
                continue
            for name in files:
                if name.startswith("."):
                    hidden.append("/".join(parts + [name]))
                    continue
                key = "/".join(parts) if name == "index" else "/".join(parts + [name])
                served[key] = os.path.join(folder, name)
        return served, hidden

    def count(self):
        return len(self._walk()[0])

    def snapshot(self):
        served, hidden = self._walk()
        objects = {}
        for key, path in served.items():
            with open(path, "rb") as f:
                objects[key] = f.read()
        return objects, hidden


class S3Store:
    """The tree in a bucket of a moto server (path-style requests, unsigned: moto does not check signatures)."""

    def __init__(self, endpoint, bucket):
        self.endpoint, self.bucket = endpoint, bucket
        self.name = "S3 (moto)"

    def environment(self):
        return {
            "OBJECT_STORE": "s3", "S3_ENDPOINT": self.endpoint, "S3_BUCKET": self.bucket, "S3_REGION": "us-east-1",
            "S3_ACCESS_KEY_ID": "drill", "S3_SECRET_ACCESS_KEY": "drill-secret",
            # Phones (through the CDN) read the bucket without credentials, and so does this drill.
            "S3_PUBLIC_READ_ACL": "true",
        }

    def _request(self, method, path, data=None):
        request = urllib.request.Request(f"{self.endpoint}/{self.bucket}{path}", data=data, method=method)
        with urllib.request.urlopen(request, timeout=30) as reply:
            return reply.read()

    def keys(self):
        keys, token = [], None
        namespace = "{http://s3.amazonaws.com/doc/2006-03-01/}"
        while True:
            query = "?list-type=2&max-keys=1000" + (f"&continuation-token={urllib.request.quote(token)}" if token else "")
            tree = ET.fromstring(self._request("GET", "/" + query))
            keys += [element.text for element in tree.iter(f"{namespace}Key")]
            token = tree.findtext(f"{namespace}NextContinuationToken")
            if not token:
                return keys

    def clear(self):
        try:
            for key in self.keys():
                self._request("DELETE", "/" + urllib.request.quote(key))
        except urllib.error.HTTPError as error:
            if error.code != 404:
                raise
            self._request("PUT", "")

    def count(self):
        return len(self.keys())

    def snapshot(self):
        return {key: self._request("GET", "/" + urllib.request.quote(key)) for key in self.keys()}, []


# ---- what a phone would see ----


def fields(data):
    """The (number, wire type, value) of a protobuf message's fields; raises ValueError on malformed bytes."""
    position, out = 0, []

    def varint():
        nonlocal position
        shift = value = 0
        while True:
            if position >= len(data) or shift > 63:
                raise ValueError("bad varint")
            byte = data[position]
            position += 1
            value |= (byte & 0x7F) << shift
            shift += 7
            if byte < 0x80:
                return value

    while position < len(data):
        tag = varint()
        number, wire = tag >> 3, tag & 7
        if wire == 0:
            out.append((number, wire, varint()))
        elif wire == 2:
            length = varint()
            if position + length > len(data):
                raise ValueError("truncated field")
            out.append((number, wire, data[position:position + length]))
            position += length
        elif wire == 1:
            position += 8
        elif wire == 5:
            position += 4
        else:
            raise ValueError(f"wire type {wire}")
    return out


def archive_problem(body, public_key):
    """None when `body` is a whole archive whose export.bin a signature in export.sig verifies; else what is wrong."""
    try:
        with zipfile.ZipFile(io.BytesIO(body)) as archive:
            export, signatures = archive.read("export.bin"), archive.read("export.sig")
        # TEKSignatureList { repeated TEKSignature signatures = 1 }, TEKSignature { bytes signature = 4 }.
        for number, _, signature in fields(signatures):
            if number != 1:
                continue
            for inner, _, value in fields(signature):
                if inner == 4:
                    try:
                        public_key.verify(value, export, ec.ECDSA(hashes.SHA256()))
                        return None
                    except InvalidSignature:
                        pass
        return "no signature verifies"
    except (zipfile.BadZipFile, KeyError, ValueError) as error:
        return f"not a whole archive ({error})"


def is_archive(key):
    last = key.rsplit("/", 1)[-1]
    return last[:1].isdigit() or last.startswith("app_config_")


def named_by(key, body):
    """The keys an index names (those a phone fetches next), or raises ValueError when it is not whole JSON."""
    value = json.loads(body)
    if key.startswith(KEYS + "/") or key == KEYS:
        if key == KEYS:
            return [f"{key}/{country}/date" for country in value]
        return [f"{key}/{entry}" for entry in value]  # …/date lists days, …/hour lists hours
    for prefix in TWP:
        if key == prefix:
            return [f"{key}/{country}/hour" for country in value]
        if key.startswith(prefix + "/"):
            return [f"{key}/{value[end]}" for end in ("oldest", "latest") if value.get(end) is not None]
    return []  # the root indexes name versions, which are folders


def problems(objects, public_key):
    """What is wrong with the tree `objects` (key → body) as a phone would find it."""
    found = []
    for key, body in sorted(objects.items()):
        if is_archive(key):
            problem = archive_problem(body, public_key)
            if problem:
                found.append(f"{key}: {problem}")
            continue
        try:
            for named in named_by(key, body):
                if named not in objects:
                    found.append(f"{key} names {named}, which is not there")
        except (ValueError, TypeError, AttributeError) as error:
            found.append(f"{key}: not whole JSON ({error})")
    return found


def fingerprint(objects):
    """key → digest of what the object means: an archive's signed export.bin (signatures differ at every signing),
    any other object's bytes."""
    digests = {}
    for key, body in objects.items():
        if is_archive(key):
            try:
                with zipfile.ZipFile(io.BytesIO(body)) as archive:
                    body = archive.read("export.bin")
            except (zipfile.BadZipFile, KeyError):
                body = b"not a whole archive"
        digests[key] = hashlib.sha256(body).hexdigest()
    return digests


# ---- runs ----


class Runner:
    def __init__(self, arguments):
        self.service = arguments.service
        self.work = arguments.work
        self.base = dict(os.environ, LOG_LEVEL="info", SIGNING_KEY_FILES=arguments.signing_key,
                         DATABASE_URL=arguments.database_url, PUBLISH_RETRY_BACKOFF="10ms",
                         HOUR_COMPLETE_AFTER=f"{HOUR_COMPLETE_AFTER}s")
        self.runs = 0

    def start(self, store):
        self.runs += 1
        log = open(os.path.join(self.work, f"run-{self.runs}.log"), "wb")
        process = subprocess.Popen([self.service, "run"], env=dict(self.base, **store.environment()),
                                   stdout=log, stderr=subprocess.STDOUT)
        process.log_path = log.name
        log.close()
        return process

    def complete(self, store, timeout=180):
        """One run to its end: (exit status, seconds)."""
        started = time.monotonic()
        process = self.start(store)
        try:
            status = process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
            status = "timeout"
        return status, time.monotonic() - started, process.log_path


    def after_kill(self, store):
        """The next run after a kill: (exit status, seconds, log, runs that found the lock held, still held).

        The killed run's database session keeps the distribution lock until the server notices that the connection
        is gone, within a second (AdvisoryLock); a run started before then ends at once without work, as it should.
        Such a run is started again, for up to LOCK_BOUND seconds."""
        started, skipped = time.monotonic(), 0
        while True:
            status, seconds, log_path = self.complete(store)
            with open(log_path, "rb") as f:
                held = status == 0 and LOCK_HELD in f.read()
            if not held or time.monotonic() - started > LOCK_BOUND:
                return status, seconds, log_path, skipped, held
            skipped += 1
            time.sleep(0.2)


def phase(log_path, store_changed):
    if store_changed:
        return "publishing"
    with open(log_path, "rb") as f:
        text = f.read().decode("utf-8", "replace")
    reached = [name for name in PHASES if name in text]
    if not reached:
        return "starting"
    return {"Retention applied": "reading keys", "Keys read and bundled": "planning",
            "Tree planned": "signing"}[reached[-1]]


def drill(store, runner, reference, kills, rng, report):
    """KILLS killed runs into `store`, each checked and repaired by a next run. Returns the failures."""
    failures = []
    phases, hit_counts, leftovers, left_after, recoveries = {}, [], [], [], []
    completed_first = identical = repaired = killed = round_number = lock_waits = turned = 0
    # A run that ends before its moment (runs vary in length) does not count: its round is drawn again, up to twice
    # as many rounds as kills in all.
    while killed < kills and round_number < 2 * kills:
        round_number += 1
        store.clear()
        process = runner.start(store)
        started = time.monotonic()
        by_count = killed % 2 == 1
        target_time = rng.uniform(0.05, 0.9 * reference.seconds)
        target_count = rng.randint(1, max(1, reference.objects - 1))
        while process.poll() is None:
            elapsed = time.monotonic() - started
            if by_count:
                if store.count() >= target_count or elapsed > 10 * reference.seconds + 30:
                    break
                time.sleep(0.01)  # a walk of the tree or a listing of the bucket takes a few milliseconds itself
            else:
                if elapsed >= target_time:
                    break
                time.sleep(min(0.005, target_time - elapsed))
        if process.poll() is not None:
            completed_first += 1  # the run ended before its moment came: no kill this round
            status = process.returncode
            if status != 0:
                failures.append(f"round {round_number}: the run ended by itself with status {status}")
            continue
        os.kill(process.pid, signal.SIGKILL)
        process.wait()
        killed += 1
        objects, hidden = store.snapshot()
        name = phase(process.log_path, bool(objects))
        phases[name] = phases.get(name, 0) + 1
        if objects:
            hit_counts.append(len(objects))
        leftovers.append(len(hidden))
        for problem in problems(objects, reference.public_key):
            failures.append(f"after the kill in round {round_number} ({name}): {problem}")

        hour = publication_hour()  # the next run publishes up to this hour or a later one
        status, seconds, log_path, skipped, held = runner.after_kill(store)
        lock_waits += skipped
        if held:
            failures.append(f"round {round_number}: the killed run's lock was still held {LOCK_BOUND} s after the kill "
                            f"({skipped + 1} next runs ended without work)")
            continue
        if status != 0:
            failures.append(f"round {round_number}: the next run failed ({status}; {log_path})")
            continue
        repaired += 1
        recoveries.append(seconds)
        objects, hidden = store.snapshot()
        for problem in problems(objects, reference.public_key):
            failures.append(f"after the next run in round {round_number}: {problem}")
        left_after.append(len(hidden))
        if hidden:
            failures.append(f"round {round_number}: the next run left {len(hidden)} temporary files ({hidden[0]})")
        expected = reference.current()
        for _ in range(2):
            if expected.hour == hour:
                break
            # The hour turned during the next run: its tree may be either hour's. One more run has the new hour's.
            hour = publication_hour()
            status, _, log_path = runner.complete(store)
            if status != 0:
                break
            objects, _ = store.snapshot()
            expected = reference.current()
            turned += 1
        if status != 0:
            failures.append(f"round {round_number}: the run after the hour turned failed ({status}; {log_path})")
            continue
        expected, actual = expected.digests, fingerprint(objects)
        if actual == expected:
            identical += 1
        else:
            differing = sorted(key for key in set(expected) | set(actual) if expected.get(key) != actual.get(key))
            missing = sum(1 for key in differing if key not in actual)
            extra = sum(1 for key in differing if key not in expected)
            failures.append(f"round {round_number}: the tree differs from the uninterrupted run's in "
                            f"{len(differing)} objects ({missing} missing, {extra} extra, "
                            f"{len(differing) - missing - extra} changed; {len(actual)} read: "
                            f"{', '.join(differing[:3])})")
    if killed < kills:
        failures.append(f"only {killed} of {kills} runs could be killed before they ended")
    where = ", ".join(f"{name} {count}" for name, count in sorted(phases.items()))
    hits = f": {min(hit_counts)}–{max(hit_counts)} of {reference.objects} objects written" if hit_counts else ""
    report.append(
        f"{store.name}: {killed} kills ({where}{hits}), {completed_first} runs ended before their moment; "
        f"consistent after every kill: {'yes' if not any('after the kill' in f for f in failures) else 'NO'}; "
        f"next run completed {repaired} of {killed}"
        f"{f' ({lock_waits} started again: the killed run still held the lock)' if lock_waits else ''}"
        f"{f' ({turned} run again: the hour turned during the next run)' if turned else ''}, "
        f"identical to the uninterrupted run {identical} of {killed}; "
        f"temporary files after a kill up to {max(leftovers, default=0)}, after the next run up to {max(left_after, default=0)}"
        f"{'' if not recoveries else f'; next run {min(recoveries):.1f}–{max(recoveries):.1f} s'}"
    )
    return [f"{store.name}: {failure}" for failure in failures]


class Reference:
    """The uninterrupted run's tree, taken again when the publication hour changed (a new hour changes the tree)."""

    def __init__(self, runner, folder, public_key):
        self.runner, self.store, self.public_key = runner, DirectoryStore(folder), public_key
        self.hour = None

    def current(self):
        hour = publication_hour()
        if hour != self.hour:
            self.store.clear()
            status, seconds, log_path = self.runner.complete(self.store)
            if status != 0:
                fail(f"the uninterrupted run failed ({status}; {log_path})")
            if publication_hour() != hour:
                return self.current()
            objects, hidden = self.store.snapshot()
            found = problems(objects, self.public_key)
            if found or hidden:
                fail(f"the uninterrupted run's tree is not consistent: {(found + hidden)[:3]}")
            self.hour, self.seconds, self.objects = hour, seconds, len(objects)
            self.digests = fingerprint(objects)
        return self


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_moto(work):
    port = free_port()
    log = open(os.path.join(work, "moto.log"), "wb")
    process = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
                               stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    endpoint = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            urllib.request.urlopen(f"{endpoint}/moto-api/", timeout=2).read()
            return process, endpoint
        except OSError:
            if process.poll() is not None:
                fail(f"moto did not start (see {log.name})")
            time.sleep(0.2)
    fail("moto did not answer within 60 s")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--service", required=True, help="the distribution-service binary")
    parser.add_argument("--database-url", required=True, help="a database holding the keys")
    parser.add_argument("--signing-key", required=True, help="the signing key's PEM file")
    parser.add_argument("--work", required=True, help="a folder for the trees and the runs' logs")
    parser.add_argument("--kills", type=int, default=10, help="killed runs per store")
    parser.add_argument("--seed", type=int, default=int(time.time()))
    parser.add_argument("--hour-complete-after", type=int, default=HOUR_COMPLETE_AFTER,
                        help="seconds after its end an hour is published (to make the hour turn during a drill)")
    arguments = parser.parse_args()
    set_hour_complete_after(arguments.hour_complete_after)
    if not 1 <= arguments.kills <= 1000:
        fail("--kills must be 1…1000")
    with open(arguments.signing_key, "rb") as f:
        public_key = serialization.load_pem_private_key(f.read(), password=None).public_key()
    rng = random.Random(arguments.seed)
    runner = Runner(arguments)
    reference = Reference(runner, os.path.join(arguments.work, "reference"), public_key).current()
    print(f"uninterrupted run: {reference.objects} objects in {reference.seconds:.1f} s (seed {arguments.seed})")

    moto, endpoint = start_moto(arguments.work)
    failures, report = [], []
    try:
        stores = [DirectoryStore(os.path.join(arguments.work, "cdn")), S3Store(endpoint, "cwa")]
        for store in stores:
            failures += drill(store, runner, reference, arguments.kills, rng, report)
    finally:
        os.killpg(moto.pid, signal.SIGTERM)
        moto.wait()
    for line in report:
        print(line)
    for line in failures:
        print(f"FAIL {line}")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    try:
        main()
    except KeyboardInterrupt:
        sys.exit(130)
