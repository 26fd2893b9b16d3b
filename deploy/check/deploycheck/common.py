"""What every check shares: the services, the context (renders and `--help` computed once), the helpers."""

from __future__ import annotations

import argparse
import base64
import os
import re
import subprocess
from pathlib import Path

import yaml
SERVICES = {
    # env example / k8s config name -> binary
    "test-result": "test-result-service",
    "verification": "verification-service",
    "submission": "submission-service",
    "portal": "portal-service",
    "distribution": "distribution-service",
    "federation": "federation-service",
    "data-donation": "data-donation-service",
    # the rehearsal federation gateway: compose only
    "efgs-gateway": "efgs-gateway",
}
# Settings a service reads only in some configurations, revealed in --help by these extra environments.
HELP_VARIANTS = {
    "distribution-service": [{"OBJECT_STORE": "s3"}],
    "data-donation-service": [{"ANDROID_ATTESTATION": "both"}],
}
BINARIES = sorted(SERVICES.values())
# Services that read and write the key store, whose migrations migrate-submission applies.
KEY_STORE_USERS = {"distribution-service", "federation-service"}
# The gateway's upstreams in compose (it waits for each to be healthy).
GATEWAY_UPSTREAMS = sorted(set(BINARIES) - {"efgs-gateway"})
HELP_KEY = re.compile(r"^\s+--[a-z0-9-]+, ([A-Z][A-Z0-9_]*)\b", re.M)
ENV_LINE = re.compile(r"^#?\s*([A-Z][A-Z0-9_]*)=(.*)$")
PLACEHOLDER = re.compile(r"\$\{(GATEWAY_[A-Z0-9_]+)\}")
# Placeholders no deployment sets: made at every start of the gateway (deploy/gateway/client-key.envsh in the
# containers, render.sh for `make run`).
GENERATED_PLACEHOLDERS = {"GATEWAY_CLIENT_KEY"}
# nginx variables that hold the client's address or are derived from it (the per-client key and its secret): they
# may appear only where the per-client limits are defined (limit_req_zone, js_set, js_var), never in a log format, a
# header or a response.
ADDRESS_VARIABLES = {"remote_addr", "binary_remote_addr", "realip_remote_addr", "proxy_add_x_forwarded_for",
                     "http_x_forwarded_for", "http_x_real_ip", "http_forwarded", "gateway_client", "gateway_client_key"}
ENVSH_MOUNT = re.compile(r"^/docker-entrypoint\.d/[0-1][0-9]-[a-z0-9-]+\.envsh$")


class CheckFailed(Exception):
    def __init__(self, summary: str, details: list[str] | None = None):
        super().__init__(summary)
        self.summary = summary
        self.details = details or []


class Context:
    def __init__(self, args: argparse.Namespace):
        self.root = Path(args.root)
        self.deploy = self.root / "deploy"
        self.work = Path(args.work)
        self.bin_dir = Path(args.bin_dir)
        self.kubectl = args.kubectl
        self.k8s_versions = args.k8s_versions.split(",")
        self.dev = Path(args.dev_secrets)   # output of deploy/env/dev-secrets.sh: .env and secrets/
        self._cache: dict[str, object] = {}

    # ---- shared, computed once ----
    def run(self, cmd: list[str], **kw) -> subprocess.CompletedProcess:
        return subprocess.run(cmd, capture_output=True, text=True, **kw)

    def compose_config(self) -> dict:
        if "compose" not in self._cache:
            result = self.run(["docker-compose", "--env-file", str(self.dev / ".env"), "-f",
                               str(self.deploy / "compose.yaml"), "config"])
            if result.returncode != 0:
                raise CheckFailed("docker-compose config failed", result.stderr.strip().splitlines())
            self._cache["compose"] = yaml.safe_load(result.stdout)
        return self._cache["compose"]

    def kustomize(self, target: str) -> list[dict]:
        key = f"k8s:{target}"
        if key not in self._cache:
            result = self.run([self.kubectl, "kustomize", str(self.deploy / "k8s" / target)])
            if result.returncode != 0:
                raise CheckFailed(f"kubectl kustomize deploy/k8s/{target} failed", result.stderr.strip().splitlines())
            path = self.work / f"k8s-{target.replace('/', '-')}.yaml"
            path.write_text(result.stdout)
            self._cache[key] = [d for d in yaml.safe_load_all(result.stdout) if d]
            self._cache[key + ":path"] = path
        return self._cache[key]

    def kustomize_path(self, target: str) -> Path:
        self.kustomize(target)
        return self._cache[f"k8s:{target}:path"]

    def dev_secrets(self) -> dict[str, dict[str, bytes]]:
        if "dev-secrets" not in self._cache:
            docs = yaml.safe_load_all((self.dev / "secrets" / "k8s-secrets.yaml").read_text())
            self._cache["dev-secrets"] = {d["metadata"]["name"]: {k: base64.b64decode(v) for k, v in d.get("data", {}).items()}
                                          for d in docs if d}
        return self._cache["dev-secrets"]

    def binary(self, name: str) -> Path:
        path = self.bin_dir / name
        if not os.access(path, os.X_OK):
            raise CheckFailed(f"{path} is missing: build the services first (make build), or set BIN_DIR")
        return path

    def help_keys(self, binary: str) -> set[str]:
        key = f"help:{binary}"
        if key not in self._cache:
            keys: set[str] = set()
            for extra in [{}] + HELP_VARIANTS.get(binary, []):
                env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), **extra}
                result = self.run([str(self.binary(binary)), "--help"], env=env, timeout=30)
                if result.returncode != 0:
                    raise CheckFailed(f"{binary} --help exited {result.returncode}", result.stderr.splitlines()[-5:])
                keys |= set(HELP_KEY.findall(result.stdout))
            if not keys:
                raise CheckFailed(f"{binary} --help lists no settings")
            self._cache[key] = keys
        return self._cache[key]


def env_example_keys(path: Path) -> tuple[dict[str, str], set[str]]:
    """The `KEY=value` lines of an env example and every key it names, set or commented out."""
    set_keys: dict[str, str] = {}
    named: set[str] = set()
    for line in path.read_text().splitlines():
        match = ENV_LINE.match(line)
        if match:
            named.add(match.group(1))
            if not line.startswith("#"):
                set_keys[match.group(1)] = match.group(2)
    return set_keys, named


def k8s_by_kind(docs: list[dict], kind: str) -> dict[str, dict]:
    return {d["metadata"]["name"]: d for d in docs if d.get("kind") == kind}


def pod_specs(docs: list[dict]) -> list[tuple[str, dict]]:
    """(kind/name, pod spec) of every workload."""
    specs = []
    for d in docs:
        kind, name = d.get("kind"), d["metadata"]["name"]
        if kind in ("Deployment", "StatefulSet", "Job"):
            specs.append((f"{kind}/{name}", d["spec"]["template"]["spec"]))
        elif kind == "CronJob":
            specs.append((f"{kind}/{name}", d["spec"]["jobTemplate"]["spec"]["template"]["spec"]))
    return specs


def our_binary(image: str) -> str | None:
    match = re.match(r"^(?:.*/)?en-backend/([a-z-]+)(?:[:@].*)?$", image)
    return match.group(1) if match and match.group(1) in BINARIES else None


def k8s_container_env(container: dict) -> dict[str, str]:
    """A container's `env`: values as they are, Secret references as `<secret NAME/KEY>`."""
    env = {}
    for e in container.get("env", []):
        if "value" in e:
            env[e["name"]] = str(e["value"])
        elif "secretKeyRef" in e.get("valueFrom", {}):
            ref = e["valueFrom"]["secretKeyRef"]
            env[e["name"]] = f"<secret {ref['name']}/{ref['key']}>"
    return env


# ---- the renders ----

OVERLAYS = ("overlays/local", "overlays/production-example")
# The optional federation component (deploy/k8s/components/federation): the overlays that must include it, the
# callback's port, and its placeholders, which every overlay that includes it replaces.
FEDERATION_OVERLAYS = ("overlays/production-example",)
FEDERATION_CALLBACK_PORT = 8006
FEDERATION_EGRESS_PLACEHOLDER = "192.0.2.1/32"
FEDERATION_SITE_SETTINGS = ("EFGS_URL", "CALLBACK_URL", "EFGS_CALLBACK_CERT_CN")


def federation_rendered(docs: list[dict]) -> bool:
    """Whether a render includes the federation component (anything of federation-service)."""
    return any(d["metadata"].get("labels", {}).get("app.kubernetes.io/name") == "federation-service" for d in docs)
