"""Each binary accepts each container's configuration (compose and the local overlay)."""

from __future__ import annotations

import subprocess
import urllib.parse
from pathlib import Path

from .common import CheckFailed, Context, FEDERATION_OVERLAYS, k8s_by_kind, our_binary, pod_specs


def check_config(ctx: Context) -> str:
    problems = []
    runs = 0
    services = ctx.compose_config()["services"]
    secret_files = {name: Path(spec["file"]).name for name, spec in ctx.compose_config().get("secrets", {}).items()}
    for name, svc in sorted(services.items()):
        binary = our_binary(str(svc.get("image", "")))
        if not binary:
            continue
        env = {k: str(v) for k, v in svc.get("environment", {}).items()}
        problems += try_configuration(ctx, f"compose {name}", binary, svc.get("command") or [], env,
                                      compose_mounts(ctx, svc, secret_files))
        runs += 1
    # Every container of the local overlay, and the federation component's where an overlay includes it (the local
    # overlay does not: it has no federation gateway to talk to).
    for target, only in [("overlays/local", None), *[(t, "federation-service") for t in FEDERATION_OVERLAYS]]:
        found, count = k8s_configurations(ctx, target, only)
        problems += found
        runs += count
    if problems:
        raise CheckFailed("service configurations", problems)
    return (f"the binaries accept all {runs} container configurations of compose, the local overlay and the "
            f"federation component in {', '.join(FEDERATION_OVERLAYS)} (settings parsed, key files loaded; checked "
            "with --migrate-only against no database)")


def k8s_configurations(ctx: Context, target: str, only: str | None) -> tuple[list[str], int]:
    """Each container of our images in a render (of the binary `only`, when given) tried with its settings, the
    development Secrets' files as its mounted Secrets: the problems and the number of containers tried."""
    problems = []
    runs = 0
    docs = ctx.kustomize(target)
    configmaps = k8s_by_kind(docs, "ConfigMap")
    secrets = ctx.dev_secrets()
    for kind_name, spec in pod_specs(docs):
        volumes = {v["name"]: v for v in spec.get("volumes", [])}
        for c in spec.get("initContainers", []) + spec.get("containers", []):
            binary = our_binary(c.get("image", ""))
            if not binary or (only and binary != only):
                continue
            env: dict[str, str] = {}
            for source in c.get("envFrom", []):
                if "configMapRef" in source:
                    env.update(configmaps.get(source["configMapRef"]["name"], {}).get("data", {}))
                if "secretRef" in source:
                    env.update({k: v.decode() for k, v in secrets.get(source["secretRef"]["name"], {}).items()})
            for e in c.get("env", []):
                if "value" in e:
                    env[e["name"]] = str(e["value"])
                elif "secretKeyRef" in e.get("valueFrom", {}):
                    ref = e["valueFrom"]["secretKeyRef"]
                    env[e["name"]] = secrets.get(ref["name"], {}).get(ref["key"], b"").decode()
            mounts = {}
            for m in c.get("volumeMounts", []):
                volume = volumes.get(m["name"], {})
                folder = ctx.work / "k8s-volumes" / target.replace("/", "-") / kind_name.replace("/", "-") / m["name"]
                folder.mkdir(parents=True, exist_ok=True)
                if "secret" in volume:
                    for key, value in secrets.get(volume["secret"]["secretName"], {}).items():
                        (folder / key).write_bytes(value)
                mounts[m["mountPath"]] = str(folder)
            problems += try_configuration(ctx, f"{target} {kind_name} {c['name']}", binary, c.get("args") or [], env,
                                          mounts)
            runs += 1
    return problems, runs


def compose_mounts(ctx: Context, svc: dict, secret_files: dict[str, str]) -> dict[str, str]:
    """A compose service's mounts as local paths: secrets and files of deploy/secrets/ from the generated development
    secrets, named volumes as a scratch folder."""
    mounts = {f"/run/secrets/{s if isinstance(s, str) else s['source']}":
              str(ctx.dev / "secrets" / secret_files[s if isinstance(s, str) else s["source"]])
              for s in svc.get("secrets", [])}
    for volume in svc.get("volumes", []):
        source, _, rest = volume.partition(":")
        target = rest.split(":")[0]
        if "/secrets/" in source:
            mounts[target] = str(ctx.dev / "secrets" / Path(source).name)
        elif target:
            mounts[target] = str(ctx.work / "cdn")
    return mounts


def remapped_settings(env: dict[str, str], mounts: dict[str, str]) -> dict[str, str]:
    """A container's settings with every path under a mount point replaced by the local file behind it; the list
    settings (SIGNING_KEY_FILES `file:id`, SERVICE_CALLER_KEYS `caller=file`) entry by entry."""
    def remap(value: str) -> str:
        for mount_path in sorted(mounts, key=len, reverse=True):
            if value == mount_path or value.startswith(mount_path + "/"):
                return mounts[mount_path] + value[len(mount_path):]
        return value

    settings = {}
    for key, value in env.items():
        if key == "SIGNING_KEY_FILES":
            value = ",".join(remap(entry.split(":")[0]) + entry[len(entry.split(":")[0]):] for entry in value.split(","))
        elif key == "SERVICE_CALLER_KEYS":
            value = ",".join(entry.partition("=")[0] + "=" + remap(entry.partition("=")[2]) for entry in value.split(","))
        else:
            value = remap(value)
        settings[key] = value
    return settings


def try_configuration(ctx: Context, label: str, binary: str, args: list[str], env: dict[str, str],
                      mounts: dict[str, str]) -> list[str]:
    """Starts the binary with a container's settings, paths mapped to local files, the database pointed at a closed
    port, and MIGRATE_ONLY: exit 2 means the configuration was refused, exit 1 that only the database was missing."""
    run_env = {"PATH": "/usr/bin:/bin", **remapped_settings(env, mounts)}
    if "DATABASE_URL" in env:
        url = urllib.parse.urlsplit(env["DATABASE_URL"])
        if not url.scheme.startswith("postgres") or not url.password or not url.path.strip("/"):
            return [f"{label}: DATABASE_URL is not postgres://user:password@host:port/database"]
        run_env["DATABASE_URL"] = urllib.parse.urlunsplit(url._replace(netloc=f"{url.username}:{url.password}@127.0.0.1:1"))
    run_env["MIGRATE_ONLY"] = "true"
    # `distribution-service run` parses the same settings as `serve` but ignores MIGRATE_ONLY and would wait for the
    # database: check its configuration through `serve`.
    if binary == "distribution-service" and args == ["run"]:
        args = ["serve"]
    # So do federation-service's `upload` and `download`.
    if binary == "federation-service" and args in (["upload"], ["download"]):
        args = ["serve"]
    try:
        result = ctx.run([str(ctx.binary(binary)), *args], env=run_env, timeout=30, cwd=str(ctx.work))
    except subprocess.TimeoutExpired:
        return [f"{label}: {binary} did not exit within 30 s"]
    output = (result.stdout + result.stderr).strip()
    if result.returncode == 1 and ("Migration failed" in output or "run failed" in output):
        return []
    return [f"{label}: {binary} exited {result.returncode}: " + " ".join(output.split())[:400]]
