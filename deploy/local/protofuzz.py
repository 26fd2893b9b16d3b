#!/usr/bin/env python3
"""Mutation fuzzing of the protobuf endpoints (drill 1 of make drills, beside deploy/local/fuzz.sh). Needs the
protobuf runtime (make drills runs it in fuzz.sh's venv, which has it) and protoc.

  eval "$(deploy/local/run.sh env)"
  EN_DATA_DIR=<the fleet's data> .data/fuzz-venv/bin/python deploy/local/protofuzz.py
      [--count N] [--seconds S] [--tans K] [--seed SEED] [--concurrency C] [--out DIR] [--only TARGET …]

Valid payloads are built with the messages protoc --python_out makes of protos/ (SubmissionPayload with
TemporaryExposureKey, CheckIn and CheckInProtectedReport; the data-donation requests with PPACAndroid or PPACIOS and
their payloads; compiled at every start into a temporary folder, with --protoc, PROTOC, protoc), then mutated on the
wire, where no message type can go: truncation, bit flips, bytes inserted, deleted and replaced, a field duplicated
(once to 1000 times), huge repeated fields (thousands of keys, check-ins and encrypted check-ins; thousands of
exposure windows), wrong wire types, deep nesting of length-delimited fields (up to 10,000 levels), overlong,
oversized and unterminated varints, lengths past the end, field numbers 0, 2^29-1 and reserved ones, groups
(unclosed, stray, 5,000 deep), garbage and empty bodies, bodies of exactly the limit, one byte over it and twice it,
and 2 to 4 of these at once. Each mutant goes to one target:

  submission    POST /version/v1/diagnosis-keys        cwa-fake: 0, cwa-authorization: a random UUID; the first --tans
                                                       (20) unmutated, duplicated-field or huge mutants take real TANs
  self-report   POST /version/v1/diagnosis-keys        cwa-fake: 0, cwa-otp: a random UUID (self-report types)
  on-behalf     POST /version/v1/submission-on-behalf  cwa-fake: 0, cwa-authorization: a random UUID
  android-dat … POST /version/v1/{android,ios}/{dat,otp,els,srs} of data-donation-service (srs with cwa-fake: 0)

submission-service decodes and checks a payload before it asks verification-service about the TAN or
data-donation-service about the OTP (SubmissionEngine.submit), and data-donation-service decodes its body before the
attestation, so random credentials reach the decoder and every rule; the real TANs (a lab result, a registration
and a TAN each, straight at the services' own ports) let mutants that still decode reach storage.

Every answer must be one the endpoint's document lists, but no 5xx (submission 200, 400, 403, 413, 415, 429; data
donation 200, 400, 401, 403, 413, 415, 429); a 5xx, a dropped connection or no answer within --timeout (15 s) is a
failure. Two exceptions are counted apart and allowed: a body over the limit (submission-service 102,400 bytes,
data-donation-service 1 MiB) whose connection the service closed before the upload ended (it answers 413 from the
declared length and closes); and the 503 DEVICE_CHECK_UNAVAILABLE of iOS requests that pass their checks up to
Apple's DeviceCheck, which a loopback fleet does not have (run.sh; --strict-ios counts them as failures).

Addresses come from the environment `deploy/local/run.sh env` prints (EN_SUBMISSION_URL, EN_DATA_DONATION_URL, and
for the real TANs EN_VERIFICATION_URL, EN_TEST_RESULT_URL and CWA_LAB_CERT), the gateway secret from
EN_DATA_DIR/secrets/gateway. The mutants are drawn from --seed (FUZZ_SEED, 20); --count (PROTOFUZZ_COUNT, 2000)
bounds their number and --seconds (PROTOFUZZ_SECONDS, 240) the time spent sending. Prints the answers per target and
per mutation, then the totals and both services' /health/ready; writes every failing body to --out
(<EN_DATA_DIR>/protofuzz) with a curl line that sends it again. Exits 1 on a failure or when a service is not ready
afterwards, 2 on bad usage.
"""

import argparse
import base64
import collections
import concurrent.futures
import hashlib
import importlib
import http.client
import json
import os
import random
import shutil
import socket
import subprocess
import tempfile
import types
import sys
import threading
import time
import urllib.parse
import uuid

# ---- protobuf wire format ---------------------------------------------------------------------------------------

VARINT, FIXED64, LENGTH, START_GROUP, END_GROUP, FIXED32 = 0, 1, 2, 3, 4, 5


def varint(value):
    """Base-128 varint of a non-negative integer (negative ones as their 64-bit two's complement, as protobuf does)."""
    value &= (1 << 64) - 1
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def tag(field, wire):
    return varint((field << 3) | wire)


def random_uuid(rng):
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))


def tally(counter):
    """`status×count …`, in the order of the statuses' names."""
    return " ".join(f"{key}×{value}" for key, value in sorted(counter.items(), key=lambda item: str(item[0])))


def f_varint(field, value):
    return tag(field, VARINT) + varint(value)


def f_bytes(field, data):
    return tag(field, LENGTH) + varint(len(data)) + data


def fields(data):
    """The top-level fields of a message as (field, wire, raw bytes of the whole field); None when it does not
    decode."""
    out, index = [], 0
    try:
        while index < len(data):
            start = index
            key, index = read_varint(data, index)
            field, wire = key >> 3, key & 7
            if wire == VARINT:
                _, index = read_varint(data, index)
            elif wire == FIXED64:
                index += 8
            elif wire == LENGTH:
                length, index = read_varint(data, index)
                index += length
            elif wire == FIXED32:
                index += 4
            else:
                return None
            if index > len(data) or field == 0:
                return None
            out.append((field, wire, data[start:index]))
    except IndexError:
        return None
    return out


def read_varint(data, index):
    value = shift = 0
    while True:
        byte = data[index]
        index += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return value, index
        if shift > 70:
            raise IndexError("varint too long")


# ---- valid payloads ---------------------------------------------------------------------------------------------

# The messages of protos/, as protoc --python_out makes them (load_messages fills it before any payload is built).
PB = types.SimpleNamespace()
PPDD = "app/coronawarn/datadonation/common/protocols/internal/ppdd/"
MESSAGES = {
    "app/coronawarn/server/common/protocols/external/exposurenotification/temporary_exposure_key_export.proto":
        ["TemporaryExposureKey"],
    "app/coronawarn/server/common/protocols/external/exposurenotification/diagnosis_key_batch.proto": ["ReportType"],
    "app/coronawarn/server/common/protocols/internal/submission_payload.proto": ["SubmissionPayload"],
    "app/coronawarn/server/common/protocols/internal/pt/check_in.proto": ["CheckIn", "CheckInProtectedReport"],
    PPDD + "ppac_android.proto": ["PPACAndroid"],
    PPDD + "ppac_ios.proto": ["PPACIOS"],
    PPDD + "ppa_data.proto": ["PPADataAndroid", "PPADataIOS"],
    PPDD + "ppa_data_request_android.proto": ["PPADataRequestAndroid"],
    PPDD + "ppa_data_request_ios.proto": ["PPADataRequestIOS"],
    PPDD + "edus_otp_request_android.proto": ["EDUSOneTimePasswordRequestAndroid"],
    PPDD + "edus_otp_request_ios.proto": ["EDUSOneTimePasswordRequestIOS"],
    PPDD + "els_otp_request_android.proto": ["ELSOneTimePasswordRequestAndroid"],
    PPDD + "els_otp_request_ios.proto": ["ELSOneTimePasswordRequestIOS"],
    PPDD + "srs_otp_request_android.proto": ["SRSOneTimePasswordRequestAndroid"],
    PPDD + "srs_otp_request_ios.proto": ["SRSOneTimePasswordRequestIOS"],
}


def load_messages(protos, protoc, out):
    """Compiles every file of `protos` with `protoc --python_out=out` and imports the messages (and enums) of MESSAGES
    into PB."""
    files = sorted(os.path.relpath(os.path.join(folder, name), protos)
                   for folder, _, names in os.walk(protos) for name in names if name.endswith(".proto"))
    subprocess.run([protoc, f"--python_out={out}", f"--proto_path={protos}", *files], check=True)
    sys.path.insert(0, out)
    for path, names in MESSAGES.items():
        module = importlib.import_module(path.removesuffix(".proto").replace("/", ".") + "_pb2")
        for name in names:
            setattr(PB, name, getattr(module, name))


# The request message of each data-donation operation, by platform and scenario.
DONATION_REQUESTS = {
    ("android", "dat"): "PPADataRequestAndroid", ("ios", "dat"): "PPADataRequestIOS",
    ("android", "otp"): "EDUSOneTimePasswordRequestAndroid", ("ios", "otp"): "EDUSOneTimePasswordRequestIOS",
    ("android", "els"): "ELSOneTimePasswordRequestAndroid", ("ios", "els"): "ELSOneTimePasswordRequestIOS",
    ("android", "srs"): "SRSOneTimePasswordRequestAndroid", ("ios", "srs"): "SRSOneTimePasswordRequestIOS",
}


def today_interval():
    """The 10-minute interval number of today's midnight, UTC."""
    return int(time.time()) // 86400 * 144


def exposure_key(rng, days_ago, trl=None, dsos=None):
    key = PB.TemporaryExposureKey(key_data=rng.randbytes(16), rolling_period=144,
                                  rolling_start_interval_number=today_interval() - 144 * days_ago,
                                  report_type=PB.ReportType.Value("CONFIRMED_TEST"))
    if trl is not None:
        key.transmission_risk_level = trl
    if dsos is not None:
        key.days_since_onset_of_symptoms = dsos
    return key


def check_in(rng, location):
    start = today_interval() * 10 - rng.randrange(1, 5000)
    return PB.CheckIn(locationId=location, startIntervalNumber=start, endIntervalNumber=start + rng.randrange(1, 50),
                      transmissionRiskLevel=rng.randint(1, 8))


def protected_report(rng, location_hash):
    return PB.CheckInProtectedReport(locationIdHash=location_hash, iv=rng.randbytes(16),
                                     encryptedCheckInRecord=rng.randbytes(16), mac=rng.randbytes(32))


def submission_payload(rng, kind="submission", keys=14, check_ins=3, reports=3):
    """A SubmissionPayload: a positive person's keys, countries, check-ins and encrypted check-ins (a self-report's
    submission type with kind self-report), or a host warning's check-ins and encrypted check-ins (on-behalf)."""
    payload = PB.SubmissionPayload()
    if kind == "on-behalf":
        location, location_hash = rng.randbytes(32), rng.randbytes(32)
        payload.checkIns.extend(check_in(rng, location) for _ in range(check_ins))
        payload.checkInProtectedReports.extend(protected_report(rng, location_hash) for _ in range(max(reports, 1)))
        payload.submissionType = PB.SubmissionPayload.SUBMISSION_TYPE_HOST_WARNING
        payload.requestPadding = rng.randbytes(rng.randrange(0, 100))
        return payload.SerializeToString()
    payload.keys.extend(exposure_key(rng, day, trl=rng.randint(1, 8), dsos=rng.randint(-14, 14)) for day in range(keys))
    payload.requestPadding = rng.randbytes(rng.randrange(0, 100))
    payload.visitedCountries.extend(["DE", "FR"])
    payload.origin = "DE"
    payload.consentToFederation = True
    payload.checkIns.extend(check_in(rng, rng.randbytes(32)) for _ in range(check_ins))
    payload.submissionType = rng.randint(3, 9) if kind == "self-report" else rng.choice((0, 1))
    payload.checkInProtectedReports.extend(protected_report(rng, rng.randbytes(32)) for _ in range(reports))
    return payload.SerializeToString()


def ppac_android(rng):
    # A Play Integrity token has five dot-separated parts.
    token = ".".join(urlsafe(rng.randbytes(n)) for n in (32, 40, 12, 200, 16))
    return PB.PPACAndroid(safetyNetJws=token, salt=urlsafe(rng.randbytes(16)))


def ppac_ios(rng, scenario):
    # deviceToken: Base64, 2500-3500 characters for dat, else 1-3500; apiToken: a UUID.
    size = rng.randrange(1900, 2600) if scenario == "dat" else rng.randrange(16, 300)
    return PB.PPACIOS(deviceToken=base64.b64encode(rng.randbytes(size)).decode(), apiToken=random_uuid(rng))


def urlsafe(data):
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def ppa_payload(rng, platform, windows=2):
    """PPADataAndroid / PPADataIOS: a risk, `windows` exposure windows, a test result, a key submission, the client
    and the user."""
    data = PB.PPADataAndroid() if platform == "android" else PB.PPADataIOS()
    day = int(time.time()) // 86400 * 86400
    data.requestPadding = rng.randbytes(rng.randrange(0, 64))
    data.exposureRiskMetadataSet.add(riskLevel=2, riskLevelChangedComparedToPreviousSubmission=True,
                                     mostRecentDateAtRiskLevel=day, ptRiskLevel=1)
    for _ in range(windows):
        window = data.newExposureWindows.add(transmissionRiskLevel=rng.randint(1, 8), normalizedTime=rng.random() * 100)
        window.exposureWindow.date = day
        window.exposureWindow.reportType = 1
        window.exposureWindow.infectiousness = 1
        window.exposureWindow.calibrationConfidence = 1
        for _ in range(3):
            window.exposureWindow.scanInstances.add(typicalAttenuation=rng.randint(30, 80),
                                                    minAttenuation=rng.randint(30, 80), secondsSinceLastScan=180)
    data.testResultMetadataSet.add(testResult=2, hoursSinceTestRegistration=20, riskLevelAtTestRegistration=2)
    data.keySubmissionMetadataSet.add(submitted=True, lastSubmissionFlowScreen=2, hoursSinceTestResult=3,
                                      submittedWithCheckIns=1)
    data.clientMetadata.cwaVersion.major, data.clientMetadata.cwaVersion.minor = 3, 2
    data.clientMetadata.cwaVersion.patch = 1
    data.clientMetadata.appConfigETag = "etag"
    if platform == "android":
        data.clientMetadata.androidApiLevel, data.clientMetadata.enfVersion = 30, 18
    else:
        data.clientMetadata.iosVersion.major = 16
    data.userMetadata.federalState, data.userMetadata.administrativeUnit = 1, 11001001
    data.userMetadata.ageGroup = 2
    return data


def donation_request(rng, platform, scenario, windows=2):
    """The request of one data-donation operation: the attestation and its payload (srs: with padding)."""
    request = getattr(PB, DONATION_REQUESTS[(platform, scenario)])()
    request.authentication.CopyFrom(ppac_android(rng) if platform == "android" else ppac_ios(rng, scenario))
    if scenario == "dat":
        request.payload.CopyFrom(ppa_payload(rng, platform, windows))
    else:
        request.payload.otp = random_uuid(rng)
    if scenario == "srs" and platform == "android":
        request.payload.androidId = rng.randbytes(8)
    if scenario == "srs":
        request.requestPadding = rng.randbytes(rng.randrange(0, 100))
    return request.SerializeToString()


# ---- mutations --------------------------------------------------------------------------------------------------

def nested(depth, core=b"\x08\x01", field=1):
    """`depth` length-delimited fields, each inside the previous one."""
    body = core
    for _ in range(depth):
        body = f_bytes(field, body)
    return body


def m_truncate(rng, data, _):
    return data[:rng.randrange(0, max(len(data), 1))]


def m_bit_flips(rng, data, _):
    data = bytearray(data)
    for _ in range(rng.randint(1, 16)):
        if data:
            data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
    return bytes(data)


def m_bytes(rng, data, _):
    """Random bytes inserted, deleted or replaced."""
    data = bytearray(data)
    for _ in range(rng.randint(1, 8)):
        position = rng.randrange(len(data) + 1)
        action = rng.randrange(3)
        if action == 0:
            data[position:position] = rng.randbytes(rng.randint(1, 8))
        elif action == 1:
            del data[position:position + rng.randint(1, 8)]
        elif data:
            data[min(position, len(data) - 1)] = rng.randrange(256)
    return bytes(data)


def m_duplicate(rng, data, _):
    """One top-level field repeated once or many times (a repeated field grows; a singular one is overwritten; a
    message is merged)."""
    parsed = fields(data)
    if not parsed:
        return data + data
    _, _, raw = rng.choice(parsed)
    return data + raw * rng.choice((1, 2, 10, 1000))


def m_wrong_wire(rng, data, _):
    """A top-level field's wire type changed (length-delimited to varint, varint to length-delimited, fixed32/64,
    start/end group, or the undefined 6 and 7) with its contents as they were."""
    parsed = fields(data)
    if not parsed:
        return data
    index = rng.randrange(len(parsed))
    field, wire, raw = parsed[index]
    key_length = len(tag(field, wire))
    new_wire = rng.choice([w for w in range(8) if w != wire])
    raw = tag(field, new_wire) + raw[key_length:]
    return b"".join(r for _, _, r in parsed[:index]) + raw + b"".join(r for _, _, r in parsed[index + 1:])


def m_deep(rng, data, target):
    """Nested length-delimited fields: inside the target's message fields, or as garbage of its own."""
    depth = rng.choice((10, 64, 100, 101, 500, 2000, 10000))
    field = rng.choice((1, 2, 6, 8) if target.startswith(("submission", "self-report", "on-behalf")) else (1, 2))
    return data + nested(depth, field=field) if rng.random() < 0.5 else nested(depth, core=data[:64], field=field)


def m_varint(rng, data, _):
    """Overlong, oversized and unterminated varints: as values, as lengths and as tags."""
    choice = rng.randrange(6)
    if choice == 0:
        return data + tag(7, VARINT) + b"\xff" * rng.choice((10, 11, 20, 100))
    if choice == 1:
        return data + tag(7, VARINT) + b"\xff" * 9 + b"\x7f"           # 2^64-1 as a 32-bit enum
    if choice == 2:
        return data + tag(2, LENGTH) + varint(rng.choice((2**31, 2**32 + 5, 2**63, 2**64 - 1)))  # length past the end
    if choice == 3:
        return data + b"\x80" * rng.choice((1, 5, 10))                  # a tag that never ends
    if choice == 4:
        return data + tag(1, LENGTH) + b"\x80\x80\x80\x80\x80\x80\x80\x80\x80\x01" + b"x"  # padded overlong length
    return data + tag(3, VARINT) + varint(-1)                              # -1 where an int32 or a string belongs


def m_field_numbers(rng, data, _):
    """Field number 0, the largest one (2^29-1), one past it, and reserved numbers 19000-19999."""
    number = rng.choice((0, 2**29 - 1, 2**29, 19000, 19999, 2**32))
    return data + varint((number << 3) | rng.choice((VARINT, LENGTH))) + b"\x05" + b"abcde"


def m_groups(rng, data, _):
    """Start-group without an end, an end-group alone, and groups nested deep."""
    choice = rng.randrange(3)
    if choice == 0:
        return data + tag(9, START_GROUP) + f_varint(1, 1)
    if choice == 1:
        return data + tag(9, END_GROUP)
    depth = rng.choice((10, 100, 1000, 5000))
    return data + tag(9, START_GROUP) * depth + tag(9, END_GROUP) * depth


def m_garbage(rng, data, _):
    choice = rng.randrange(4)
    if choice == 0:
        return b""
    if choice == 1:
        return rng.randbytes(rng.randint(1, 4096))
    if choice == 2:
        return b"\x00" * rng.randint(1, 4096)
    return json.dumps({"keys": [{"keyData": "AAAA"}]}).encode()


def m_oversize(rng, data, target):
    """A body of exactly the target's limit, one byte over it, and twice it: an unknown field 15 of filler (1 byte of
    tag, 3 of length)."""
    limit = TARGETS[target][3]
    size = rng.choice((limit - len(data) - 4, limit + 1 - len(data) - 4, 2 * limit))
    return data + f_bytes(15, b"p" * max(size, 0))


def m_combined(rng, data, target):
    for mutation in rng.sample(BASIC, rng.randint(2, 4)):
        data = mutation(rng, data, target)
    return data


BASIC = [m_truncate, m_bit_flips, m_bytes, m_duplicate, m_wrong_wire, m_varint, m_field_numbers, m_groups]


def huge(rng, target):
    """A well-formed payload with a huge repeated field (within or past the rules' limits)."""
    # submission-service takes 102400 bytes at most: about 2,900 keys, 1,800 check-ins or 950 encrypted check-ins;
    # the larger shapes test the limit.
    if target in ("submission", "self-report"):
        shape = rng.choice((
            dict(keys=rng.choice((15, 100, 2500, 20000))),
            dict(check_ins=rng.choice((280, 281, 1500, 10000)), reports=0),
            dict(reports=rng.choice((280, 281, 900, 8000)), check_ins=0),
            dict(check_ins=280, reports=280),
        ))
        return submission_payload(rng, target, **shape)
    if target == "on-behalf":
        return submission_payload(rng, target, check_ins=rng.choice((280, 1500)), reports=rng.choice((280, 281, 900)))
    platform, scenario = target.split("-")
    if scenario == "dat":
        return donation_request(rng, platform, scenario, windows=rng.choice((50, 500, 3000)))
    return donation_request(rng, platform, scenario) + f_bytes(1, b"") * rng.choice((100, 10000))


MUTATIONS = {
    "none": lambda rng, data, target: data,
    "truncate": m_truncate, "bit flips": m_bit_flips, "bytes": m_bytes, "duplicate field": m_duplicate,
    "wrong wire type": m_wrong_wire, "deep nesting": m_deep, "varints": m_varint, "field numbers": m_field_numbers,
    "groups": m_groups, "garbage": m_garbage, "oversize": m_oversize, "combined": m_combined,
    "huge repeated": lambda rng, data, target: huge(rng, target),
}

# ---- targets ----------------------------------------------------------------------------------------------------

# The answers each document lists for the endpoint, but its 5xx; and the body limit (HTTP_MAX_BODY_SIZE's defaults:
# submission-service 102400 bytes, data-donation-service 1 MiB), past which the answer is 413 and the connection
# is closed.
SUBMISSION_STATUSES = {200, 400, 403, 413, 415, 429}
DONATION_STATUSES = {200, 400, 401, 403, 413, 415, 429}
SUBMISSION_LIMIT, DONATION_LIMIT = 102_400, 1024 * 1024
TARGETS = {
    "submission": ("submission", "/version/v1/diagnosis-keys", SUBMISSION_STATUSES, SUBMISSION_LIMIT),
    "self-report": ("submission", "/version/v1/diagnosis-keys", SUBMISSION_STATUSES, SUBMISSION_LIMIT),
    "on-behalf": ("submission", "/version/v1/submission-on-behalf", SUBMISSION_STATUSES, SUBMISSION_LIMIT),
}
for _platform in ("android", "ios"):
    for _scenario in ("dat", "otp", "els", "srs"):
        TARGETS[f"{_platform}-{_scenario}"] = (
            "donation", f"/version/v1/{_platform}/{_scenario}", DONATION_STATUSES, DONATION_LIMIT)


def base_payload(rng, target):
    if target in ("submission", "self-report", "on-behalf"):
        return submission_payload(rng, target)
    platform, scenario = target.split("-")
    return donation_request(rng, platform, scenario)


def headers_for(rng, target, tan=None):
    headers = {"Content-Type": "application/x-protobuf"}
    if target in ("submission", "on-behalf"):
        headers.update({"cwa-fake": "0", "cwa-authorization": tan or random_uuid(rng)})
    elif target == "self-report":
        headers.update({"cwa-fake": "0", "cwa-otp": random_uuid(rng)})
    elif target.endswith("-srs"):
        headers["cwa-fake"] = "0"
    return headers


# ---- HTTP -------------------------------------------------------------------------------------------------------

def post(base, path, body, headers, timeout, limit=None):
    """(status, headers, body) of one POST on a new connection, or (None, reason, b"") when the connection failed
    or timed out. A body over `limit` that the server refused while it was still being sent (413 and close, before
    reading it) may end in a reset: then whatever answer arrived is read, else the status is "closed"."""
    over = limit is not None and len(body) > limit
    url = urllib.parse.urlsplit(base)
    head = [f"POST {path} HTTP/1.1", f"Host: {url.netloc}", f"Content-Length: {len(body)}", "Connection: close"]
    head += [f"{name}: {value}" for name, value in headers.items()]
    request = ("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + body
    try:
        connection = socket.create_connection((url.hostname, url.port), timeout=timeout)
    except OSError as error:
        return None, f"connect: {error}", b""
    received = bytearray()
    try:
        with connection:
            try:
                connection.sendall(request)
            except (BrokenPipeError, ConnectionResetError) as error:
                if not over:
                    return None, f"send: {error}", b""
            while True:
                try:
                    chunk = connection.recv(65536)
                except ConnectionResetError as error:
                    if received or over:
                        break
                    return None, f"receive: {error}", b""
                if not chunk:
                    break
                received += chunk
                parsed = parse_response(bytes(received))
                if parsed:
                    return parsed
    except (socket.timeout, TimeoutError):
        return None, f"timeout after {timeout} s", b""
    except OSError as error:
        return None, f"{type(error).__name__}: {error}", b""
    parsed = parse_response(bytes(received), final=True)
    if parsed:
        return parsed
    if not received and over:
        return "closed", {}, b""
    return None, f"connection closed after {len(received)} bytes of an answer", bytes(received[:200])


def parse_response(data, final=False):
    """(status, headers, body) once `data` holds a whole answer (Content-Length, chunked, or up to the close)."""
    end = data.find(b"\r\n\r\n")
    if end < 0:
        return None
    lines = data[:end].decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    rest = data[end + 4:]
    if "content-length" in headers:
        length = int(headers["content-length"])
        return (status, headers, rest[:length]) if len(rest) >= length else None
    if headers.get("transfer-encoding", "").lower() == "chunked":
        body, index = bytearray(), 0
        while True:
            line_end = rest.find(b"\r\n", index)
            if line_end < 0:
                return None
            size = int(rest[index:line_end].split(b";")[0], 16)
            if size == 0:
                return status, headers, bytes(body)
            if len(rest) < line_end + 2 + size + 2:
                return None
            body += rest[line_end + 2:line_end + 2 + size]
            index = line_end + 2 + size + 2
    return (status, headers, rest) if final else None


def json_post(base, path, payload, headers=None, timeout=10):
    status, _, data = post(base, path, json.dumps(payload).encode(),
                           {"Content-Type": "application/json", **(headers or {})}, timeout)
    return status, data


def real_tans(count, env, secret):
    """`count` TANs of positive PCR results: a lab upload (test-result's lab port with the gateway's headers), a
    registration and a TAN (verification's app port) each."""
    with open(env["CWA_LAB_CERT"]) as handle:
        certificate = urllib.parse.quote(handle.read(), safe="")
    lab = {"X-SSL-Client-Cert": certificate, "X-Gateway-Secret": secret}
    tans = []
    for _ in range(count):
        # Not from the seed: a GUID registers once, and a repeated run needs new ones.
        guid = hashlib.sha256(os.urandom(16).hex().encode()).hexdigest()
        status, _ = json_post(env["EN_TEST_RESULT_URL"], "/api/v1/lab/results",
                              {"testResults": [{"id": guid, "result": 2}]}, lab)
        if status != 204:
            raise SystemExit(f"protofuzz: a lab upload for a real TAN got {status}")
        status, data = json_post(env["EN_VERIFICATION_URL"], "/version/v1/registrationToken",
                                 {"key": guid, "keyType": "GUID"})
        if status != 201:
            raise SystemExit(f"protofuzz: a registration for a real TAN got {status}: {data[:200]!r}")
        token = json.loads(data)["registrationToken"]
        status, data = json_post(env["EN_VERIFICATION_URL"], "/version/v1/tan", {"registrationToken": token})
        if status != 201:
            raise SystemExit(f"protofuzz: a TAN request got {status}: {data[:200]!r}")
        tans.append(json.loads(data)["tan"])
    return tans


# ---- the run ----------------------------------------------------------------------------------------------------

def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--count", type=int, default=int(os.environ.get("PROTOFUZZ_COUNT", 2000)),
                        help="mutants to send (PROTOFUZZ_COUNT, 2000)")
    parser.add_argument("--seconds", type=float, default=float(os.environ.get("PROTOFUZZ_SECONDS", 240)),
                        help="stop sending after this long (PROTOFUZZ_SECONDS, 240)")
    parser.add_argument("--tans", type=int, default=20, help="real TANs for mutants that still decode (20)")
    parser.add_argument("--seed", type=int, default=int(os.environ.get("FUZZ_SEED", 20)))
    parser.add_argument("--concurrency", type=int, default=12,
                        help="requests at once (12: iOS answers that reach DeviceCheck take 5 s)")
    parser.add_argument("--timeout", type=float, default=15, help="seconds for one answer (15)")
    parser.add_argument("--out", default=None, help="where failing bodies go (default: <EN_DATA_DIR>/protofuzz)")
    parser.add_argument("--only", action="append", choices=sorted(TARGETS), help="fuzz these targets only")
    parser.add_argument("--strict-ios", action="store_true", help="count iOS 503 DEVICE_CHECK_UNAVAILABLE as failures")
    parser.add_argument("--protoc", default=os.environ.get("PROTOC", "protoc"), help="the protoc (PROTOC, protoc)")
    args = parser.parse_args()
    if not (1 <= args.count <= 1_000_000 and 1 <= args.seconds <= 86400 and 0 <= args.tans <= 1000
            and 1 <= args.concurrency <= 64 and 0.1 <= args.timeout <= 300):
        parser.error("--count 1…1000000, --seconds 1…86400, --tans 0…1000, --concurrency 1…64, "
                     "--timeout 0.1…300")
    return args


def main():
    args = parse_args()
    env = os.environ
    missing = [name for name in ("EN_SUBMISSION_URL", "EN_DATA_DONATION_URL", "EN_VERIFICATION_URL",
                                 "EN_TEST_RESULT_URL", "CWA_LAB_CERT") if not env.get(name)]
    if missing:
        print(f"protofuzz: {', '.join(missing)} not set: eval \"$(deploy/local/run.sh env)\" first", file=sys.stderr)
        return 2
    data_dir = env.get("EN_DATA_DIR") or os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../.data")
    out = args.out or os.path.join(data_dir, "protofuzz")
    os.makedirs(out, exist_ok=True)
    bases = {"submission": env["EN_SUBMISSION_URL"], "donation": env["EN_DATA_DONATION_URL"]}
    protos = os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../protos")
    generated = tempfile.mkdtemp(prefix="protofuzz-pb-")
    try:
        load_messages(protos, args.protoc, generated)
    except (OSError, subprocess.CalledProcessError, ImportError) as error:
        print(f"protofuzz: the messages of protos/ could not be built ({error}): protoc and the protobuf runtime "
              "are needed", file=sys.stderr)
        return 2
    finally:
        shutil.rmtree(generated, ignore_errors=True)
    rng = random.Random(args.seed)
    targets = args.only or sorted(TARGETS)

    tans = []
    if args.tans and "submission" in targets:
        with open(os.path.join(data_dir, "secrets/gateway")) as handle:
            secret = handle.read().strip()
        tans = real_tans(args.tans, env, secret)

    # The mutants, drawn up front from the seed so that a run can be repeated: (number, target, mutation, body, TAN).
    names = list(MUTATIONS)
    plan = []
    for number in range(args.count):
        target = targets[number % len(targets)]
        mutation = names[rng.randrange(len(names))] if number >= len(targets) else "none"
        plan.append((number, target, mutation, rng.getrandbits(64)))

    lock = threading.Lock()
    answers = collections.defaultdict(collections.Counter)
    by_mutation = collections.defaultdict(collections.Counter)
    failures = []
    ios_unavailable = collections.Counter()
    durations = []
    slowest_by_target = collections.defaultdict(float)
    total_by_target = collections.defaultdict(float)
    sent = [0]
    tan_pool = list(tans)
    started = time.monotonic()
    deadline = started + args.seconds
    stopped = threading.Event()

    def one(item):
        number, target, mutation, seed = item
        if time.monotonic() > deadline or stopped.is_set():
            return
        local = random.Random(seed)
        try:
            body = MUTATIONS[mutation](local, base_payload(local, target), target)
        except Exception as error:  # a bug of this script, not of the service: reported, never hidden
            with lock:
                failures.append(f"{target} #{number} ({mutation}): protofuzz could not build it: {error!r}")
            return
        tan = None
        if target == "submission" and mutation in ("none", "huge repeated", "duplicate field") and tan_pool:
            with lock:
                tan = tan_pool.pop() if tan_pool else None
        headers = headers_for(local, target, tan)
        service, path, allowed, limit = TARGETS[target]
        began = time.monotonic()
        status, answer_headers, answer = post(bases[service], path, body, headers, args.timeout, limit)
        if status == "closed":
            # Refused over the limit before the body was read, the connection closed under the upload: allowed.
            allowed = allowed | {"closed"}
        took = time.monotonic() - began
        label = status if status is not None else "no answer"
        ok = status in allowed
        if (not ok and status == 503 and target.startswith("ios-") and not args.strict_ios
                and b"DEVICE_CHECK_UNAVAILABLE" in answer):
            ok = True
            with lock:
                ios_unavailable[target] += 1
        with lock:
            sent[0] += 1
            durations.append(took)
            slowest_by_target[target] = max(slowest_by_target[target], took)
            total_by_target[target] += took
            answers[target][label] += 1
            by_mutation[mutation][label] += 1
            if tan:
                answers[target][f"real TAN {label}"] += 1
            if not ok:
                name = f"{number:05d}-{target}"
                path_out = os.path.join(out, name + ".bin")
                with open(path_out, "wb") as handle:
                    handle.write(body)
                header_args = " ".join(f"-H '{key}: {value}'" for key, value in headers.items())
                failures.append(
                    f"{target} #{number} ({mutation}, {len(body)} bytes): "
                    f"{label if status is not None else answer_headers}; {answer[:200]!r}\n"
                    f"      curl -s -o /dev/null -w '%{{http_code}}\\n' -X POST {header_args} "
                    f"--data-binary @{path_out} {bases[service]}{path}")

    print(f"protofuzz: {len(plan)} mutants (seed {args.seed}) over {len(targets)} targets, {len(tans)} real TANs, "
          f"at most {args.seconds:.0f} s", file=sys.stderr)
    pool = concurrent.futures.ThreadPoolExecutor(args.concurrency)
    try:
        list(pool.map(one, plan))
    except KeyboardInterrupt:
        # Ctrl-C: nothing more is sent; the requests under way end within --timeout.
        stopped.set()
        pool.shutdown(wait=True, cancel_futures=True)
        print("protofuzz: interrupted", file=sys.stderr)
        return 130
    pool.shutdown()
    seconds = time.monotonic() - started

    alive = {}
    for service, base in bases.items():
        url = urllib.parse.urlsplit(base)
        try:
            connection = http.client.HTTPConnection(url.hostname, url.port, timeout=5)
            connection.request("GET", "/health/ready")
            alive[service] = connection.getresponse().status
        except OSError as error:
            alive[service] = f"no answer ({error})"

    for target in targets:
        counts = tally(answers[target])
        extra = ""
        if ios_unavailable[target]:
            extra = f" (503 DEVICE_CHECK_UNAVAILABLE ×{ios_unavailable[target]}: no DeviceCheck on loopback)"
        count = sum(value for key, value in answers[target].items() if not str(key).startswith("real"))
        timing = f" [{total_by_target[target] / max(count, 1):.2f} s mean, {slowest_by_target[target]:.2f} s slowest]"
        print(f"  {target:12} {TARGETS[target][1]:38} {counts}{extra}{timing}")
    for mutation in names:
        print(f"  mutation {mutation:16} {tally(by_mutation[mutation])}")
    durations.sort()
    slowest = durations[-1] if durations else 0
    print(f"protofuzz: {sent[0]} requests in {seconds:.0f} s ({sent[0] / max(seconds, 0.001):.0f}/s, "
          f"slowest {slowest:.2f} s), {len(plan) - sent[0]} not sent (time bound); /health/ready afterwards: "
          + ", ".join(f"{service} {status}" for service, status in alive.items())
          + f"; failures: {len(failures)}")
    for failure in failures[:30]:
        print("  FAIL  " + failure)
    if len(failures) > 30:
        print(f"  … and {len(failures) - 30} more (bodies in {out})")
    healthy = all(status == 200 for status in alive.values())
    return 0 if not failures and healthy else 1


if __name__ == "__main__":
    sys.exit(main())
