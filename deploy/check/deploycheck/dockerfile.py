"""deploy/Dockerfile: hadolint, the parser-level rules, image pins and digests."""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

from .common import BINARIES, CheckFailed, Context, OVERLAYS, our_binary, pod_specs


def check_dockerfile(ctx: Context) -> str:
    from dockerfile_parse import DockerfileParser

    dockerfile = ctx.deploy / "Dockerfile"
    hadolint = Path(sys.executable).parent / "hadolint"
    result = ctx.run([str(hadolint), "--no-color", "--config", str(ctx.deploy / "check" / "hadolint.yaml"),
                      str(dockerfile)])
    if result.returncode != 0:
        raise CheckFailed("hadolint deploy/Dockerfile", (result.stdout + result.stderr).strip().splitlines())
    instructions = DockerfileParser(path=str(dockerfile)).structure
    problems = []
    froms = [i for i in instructions if i["instruction"] == "FROM"]
    if len(froms) < 2:
        problems.append("not a multi-stage build")
    stages: list[list[dict]] = []
    for i in instructions:
        if i["instruction"] == "FROM":
            stages.append([])
        if stages:
            stages[-1].append(i)
    build, runtime = (stages[0], stages[-1]) if len(stages) >= 2 else ([], [])
    arg_defaults = dict(i["value"].split("=", 1) for i in instructions if i["instruction"] == "ARG" and "=" in i["value"])
    if not re.match(r"^swift:6\.\d", arg_defaults.get("SWIFT_IMAGE", "")) or "${SWIFT_IMAGE}" not in froms[0]["value"]:
        problems.append("the build stage is not FROM a Swift 6 image (ARG SWIFT_IMAGE=swift:6.x)")
    if "bookworm-slim" not in arg_defaults.get("RUNTIME_IMAGE", "") or "${RUNTIME_IMAGE}" not in froms[-1]["value"]:
        problems.append("the runtime stage is not FROM debian:bookworm-slim (ARG RUNTIME_IMAGE)")
    for stage_name, stage in (("build", build), ("runtime", runtime)):
        if not any(i["instruction"] == "ARG" and i["value"].split("=")[0] == "SERVICE" for i in stage):
            problems.append(f"the {stage_name} stage does not declare ARG SERVICE")
    build_text = "\n".join(i["value"] for i in build)
    for needle, why in [
        ("swift build -c release --static-swift-stdlib ${resolved:+\"$resolved\"} --product \"${SERVICE}\"",
         "no static-stdlib release build of ${SERVICE}"),
        ("*.resources", "the SwiftPM resource bundles (*.resources) are not copied"),
        ("cp deploy/Package.resolved Package.resolved", "deploy/Package.resolved is not used by the build"),
        ("resolved=--only-use-versions-from-resolved-file", "the build does not hold to the pins of Package.resolved"),
        ("REQUIRE_RESOLVED", "no REQUIRE_RESOLVED to refuse a build without pins"),
    ]:
        if needle not in build_text:
            problems.append(why)
    if not any(i["instruction"] == "ENV" and "SWIFT_DETERMINISTIC_HASHING=1" in i["value"] for i in build):
        problems.append("the build does not set SWIFT_DETERMINISTIC_HASHING=1")
    runs = [i["value"] for i in instructions if i["instruction"] == "RUN" and "apt-get install" in i["value"]]
    if any("--no-install-recommends" not in r for r in runs):
        problems.append("an apt-get install without --no-install-recommends")
    users = [i["value"].strip() for i in runtime if i["instruction"] == "USER"]
    if not users or users[-1].split(":")[0] in ("root", "0"):
        problems.append("the runtime stage does not switch to a non-root USER")
    # The runtime stage copies /out of the `binaries` stage, which is the build stage unless BINARIES=prebuilt (make
    # images: host binaries from the context's prebuilt/<SERVICE>/).
    if not any(i["instruction"] == "COPY" and "--from=binaries" in i["value"] and "/app/" in i["value"] for i in runtime):
        problems.append("the runtime stage does not copy the binaries stage's output (binary and bundles) to /app")
    if arg_defaults.get("BINARIES") != "build" or not any(
            i["instruction"] == "FROM" and re.fullmatch(r"\$\{BINARIES\}\s+AS\s+binaries", i["value"], re.I) for i in froms):
        problems.append("no stage `FROM ${BINARIES} AS binaries` with ARG BINARIES=build")
    if not any(i["instruction"] == "COPY" and "prebuilt/${SERVICE}/" in i["value"] and "/out/" in i["value"] for i in instructions):
        problems.append("no prebuilt stage that takes prebuilt/${SERVICE}/ as /out")
    health = [i["value"] for i in runtime if i["instruction"] == "HEALTHCHECK"]
    script = ctx.deploy / "healthcheck.sh"
    if not health or "en-healthcheck" not in health[0] or "/health/live" not in script.read_text():
        problems.append("no HEALTHCHECK on /health/live")
    envs = " ".join(i["value"] for i in runtime if i["instruction"] == "ENV")
    if "HTTP_HOST=0.0.0.0" not in envs or "EN_SERVICE=${SERVICE}" not in envs:
        problems.append("the runtime stage does not set HTTP_HOST=0.0.0.0 and EN_SERVICE=${SERVICE}")
    entry = [i["value"] for i in runtime if i["instruction"] == "ENTRYPOINT"]
    if not entry or "exec" not in entry[0] or "EN_SERVICE" not in entry[0]:
        problems.append("the ENTRYPOINT does not exec the chosen binary")
    labels = " ".join(i["value"] for i in runtime if i["instruction"] == "LABEL")
    for label in ("title", "version", "revision", "created"):
        if f"org.opencontainers.image.{label}" not in labels:
            problems.append(f"no label org.opencontainers.image.{label}")
    if 'org.opencontainers.image.base.name="${RUNTIME_IMAGE}"' not in labels:
        problems.append("the label org.opencontainers.image.base.name does not name ${RUNTIME_IMAGE}")
    # Files copied from the context exist and are not excluded by the Dockerfile's ignore file.
    ignore = [line.strip() for line in (ctx.deploy / "Dockerfile.dockerignore").read_text().splitlines()
              if line.strip() and not line.startswith("#")]
    for i in runtime:
        if i["instruction"] == "COPY" and "--from=" not in i["value"]:
            source = [w for w in i["value"].split() if not w.startswith("--")][0]
            if not (ctx.root / source).exists():
                problems.append(f"COPY source {source} does not exist")
            if any(source == pattern or source.startswith(pattern.rstrip("/") + "/") for pattern in ignore):
                problems.append(f"COPY source {source} is excluded by Dockerfile.dockerignore")
    for needed in (".build", ".data", ".git", "deploy/secrets", "deploy/.env", "Package.resolved"):
        if needed not in ignore:
            problems.append(f"Dockerfile.dockerignore does not exclude {needed}")
    if "deploy/Package.resolved" in ignore or "deploy" in ignore:
        problems.append("Dockerfile.dockerignore excludes deploy/Package.resolved, the release pins")
    resolved_note, resolved_problems = package_resolved(ctx)
    problems += resolved_problems
    pin_note, pin_problems = image_pins(ctx, arg_defaults)
    problems += pin_problems
    # The runtime packages cover what the binaries load besides the Swift runtime (which is linked statically).
    packages = set()
    for i in runtime:
        if i["instruction"] == "RUN" and "apt-get install" in i["value"]:
            packages |= set(re.findall(r"\b(lib[a-z0-9.+-]+|zlib1g|ca-certificates|tzdata)\b",
                                       i["value"].split("install", 1)[1]))
    base_essentials = {"libc6", "libgcc-s1"}
    owners: dict[str, str] = {}   # library -> Debian package; the binaries load mostly the same ones

    def owner_of(library: str) -> str:
        if library not in owners:
            owner = ctx.run(["dpkg", "-S", os.path.realpath(library)])
            if owner.returncode != 0:
                owner = ctx.run(["dpkg", "-S", library])
            owners[library] = owner.stdout.split(":")[0].strip() if owner.returncode == 0 else "?"
        return owners[library]

    for binary in BINARIES:
        result = ctx.run(["ldd", str(ctx.binary(binary))])
        for line in result.stdout.splitlines():
            match = re.search(r"=> (/\S+)", line)
            if not match or "/swift/" in match.group(1):
                continue
            package = owner_of(match.group(1))
            if package not in packages | base_essentials:
                problems.append(f"{binary} loads {match.group(1)} ({package}), which the runtime stage does not install")
    if problems:
        raise CheckFailed("deploy/Dockerfile", sorted(set(problems)))
    return (f"hadolint clean; {len(froms)} stages, ARG SERVICE, static-stdlib release build, resource bundles, "
            f"non-root USER {users[-1]}, HEALTHCHECK, labels; runtime packages cover the binaries' libraries; "
            f"{resolved_note}; {pin_note}")


DIGEST = re.compile(r"^[^@\s]+@sha256:[0-9a-f]{64}$")


def image_pins(ctx: Context, arg_defaults: dict[str, str]) -> tuple[str, list[str]]:
    """The base images of the build and the third-party images of compose and Kubernetes: a digest, where one is
    set, has the form name[:tag]@sha256:<64 hex>; with DEPLOY_REQUIRE_DIGESTS=1 every one must have a digest."""
    problems = []
    refs: dict[str, str] = {}   # where -> reference
    config = ctx.compose_config()
    for name, svc in config["services"].items():
        build_args = (svc.get("build") or {}).get("args") or {}
        for arg in ("SWIFT_IMAGE", "RUNTIME_IMAGE"):
            if arg in build_args:
                refs[f"compose {name} build arg {arg}"] = str(build_args[arg])
                if not str(build_args[arg]).startswith(arg_defaults.get(arg, "?").split("@")[0].split(":")[0]):
                    problems.append(f"compose {name}: {arg}={build_args[arg]} is not the Dockerfile's image "
                                    f"({arg_defaults.get(arg)})")
        if not our_binary(str(svc.get("image", ""))):
            refs[f"compose {name}"] = str(svc.get("image", ""))
    for target in ("base", *OVERLAYS):
        for kind_name, spec in pod_specs(ctx.kustomize(target)):
            for c in spec.get("initContainers", []) + spec.get("containers", []):
                if not our_binary(c.get("image", "")):
                    refs[f"{target} {kind_name} {c['name']}"] = c.get("image", "")
    require = os.environ.get("DEPLOY_REQUIRE_DIGESTS") == "1"
    pinned = 0
    for where, ref in sorted(refs.items()):
        if "@" in ref:
            pinned += 1
            if not DIGEST.match(ref):
                problems.append(f"{where}: {ref} is not name[:tag]@sha256:<64 hex>")
        elif require:
            problems.append(f"{where}: {ref} is not pinned by digest (DEPLOY_REQUIRE_DIGESTS=1)")
    distinct = sorted(set(refs.values()))
    return (f"{pinned} of {len(refs)} base and third-party image references pinned by digest "
            f"({', '.join(distinct)}){' (required)' if require else ''}", problems)


def package_resolved(ctx: Context) -> tuple[str, list[str]]:
    """deploy/Package.resolved, when present: the dependency pins of the image build, resolved against github.com.
    Every dependency of Package.swift pinned to a version and a commit, none to a commit of this machine's package
    mirrors (their commit ids are not GitHub's: such a file fails every build elsewhere)."""
    path = ctx.deploy / "Package.resolved"
    if not path.exists():
        return ("no deploy/Package.resolved: image builds resolve dependencies afresh (REQUIRE_RESOLVED=true refuses)",
                [])
    problems = []
    try:
        resolved = json.loads(path.read_text())
    except ValueError as error:
        return ("", [f"deploy/Package.resolved is not JSON: {error}"])
    pins = resolved.get("pins") or resolved.get("object", {}).get("pins") or []
    by_location = {}
    for pin in pins:
        location = pin.get("location") or pin.get("repositoryURL") or ""
        state = pin.get("state", {})
        by_location[location.lower().removesuffix(".git")] = state
        if not location.startswith("https://github.com/"):
            problems.append(f"deploy/Package.resolved: {location} is not a github.com location")
        if not re.fullmatch(r"[0-9a-f]{40}", state.get("revision", "")) or not state.get("version"):
            problems.append(f"deploy/Package.resolved: {location} is not pinned to a version and a commit")
            continue
        mirror = Path("/opt/swift-packages") / (location.removeprefix("https://github.com/").removesuffix(".git") + ".git")
        if mirror.exists():
            local = ctx.run(["git", "-C", str(mirror), "rev-parse", f"{state['version']}^{{commit}}"]).stdout.strip()
            if local == state["revision"]:
                problems.append(f"deploy/Package.resolved: {location} {state['version']} names this machine's mirror "
                                "commit, not GitHub's (resolve on a machine that reaches github.com)")
    package = (ctx.root / "Package.swift").read_text()
    for url in re.findall(r'\.package\(\s*url:\s*"([^"]+)"', package):
        if url.lower().removesuffix(".git") not in by_location:
            problems.append(f"deploy/Package.resolved does not pin {url}, a dependency of Package.swift")
    return (f"deploy/Package.resolved pins {len(pins)} packages for the image build", problems)
