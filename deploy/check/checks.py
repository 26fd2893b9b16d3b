"""The checks of `make deploy-check` (run by deploy/check/run.sh inside .data/deploy-venv).

Each check validates one artefact of deploy/ statically, since no container engine runs here, and prints one line:
`ok     <check>: <what was validated>` or `FAILED <check>: <why>` followed by indented details. The process exits 1
when any check failed. `python checks.py --only NAME ...` runs some of them.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import urllib.parse
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


# ---------------------------------------------------------------------------------------------------------------
# compose


def check_compose(ctx: Context) -> str:
    config = ctx.compose_config()   # docker-compose 1.29 `config`: schema 3.8, interpolation, env_file merge
    problems = []
    # The same file against the Compose Specification (what the Compose v2 plugin reads), with jsonschema.
    spec_path = Path("/usr/lib/python3/dist-packages/compose/config/compose_spec.json")
    spec_note = ""
    if spec_path.exists():
        import jsonschema
        raw = yaml.safe_load((ctx.deploy / "compose.yaml").read_text())
        errors = sorted(jsonschema.Draft7Validator(json.loads(spec_path.read_text())).iter_errors(raw), key=str)
        problems += [f"compose-spec: {'/'.join(map(str, e.path))}: {e.message}" for e in errors]
        spec_note = " and the compose-spec schema"
    services = config["services"]
    for short, binary in SERVICES.items():
        svc = services.get(binary)
        if svc is None:
            problems.append(f"no service {binary}")
            continue
        if not svc.get("image", "").startswith(f"en-backend/{binary}:"):
            problems.append(f"{binary}: image is not en-backend/{binary}:<tag>")
        build = svc.get("build", {})
        if build.get("args", {}).get("SERVICE") != binary or not str(build.get("dockerfile", "")).endswith("Dockerfile"):
            problems.append(f"{binary}: build does not use deploy/Dockerfile with SERVICE={binary}")
        if svc.get("environment", {}).get("HTTP_HOST") != "0.0.0.0":
            problems.append(f"{binary}: HTTP_HOST is not 0.0.0.0")
        if svc.get("environment", {}).get("DATABASE_AUTO_MIGRATE") != "false":
            problems.append(f"{binary}: DATABASE_AUTO_MIGRATE should be false (the migrate-* steps migrate)")
        if not svc.get("read_only"):
            problems.append(f"{binary}: root filesystem is not read-only")
        depends = svc.get("depends_on", {})
        if binary not in KEY_STORE_USERS:
            migrate = f"migrate-{short}"
            mig = services.get(migrate)
            if mig is None:
                problems.append(f"no one-shot migration service {migrate}")
            else:
                if mig.get("command") != ["--migrate-only"]:
                    problems.append(f"{migrate}: command is not --migrate-only")
                if mig.get("image") != svc.get("image"):
                    problems.append(f"{migrate}: image differs from {binary}'s")
                if mig.get("restart", "no") != "no":
                    problems.append(f"{migrate}: a one-shot step must not restart")
                if depends.get(migrate, {}).get("condition") != "service_completed_successfully":
                    problems.append(f"{binary}: does not wait for {migrate} to complete successfully")
                if mig.get("depends_on", {}).get("postgres", {}).get("condition") != "service_healthy":
                    problems.append(f"{migrate}: does not wait for a healthy postgres")
        elif depends.get("migrate-submission", {}).get("condition") != "service_completed_successfully":
            problems.append(f"{binary}: does not wait for the key store's migrations, which migrate-submission applies")
    for loop in ("distribution-service", "federation-service", "efgs-gateway"):
        if services.get(loop, {}).get("command") != ["serve"]:
            problems.append(f"{loop}: not run as a loop (command serve)")
    gateway = services.get("gateway", {})
    for name, svc in services.items():
        for dep, cond in (svc.get("depends_on") or {}).items():
            condition = cond.get("condition")
            if condition == "service_healthy":
                target = services.get(dep, {})
                has_check = "healthcheck" in target and not target["healthcheck"].get("disable")
                if not has_check and not str(target.get("image", "")).startswith("en-backend/"):
                    problems.append(f"{name}: waits for {dep} to be healthy, which has no healthcheck")
    for name in GATEWAY_UPSTREAMS:
        if gateway.get("depends_on", {}).get(name, {}).get("condition") != "service_healthy":
            problems.append(f"gateway: does not wait for a healthy {name}")
    published = [p for name, svc in services.items() if name != "gateway" for p in svc.get("ports", [])]
    if published:
        problems.append(f"only the gateway may publish ports, found {published}")
    if "postgres" not in services or "10-en-roles.sh" not in " ".join(services["postgres"].get("volumes", [])):
        problems.append("postgres: deploy/postgres/init.sh is not mounted into /docker-entrypoint-initdb.d")
    problems += compose_network_problems(services, config.get("networks") or {})
    problems += compose_internal_url_problems(services)
    text = (ctx.deploy / "compose.yaml").read_text()
    if re.search(r"PASSWORD\s*[:=]\s*[A-Za-z0-9]", text) or re.search(r"postgres://[a-z]+:[A-Za-z0-9]", text):
        problems.append("compose.yaml inlines a password: take it from deploy/.env")
    if problems:
        raise CheckFailed("deploy/compose.yaml", problems)
    return (f"deploy/compose.yaml passes docker-compose 1.29 config{spec_note}; {len(services)} services, "
            "migrations before services, health-based start order; containers share networks only along the edges "
            "they call, every network but the gateway's public one internal")


def compose_internal_url_problems(services: dict) -> list[str]:
    """Every `<PEER>_INTERNAL_URL` a service of ours is given names a compose service, at its INTERNAL_HTTP_PORT, on a
    network the two share."""
    problems = []
    for name, svc in services.items():
        if not our_binary(str(svc.get("image", ""))) or name.startswith("migrate-"):
            continue
        for key, value in (svc.get("environment") or {}).items():
            if not key.endswith("_INTERNAL_URL"):
                continue
            url = urllib.parse.urlsplit(str(value))
            peer = services.get(url.hostname or "")
            if peer is None:
                problems.append(f"{name}: {key}={value} names no compose service")
                continue
            if str((peer.get("environment") or {}).get("INTERNAL_HTTP_PORT")) != str(url.port):
                problems.append(f"{name}: {key}={value} is not {url.hostname}'s INTERNAL_HTTP_PORT")
            if not set(svc.get("networks") or {}) & set(peer.get("networks") or {}):
                problems.append(f"{name}: shares no network with {url.hostname}, which {key} names")
    return problems


# Which containers may share a network in compose: the calls the services make, the gateway's upstreams, and
# PostgreSQL with its clients (the services, their migration steps). Anything else is a path an attacker inside one
# container could use.
COMPOSE_EDGES = {
    frozenset(pair) for pair in [
        ("gateway", "test-result-service"), ("gateway", "verification-service"),
        ("gateway", "submission-service"), ("gateway", "portal-service"),
        ("verification-service", "test-result-service"), ("submission-service", "verification-service"),
        ("portal-service", "verification-service"),
        # data donation: the gateway to its app API, submission-service to its internal API (self-report OTPs)
        ("gateway", "data-donation-service"), ("submission-service", "data-donation-service"),
        ("migrate-data-donation", "data-donation-service"),
        # the keys database is shared: its owners and its migration step meet on its network
        ("submission-service", "distribution-service"), ("migrate-submission", "submission-service"),
        ("migrate-submission", "distribution-service"),
        ("migrate-test-result", "test-result-service"), ("migrate-verification", "verification-service"),
        ("migrate-portal", "portal-service"),
        # federation: its callback through the gateway, the key store, the federation gateway; the rehearsal gateway's
        # front, its callbacks to our gateway, its own migration step
        ("gateway", "federation-service"), ("submission-service", "federation-service"),
        ("distribution-service", "federation-service"), ("migrate-submission", "federation-service"),
        ("federation-service", "efgs"), ("efgs", "efgs-gateway"), ("efgs-gateway", "gateway"),
        ("migrate-efgs-gateway", "efgs-gateway"),
    ]
}


# Networks that a deployment may give a route out (internal: false), and who may be on them: federation-service's
# way to a real federation gateway.
EGRESS_NETWORKS = {"federation-efgs": {"federation-service", "efgs"}}


def compose_network_problems(services: dict, networks: dict) -> list[str]:
    problems = []
    members: dict[str, set[str]] = {}
    for name, svc in services.items():
        nets = svc.get("networks") or {}
        if not nets:
            problems.append(f"{name}: joins no network of its own (it would get the default network with everyone)")
        for net in nets:
            members.setdefault(net, set()).add(name)
    for net, names in sorted(members.items()):
        if not (networks.get(net) or {}).get("internal") and names != {"gateway"} \
                and not (net in EGRESS_NETWORKS and names <= EGRESS_NETWORKS[net]):
            problems.append(f"network {net} is not internal but joined by {sorted(names - {'gateway'})}")
        for a in names:
            for b in names:
                if a < b and "postgres" not in (a, b) and frozenset((a, b)) not in COMPOSE_EDGES:
                    problems.append(f"{a} and {b} share the network {net}, an edge neither calls")
    return sorted(set(problems))


# ---------------------------------------------------------------------------------------------------------------
# Kubernetes


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


# The Prometheus Operator's kinds (the optional component deploy/k8s/components/monitoring): kubernetes-validate has no
# schema for them, so they are checked by monitoring_rules instead; the overlays that must include the component.
OPERATOR_KINDS = ("ServiceMonitor", "PodMonitor", "PrometheusRule", "Probe")
MONITORING_OVERLAYS = ("overlays/production-example",)


def without_operator_kinds(path: Path) -> Path:
    """A copy of a render without the Prometheus Operator's objects, for kubernetes-validate."""
    docs = [d for d in yaml.safe_load_all(path.read_text()) if d and d.get("kind") not in OPERATOR_KINDS]
    copy = path.with_name(path.stem + "-validate.yaml")
    copy.write_text(yaml.safe_dump_all(docs, sort_keys=False))
    return copy


def monitoring_rules(docs: list[dict]) -> list[str]:
    """The ServiceMonitor scrapes, as job en-services with the binary's name in `service`, the port `metrics` of
    every Service whose pods serve the metrics port, and that port targets the containers' 9090."""
    problems = []
    monitors = k8s_by_kind(docs, "ServiceMonitor")
    if not monitors:
        return ["no ServiceMonitor (components/monitoring is not included)"]
    services = k8s_by_kind(docs, "Service")
    deployments = k8s_by_kind(docs, "Deployment")
    if "distribution-service" not in deployments:
        problems.append("distribution runs as a CronJob, which nothing scrapes (components/distribution-serve is not "
                        "included)")
    if federation_rendered(docs) and "federation-service" not in deployments:
        problems.append("federation's runs are CronJobs, which nothing scrapes (components/federation-serve is not "
                        "included)")
    metric_pods = set()
    for kind_name, spec in pod_specs(docs):
        for c in spec.get("containers", []):
            if any(p.get("name") == "metrics" and p.get("containerPort") == 9090 for p in c.get("ports", [])):
                metric_pods.add(kind_name.split("/", 1)[1])
    # The gateway's exporter: a PodMonitor (its Service is the public entry), as job gateway with service=gateway.
    pod_monitored = set()
    for name, monitor in k8s_by_kind(docs, "PodMonitor").items():
        pod_monitored.add(monitor["spec"].get("selector", {}).get("matchLabels", {}).get("app.kubernetes.io/name"))
        for endpoint in monitor["spec"].get("podMetricsEndpoints", []):
            labels = {r.get("targetLabel"): r.get("replacement") for r in endpoint.get("relabelings", [])}
            if endpoint.get("port") != "metrics" or labels.get("job") != "gateway" or labels.get("service") != "gateway":
                problems.append(f"PodMonitor/{name}: not port metrics as job gateway with service=gateway")
    gateway_containers = deployments.get("gateway", {}).get("spec", {}).get("template", {}).get("spec", {}).get(
        "containers", [])
    exporter = [c for c in gateway_containers if "nginx-prometheus-exporter" in c.get("image", "")]
    nginx_env = next((k8s_container_env(c) for c in gateway_containers if c["name"] == "nginx"), {})
    if "gateway" not in pod_monitored:
        problems.append("no PodMonitor selects the gateway's pods")
    if not exporter or not any(f"127.0.0.1:{nginx_env.get('GATEWAY_STATUS_PORT')}/stub_status" in arg
                               for arg in exporter[0].get("args", [])):
        problems.append("the gateway pod has no nginx-prometheus-exporter reading its GATEWAY_STATUS_PORT's stub_status")
    for name, monitor in monitors.items():
        spec = monitor["spec"]
        selected = set()
        for expression in spec.get("selector", {}).get("matchExpressions", []):
            if expression.get("key") == "app.kubernetes.io/name" and expression.get("operator") == "In":
                selected |= set(expression.get("values", []))
        for endpoint in spec.get("endpoints", []):
            labels = {r.get("targetLabel"): r for r in endpoint.get("relabelings", [])}
            if endpoint.get("port") != "metrics" or endpoint.get("path", "/metrics") != "/metrics":
                problems.append(f"ServiceMonitor/{name}: an endpoint does not scrape port metrics at /metrics")
            if labels.get("job", {}).get("replacement") != "en-services":
                problems.append(f"ServiceMonitor/{name}: job is not set to en-services")
            if labels.get("service", {}).get("sourceLabels") != ["__meta_kubernetes_service_label_app_kubernetes_io_name"]:
                problems.append(f"ServiceMonitor/{name}: the label service is not the Service's app.kubernetes.io/name")
        for deployment in sorted(metric_pods - pod_monitored):
            if deployment not in selected:
                problems.append(f"ServiceMonitor/{name} does not select {deployment}, which serves the metrics port")
        for service in sorted(selected):
            ports = services.get(service, {}).get("spec", {}).get("ports", [])
            if not any(p.get("name") == "metrics" and p.get("targetPort") in ("metrics", 9090) for p in ports):
                problems.append(f"Service/{service} has no port metrics for ServiceMonitor/{name}")
    problems += gateway_probe_problems(docs)
    rules = k8s_by_kind(docs, "PrometheusRule")
    for name, source in (("en-backend-rules", "rules.yaml"), ("en-backend-alerts", "alerts.yaml")):
        rule = rules.get(name)
        if not rule:
            problems.append(f"no PrometheusRule {name} (the groups of deploy/observability/{source})")
        elif rule["metadata"].get("labels", {}).get("app.kubernetes.io/part-of") != "en-backend":
            problems.append(f"PrometheusRule/{name}: not labelled app.kubernetes.io/part-of: en-backend")
    return problems


def gateway_probe_problems(docs: list[dict]) -> list[str]:
    """The Probe gateway-tls hands every public TLS port of the gateway's Service to the blackbox exporter's module
    gateway_tls as job gateway-tls, and labels each target with service=gateway and the port's name as server (the
    labels the certificate rule and GatewayCertificateNotVerified read)."""
    probe = k8s_by_kind(docs, "Probe").get("gateway-tls")
    if not probe:
        return ["no Probe gateway-tls (the gateway's TLS certificate is not watched)"]
    spec = probe["spec"]
    problems = []
    if spec.get("jobName") != "gateway-tls" or spec.get("module") != "gateway_tls":
        problems.append("Probe/gateway-tls: not job gateway-tls with module gateway_tls")
    static = spec.get("targets", {}).get("staticConfig", {})
    if static.get("labels", {}).get("service") != "gateway":
        problems.append("Probe/gateway-tls: targets are not labelled service=gateway")
    servers = {}
    for rule in static.get("relabelingConfigs", []):
        if rule.get("targetLabel") == "server" and rule.get("sourceLabels") == ["__param_target"]:
            servers[rule.get("replacement")] = re.compile(rule.get("regex", ""))
    gateway = k8s_by_kind(docs, "Service").get("gateway", {})
    for port in gateway.get("spec", {}).get("ports", []):
        # The federation component's server (8446) presents the same certificate (ssl_certificate of the http block)
        # and exists only with that component.
        if port["name"] == "federation":
            continue
        targets = [t for t in static.get("static", []) if t.endswith(f":{port['port']}")]
        if not targets:
            problems.append(f"Probe/gateway-tls: the gateway's port {port['name']} ({port['port']}) is not probed")
        elif not (port["name"] in servers and servers[port["name"]].fullmatch(targets[0])):
            problems.append(f"Probe/gateway-tls: {targets[0]} is not labelled server={port['name']}")
    return problems


def check_k8s(ctx: Context) -> str:
    base = ctx.kustomize("base")
    overlays = {target: ctx.kustomize(target) for target in OVERLAYS}
    files = [str(ctx.kustomize_path("base")), *[str(without_operator_kinds(ctx.kustomize_path(t))) for t in OVERLAYS],
             str(ctx.dev / "secrets" / "k8s-secrets.yaml")]
    validator = str(Path(sys.executable).parent / "kubernetes-validate")
    for version in ctx.k8s_versions:
        result = ctx.run([validator, "--strict", "--quiet", "-k", version, *files])
        if result.returncode != 0:
            lines = [line for line in (result.stdout + result.stderr).splitlines() if "ERROR" in line or "WARN" in line]
            raise CheckFailed(f"kubernetes-validate --strict -k {version} failed", lines or result.stdout.splitlines())
    problems = []
    if any(d["kind"] == "Secret" for d in base):
        problems.append("the base contains a Secret: reference Secrets by name only")
    for target, docs in (("base", base), *overlays.items()):
        problems += [f"{target}: {p}" for p in k8s_rules(docs, overlay=target != "base")]
    if federation_rendered(base):
        problems.append("base: federation-service is an optional component, not part of the base")
    for target in FEDERATION_OVERLAYS:
        if not federation_rendered(overlays[target]):
            problems.append(f"{target}: the federation component (components/federation) is not included")
    if any(d["kind"] in OPERATOR_KINDS for d in base):
        problems.append("base: the Prometheus Operator's objects belong to the optional component components/monitoring")
    for target in MONITORING_OVERLAYS:
        problems += [f"{target}: {p}" for p in monitoring_rules(overlays[target])]
    generated = ctx.run([str(ctx.deploy / "observability" / "prometheus-rules.sh")])
    committed = ctx.deploy / "k8s" / "components" / "monitoring" / "prometheus-rules.yaml"
    if generated.returncode != 0 or not committed.exists() or generated.stdout != committed.read_text():
        problems.append("components/monitoring/prometheus-rules.yaml is not what deploy/observability/prometheus-rules.sh "
                        "makes of rules.yaml and alerts.yaml: run make observability-rules")
    if problems:
        raise CheckFailed("Kubernetes manifests", problems)
    counts = {}
    for d in base:
        counts[d["kind"]] = counts.get(d["kind"], 0) + 1
    summary = ", ".join(f"{n} {k}" for k, n in sorted(counts.items()))
    return (f"kustomize base, overlays/local and overlays/production-example render; kubernetes-validate --strict "
            f"against {' and '.join(ctx.k8s_versions)} (base: {summary}); database egress only from the pods that "
            f"use it, narrowed to the database in every overlay; data donation's internal port only from "
            f"submission-service, its servers' egress only to DNS, the database and the Internet on 443; the "
            f"federation component in "
            f"{', '.join(FEDERATION_OVERLAYS)}: its Deployment passes the same rules, both CronJobs Forbid, the callback "
            f"port only from the gateway, its pods' egress only to DNS, the database and the federation gateway's "
            f"ipBlock; the monitoring component in {', '.join(MONITORING_OVERLAYS)}: its ServiceMonitor scrapes the "
            f"port metrics of every Service whose pods serve 9090, as job en-services with the label service, "
            f"distribution-service and federation-service included (one pod of serve each in place of the "
            f"CronJobs; federation's without the callback), its Probe hands "
            f"each of the gateway's TLS ports to the blackbox exporter, labelled with the port's name, and its "
            f"PrometheusRules are rules.yaml and alerts.yaml as make observability-rules writes them")


def k8s_rules(docs: list[dict], overlay: bool = False) -> list[str]:
    problems = []
    deployments = k8s_by_kind(docs, "Deployment")
    services = k8s_by_kind(docs, "Service")
    for binary in ("test-result-service", "verification-service", "submission-service", "portal-service",
                   "data-donation-service"):
        if binary not in deployments:
            problems.append(f"no Deployment {binary}")
        if binary not in services:
            problems.append(f"no Service {binary}")
    if "gateway" not in deployments or "gateway" not in services:
        problems.append("no gateway Deployment and Service")
    for kind_name, spec in pod_specs(docs):
        psc = spec.get("securityContext", {})
        if not psc.get("runAsNonRoot"):
            problems.append(f"{kind_name}: runAsNonRoot is not set")
        if psc.get("seccompProfile", {}).get("type") != "RuntimeDefault":
            problems.append(f"{kind_name}: seccompProfile is not RuntimeDefault")
        for c in spec.get("initContainers", []) + spec.get("containers", []):
            where = f"{kind_name} container {c['name']}"
            sc = c.get("securityContext", {})
            if sc.get("allowPrivilegeEscalation") is not False:
                problems.append(f"{where}: allowPrivilegeEscalation is not false")
            if sc.get("readOnlyRootFilesystem") is not True:
                problems.append(f"{where}: readOnlyRootFilesystem is not true")
            if sc.get("capabilities", {}).get("drop") != ["ALL"]:
                problems.append(f"{where}: capabilities do not drop ALL")
            resources = c.get("resources", {})
            if not resources.get("requests") or not resources.get("limits"):
                problems.append(f"{where}: resource requests and limits are missing")
            if ":" not in c.get("image", "").split("/")[-1]:
                problems.append(f"{where}: image {c.get('image')} has no tag")
            if kind_name.startswith("Deployment/") and c in spec.get("containers", [])[1:]:
                # A second container (the gateway's exporter): liveness only, so it never makes the pod unready.
                if not c.get("livenessProbe") or c.get("readinessProbe"):
                    problems.append(f"{where}: a second container needs a liveness probe and no readiness probe")
            elif kind_name.startswith("Deployment/") and c in spec.get("containers", []):
                ready = c.get("readinessProbe", {})
                live = c.get("livenessProbe", {})
                if not ready or not live:
                    problems.append(f"{where}: readiness and liveness probes are missing")
                elif our_binary(c.get("image", "")):
                    if ready.get("httpGet", {}).get("path") != "/health/ready":
                        problems.append(f"{where}: readiness probe is not /health/ready")
                    if live.get("httpGet", {}).get("path") != "/health/live":
                        problems.append(f"{where}: liveness probe is not /health/live")
    # Monitoring scrapes only the metrics port: the annotation names a containerPort called metrics, which the
    # ConfigMap's METRICS_PORT sets, and the monitoring policy opens nothing else.
    for name, deployment in k8s_by_kind(docs, "Deployment").items():
        template = deployment["spec"]["template"]
        annotations = template.get("metadata", {}).get("annotations", {})
        if annotations.get("prometheus.io/scrape") != "true":
            continue
        ports = {p.get("name"): p.get("containerPort") for c in template["spec"]["containers"] for p in c.get("ports", [])}
        if "metrics" in ports and str(ports["metrics"]) != annotations.get("prometheus.io/port"):
            problems.append(f"Deployment/{name}: prometheus.io/port is not its metrics containerPort")
        elif "metrics" not in ports and not name.startswith("distribution"):
            problems.append(f"Deployment/{name}: scraped, but has no containerPort named metrics")
    monitoring = k8s_by_kind(docs, "NetworkPolicy").get("metrics-from-monitoring")
    if monitoring:
        opened = {p.get("port") for rule in monitoring["spec"].get("ingress", []) for p in rule.get("ports", [])}
        if opened != {9090}:
            problems.append(f"NetworkPolicy/metrics-from-monitoring opens {sorted(opened)}, not the metrics port 9090 alone")
    cron = k8s_by_kind(docs, "CronJob").get("distribution")
    served = k8s_by_kind(docs, "Deployment").get("distribution-service")
    if cron and served:
        problems.append("both CronJob distribution and Deployment distribution-service: one of them publishes")
    elif served:
        # components/distribution-serve: one pod of `serve`, at most an hour between runs, scraped on 9090.
        env = k8s_container_env(served["spec"]["template"]["spec"]["containers"][0])
        problems += serve_pod_problems("distribution-service", served, env)
        if env.get("DISTRIBUTION_INTERVAL") not in ("1h", "60m", "3600s", "3600"):
            problems.append("Deployment distribution-service: DISTRIBUTION_INTERVAL is not one hour")
    elif not cron:
        problems.append("no CronJob distribution")
    else:
        if cron["spec"].get("concurrencyPolicy") != "Forbid":
            problems.append("CronJob distribution: concurrencyPolicy is not Forbid")
        if not re.match(r"^\d+ \* \* \* \*$", cron["spec"].get("schedule", "")):
            problems.append("CronJob distribution: schedule is not hourly")
        container = cron["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"][0]
        if container.get("args") != ["run"]:
            problems.append("CronJob distribution: does not run `distribution-service run`")
    if federation_rendered(docs):
        problems += federation_rules(docs)
    jobs = k8s_by_kind(docs, "Job")
    for short in ("test-result", "verification", "submission", "portal", "data-donation"):
        job = jobs.get(f"migrate-{short}")
        if not job or job["spec"]["template"]["spec"]["containers"][0].get("args") != ["--migrate-only"]:
            problems.append(f"no Job migrate-{short} running --migrate-only")
    hpas = {h["spec"]["scaleTargetRef"]["name"] for h in k8s_by_kind(docs, "HorizontalPodAutoscaler").values()}
    for binary in ("submission-service", "verification-service", "test-result-service", "data-donation-service"):
        if binary not in hpas:
            problems.append(f"no HorizontalPodAutoscaler for {binary}")
    pdb_selectors = [p["spec"]["selector"]["matchLabels"] for p in k8s_by_kind(docs, "PodDisruptionBudget").values()]
    for name, deployment in deployments.items():
        if deployment["spec"]["selector"]["matchLabels"] not in pdb_selectors:
            problems.append(f"Deployment {name}: no PodDisruptionBudget")
    problems += network_rules(docs, overlay)
    problems += k8s_internal_url_problems(docs)
    return problems


def k8s_internal_url_problems(docs: list[dict]) -> list[str]:
    """Every `<PEER>_INTERNAL_URL` of a service's ConfigMap names a Service's port called `internal`."""
    problems = []
    services = k8s_by_kind(docs, "Service")
    for name, configmap in k8s_by_kind(docs, "ConfigMap").items():
        for key, value in (configmap.get("data") or {}).items():
            if not key.endswith("_INTERNAL_URL"):
                continue
            url = urllib.parse.urlsplit(value)
            svc = services.get(url.hostname or "")
            ports = {p["port"]: p.get("name") for p in (svc or {}).get("spec", {}).get("ports", [])}
            if ports.get(url.port) != "internal":
                problems.append(f"ConfigMap {name}: {key}={value} is not the internal port of a Service")
    return problems


def serve_pod_problems(name: str, deployment: dict, env: dict[str, str]) -> list[str]:
    """A job's runs as one `serve` pod (components/distribution-serve, components/federation-serve): one replica that
    a rollout replaces rather than doubles, its one listener on the metrics port 9090."""
    problems = []
    if deployment["spec"]["template"]["spec"]["containers"][0].get("args") != ["serve"]:
        problems.append(f"Deployment {name}: does not run `{name} serve`")
    if deployment["spec"].get("replicas") != 1 or deployment["spec"].get("strategy", {}).get("type") != "Recreate":
        problems.append(f"Deployment {name}: not one replica with strategy Recreate")
    if env.get("HTTP_PORT") != "9090":
        problems.append(f"Deployment {name}: HTTP_PORT is not the metrics port 9090")
    return problems


def federation_rules(docs: list[dict]) -> list[str]:
    """The federation component: `serve` only takes callbacks (through the gateway) while the CronJobs run uploads
    and downloads, every few minutes and never two at once; the overlay replaced the site's placeholders."""
    problems = []
    configmaps = k8s_by_kind(docs, "ConfigMap")

    def settings(container: dict) -> dict[str, str]:
        values: dict[str, str] = {}
        for source in container.get("envFrom", []):
            if "configMapRef" in source:
                values.update(configmaps.get(source["configMapRef"]["name"], {}).get("data", {}))
        values.update({e["name"]: str(e["value"]) for e in container.get("env", []) if "value" in e})
        return values

    deployment = k8s_by_kind(docs, "Deployment").get("federation-callback")
    if deployment is None:
        problems.append("no Deployment federation-callback")
    else:
        container = deployment["spec"]["template"]["spec"]["containers"][0]
        config = settings(container)
        if container.get("args") != ["serve"]:
            problems.append("Deployment federation-callback: does not run `federation-service serve`")
        if config.get("FEDERATION_CALLBACK_ONLY") != "true":
            problems.append("Deployment federation-callback: FEDERATION_CALLBACK_ONLY is not true (serve would upload "
                            "and download beside the CronJobs, with the gateway's credentials)")
        mounted = {v.get("secret", {}).get("secretName") for v in deployment["spec"]["template"]["spec"].get("volumes", [])}
        if "federation-certificates" in mounted:
            problems.append("Deployment federation-callback: mounts federation-certificates (the client and signing "
                            "keys), which only the CronJobs need")
        ports = [p.get("containerPort") for p in container.get("ports", [])]
        if config.get("HTTP_PORT") != str(FEDERATION_CALLBACK_PORT) or FEDERATION_CALLBACK_PORT not in ports:
            problems.append(f"Deployment federation-callback: HTTP_PORT and the containerPort are not {FEDERATION_CALLBACK_PORT}")
        if not config.get("EFGS_CALLBACK_CERT_CN") or config.get("CALLBACK_CERT_HEADER") != "X-SSL-Client-Cert" \
                or not config.get("CALLBACK_CA_FILE"):
            problems.append("Deployment federation-callback: the callback is not taken through the gateway "
                            "(EFGS_CALLBACK_CERT_CN, CALLBACK_CERT_HEADER=X-SSL-Client-Cert, CALLBACK_CA_FILE)")
        for key in FEDERATION_SITE_SETTINGS:
            if ".invalid" in config.get(key, ".invalid"):
                problems.append(f"federation-config: {key} is not set (the component's placeholder is left): the "
                                "overlay patches it")
    service = k8s_by_kind(docs, "Service").get("federation-callback")
    if not service or FEDERATION_CALLBACK_PORT not in [p["port"] for p in service["spec"]["ports"]]:
        problems.append(f"no Service federation-callback on {FEDERATION_CALLBACK_PORT}")
    crons = k8s_by_kind(docs, "CronJob")
    runner = k8s_by_kind(docs, "Deployment").get("federation-service")
    if runner:
        # components/federation-serve: one pod of `serve` without the callback does the runs, scraped on 9090.
        if any(name in crons for name in ("federation-upload", "federation-download")):
            problems.append("Deployment federation-service and the CronJobs both run uploads and downloads")
        pod = runner["spec"]["template"]
        container = pod["spec"]["containers"][0]
        config = settings(container)
        problems += serve_pod_problems("federation-service", runner, config)
        if config.get("FEDERATION_CALLBACK_ONLY", "false") != "false":
            problems.append("Deployment federation-service: FEDERATION_CALLBACK_ONLY is set, so it would not run")
        if any(config.get(key) for key in ("EFGS_CALLBACK_CERT_CN", "CALLBACK_CERT_HEADER", "CALLBACK_CA_FILE")) \
                or any(e["name"] == "GATEWAY_SECRET" for e in container.get("env", [])):
            problems.append("Deployment federation-service: takes callbacks (they are federation-callback's)")
        if pod["metadata"].get("labels", {}).get("app.kubernetes.io/component") != "job":
            problems.append("Deployment federation-service: its pods are not labelled component=job (the runs' "
                            "NetworkPolicies select that)")
        return problems
    for name, command in (("federation-upload", "upload"), ("federation-download", "download")):
        cron = crons.get(name)
        if not cron:
            problems.append(f"no CronJob {name}")
            continue
        if cron["spec"].get("concurrencyPolicy") != "Forbid":
            problems.append(f"CronJob {name}: concurrencyPolicy is not Forbid")
        if not re.match(r"^(\*|\d+-\d+)/([1-9]|[1-2][0-9]|30) \* \* \* \*$", cron["spec"].get("schedule", "")):
            problems.append(f"CronJob {name}: schedule is not every few minutes (every 30 or fewer)")
        container = cron["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"][0]
        if container.get("args") != [command]:
            problems.append(f"CronJob {name}: does not run `federation-service {command}`")
    return problems


def network_rules(docs: list[dict], overlay: bool = False) -> list[str]:
    """Who may reach which port, evaluated from the NetworkPolicies like the API server would (ingress side)."""
    policies = list(k8s_by_kind(docs, "NetworkPolicy").values())
    problems = []
    federation = federation_rendered(docs)
    if not any(p["spec"].get("podSelector") == {} and set(p["spec"].get("policyTypes", [])) >= {"Ingress", "Egress"}
               and not p["spec"].get("ingress") and not p["spec"].get("egress") for p in policies):
        problems.append("no default-deny NetworkPolicy (ingress and egress) for the namespace")

    def matches(selector: dict, labels: dict) -> bool:
        for k, v in selector.get("matchLabels", {}).items():
            if labels.get(k) != v:
                return False
        for expr in selector.get("matchExpressions", []):
            value = labels.get(expr["key"])
            if expr["operator"] == "In" and value not in expr["values"]:
                return False
            if expr["operator"] == "NotIn" and value in expr["values"]:
                return False
            if expr["operator"] == "Exists" and value is None:
                return False
        return True

    def pod(name: str, component: str = "server") -> dict:
        return {"app.kubernetes.io/name": name, "app.kubernetes.io/component": component,
                "app.kubernetes.io/part-of": "en-backend"}

    def allowed(source: dict | None, target: dict, port: int) -> bool:
        """Ingress to target:port from a pod of the namespace with labels `source` (None: outside the cluster)."""
        selecting = [p for p in policies if "Ingress" in p["spec"].get("policyTypes", ["Ingress"])
                     and matches(p["spec"].get("podSelector", {}), target)]
        for p in selecting:
            for rule in p["spec"].get("ingress", []) or []:
                ports = [x.get("port") for x in rule.get("ports", [])]
                if ports and port not in ports:
                    continue
                peers = rule.get("from")
                if not peers:
                    return True
                for peer in peers:
                    if "ipBlock" in peer and source is None:
                        return True
                    if "podSelector" in peer and "namespaceSelector" not in peer and source is not None \
                            and matches(peer["podSelector"], source):
                        return True
        return False

    expectations = [
        # (source, target, port, allowed?)
        (None, "gateway", 8443, True), (None, "gateway", 8444, True), (None, "gateway", 8445, True),
        ("gateway", "verification-service", 8002, True), ("gateway", "verification-service", 8012, False),
        ("submission-service", "verification-service", 8012, True),
        ("portal-service", "verification-service", 8012, True),
        ("test-result-service", "verification-service", 8012, False),
        ("distribution-service", "verification-service", 8012, False),
        ("gateway", "test-result-service", 8003, True), ("gateway", "test-result-service", 8013, False),
        ("verification-service", "test-result-service", 8013, True),
        ("submission-service", "test-result-service", 8013, False),
        ("portal-service", "test-result-service", 8013, False),
        ("gateway", "submission-service", 8001, True), ("verification-service", "submission-service", 8001, False),
        ("gateway", "portal-service", 8004, True), (None, "portal-service", 8004, False),
        (None, "verification-service", 8012, False), (None, "test-result-service", 8013, False),
        ("gateway", "data-donation-service", 8007, True), ("gateway", "data-donation-service", 8017, False),
        ("submission-service", "data-donation-service", 8017, True),
        ("submission-service", "data-donation-service", 8007, False),
        ("verification-service", "data-donation-service", 8017, False),
        ("portal-service", "data-donation-service", 8017, False),
        ("test-result-service", "data-donation-service", 8017, False),
        ("distribution-service", "data-donation-service", 8017, False),
        (None, "data-donation-service", 8007, False), (None, "data-donation-service", 8017, False),
    ]
    if federation:
        expectations += [
            (None, "gateway", 8446, True), ("gateway", "federation-service", FEDERATION_CALLBACK_PORT, True),
            (None, "federation-service", FEDERATION_CALLBACK_PORT, False),
            ("submission-service", "federation-service", FEDERATION_CALLBACK_PORT, False),
            ("distribution-service", "federation-service", FEDERATION_CALLBACK_PORT, False),
        ]
    for source, target, port, expected in expectations:
        got = allowed(None if source is None else pod(source), pod(target), port)
        if got != expected:
            who = source or "outside the cluster"
            problems.append(f"NetworkPolicies {'allow' if got else 'deny'} {who} → {target}:{port}"
                            f" (expected {'allowed' if expected else 'denied'})")
    # Database: port 5432 only from the pods that connect to it (egress side: the other pods have no rule that opens
    # it), on 5432 only; in an overlay only towards the database (a pod selector or an ipBlock, never anywhere).
    # (federation-service is an optional component, efgs-gateway compose's rehearsal gateway only.)
    k8s_binaries = [name for name in BINARIES if name not in ("federation-service", "efgs-gateway")]
    database_pods = {(name, "server") for name in k8s_binaries if name != "distribution-service"} \
        | {(name, "migration") for name in k8s_binaries if name != "distribution-service"} \
        | {("distribution-service", "job")}
    if federation:
        # The federation component's callback server and its CronJobs' jobs use the keys database.
        database_pods |= {("federation-service", "server"), ("federation-service", "job")}
    # The pods of the manifests, and what else may run in the namespace: a debug or tool pod of an owner's image.
    candidates = database_pods | {("gateway", "server"), ("postgres", "server")} \
        | {(name, "debug") for name in [*k8s_binaries, "federation-service"]}
    clients = set()
    for p in policies:
        if "Egress" not in p["spec"].get("policyTypes", []):
            continue
        for rule in p["spec"].get("egress", []) or []:
            ports = [x.get("port") for x in rule.get("ports", [])]
            if 5432 in ports or not ports:
                selected = {c for c in candidates if matches(p["spec"].get("podSelector", {}), pod(*c))}
                if selected and not ports:
                    problems.append(f"NetworkPolicy {p['metadata']['name']}: an egress rule without ports for "
                                    f"{sorted(n for n, _ in selected)}")
                if 5432 in ports and ports != [5432]:
                    problems.append(f"NetworkPolicy {p['metadata']['name']}: the database rule opens more than 5432")
                if 5432 in ports:
                    clients |= selected
                    if overlay and not rule.get("to"):
                        problems.append(f"NetworkPolicy {p['metadata']['name']}: database egress to anywhere; an "
                                        "overlay narrows it to the database (egress/0/to: a podSelector or an ipBlock)")
                    for peer in rule.get("to") or []:
                        cidr = peer.get("ipBlock", {}).get("cidr", "")
                        if cidr and int(cidr.rpartition("/")[2] or 0) < 24:
                            problems.append(f"NetworkPolicy {p['metadata']['name']}: database egress to {cidr}, "
                                            "wider than the database's addresses")
    def names(pods: set) -> str:
        return ", ".join(f"{n} ({c})" for n, c in sorted(pods))
    if clients - database_pods:
        problems.append(f"database egress (5432) is open to pods that do not use it: {names(clients - database_pods)}")
    if database_pods - clients:
        problems.append(f"database egress (5432) is closed to {names(database_pods - clients)}")
    # An in-cluster database (the local overlay): its ingress admits exactly those pods, on 5432.
    if any(p["spec"].get("podSelector", {}).get("matchLabels", {}).get("app.kubernetes.io/name") == "postgres"
           for p in policies):
        admitted = {c for c in candidates if allowed(pod(*c), {"app.kubernetes.io/name": "postgres"}, 5432)}
        if admitted - database_pods:
            problems.append(f"the postgres pod admits pods that do not use it: {names(admitted - database_pods)}")
        if database_pods - admitted:
            problems.append(f"the postgres pod refuses {names(database_pods - admitted)}")
        if any(allowed(pod(*c), {"app.kubernetes.io/name": "postgres"}, 5433) for c in candidates):
            problems.append("the postgres pod admits ports other than 5432")
    problems += data_donation_network_rules(policies, matches, pod)
    if federation:
        problems += federation_network_rules(policies, matches, pod, candidates)
    return problems


# What data-donation-service's egress to Apple's DeviceCheck API must leave out: the private, shared (CGNAT),
# loopback and link-local blocks, where the cluster, the nodes and the cloud's metadata service are.
NON_INTERNET_BLOCKS = ("10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16", "172.16.0.0/12", "192.168.0.0/16")


def data_donation_network_rules(policies: list[dict], matches, pod) -> list[str]:
    """data-donation-service: its servers' egress only to DNS, the database and the Internet on 443 (DeviceCheck),
    never to the cluster's or other private addresses; its migration pods' egress not to the Internet; the callers'
    egress reaching it (the gateway the app port, submission-service the internal port)."""
    import ipaddress

    problems: set[str] = set()
    private = [ipaddress.ip_network(block) for block in NON_INTERNET_BLOCKS]
    for component in ("server", "migration"):
        source = pod("data-donation-service", component)
        internet = False
        for p in policies:
            name = p["metadata"]["name"]
            if "Egress" not in p["spec"].get("policyTypes", []) or not matches(p["spec"].get("podSelector", {}), source):
                continue
            for rule in p["spec"].get("egress", []) or []:
                ports = sorted({x.get("port") for x in rule.get("ports", [])})
                peers = rule.get("to") or []
                if ports == [53] and peers and all(
                        peer.get("podSelector", {}).get("matchLabels", {}).get("k8s-app") == "kube-dns" for peer in peers):
                    continue   # DNS
                if ports == [5432]:
                    continue   # the database, narrowed in every overlay (network_rules)
                if ports == [443] and peers and all(set(peer) == {"ipBlock"} for peer in peers):
                    for peer in peers:
                        block = ipaddress.ip_network(peer["ipBlock"].get("cidr", "0.0.0.0/0"), strict=False)
                        excepted = [ipaddress.ip_network(e, strict=False) for e in peer["ipBlock"].get("except", [])]
                        for net in private:
                            if block.version == net.version and block.overlaps(net) and not any(
                                    net.subnet_of(e) for e in excepted if e.version == net.version):
                                problems.add(f"NetworkPolicy {name}: data-donation-service ({component}) may open 443 "
                                             f"in {net}, where the cluster and the nodes are: except it")
                    internet = True
                    continue
                problems.add(f"NetworkPolicy {name}: data-donation-service ({component}) may open {ports or 'every port'} "
                             f"to {peers or 'anywhere'}; only DNS, the database and the Internet on 443 are allowed")
        if component == "server" and not internet:
            problems.add("data-donation-service (server) has no egress on 443 to Apple's DeviceCheck API")
        if component == "migration" and internet:
            problems.add("data-donation-service (migration) may reach the Internet: a migration needs the database only")

    def reaches(source: dict, port: int) -> bool:
        target = pod("data-donation-service")
        return any("Egress" in p["spec"].get("policyTypes", []) and matches(p["spec"].get("podSelector", {}), source)
                   and any((not rule.get("ports") or port in [x.get("port") for x in rule["ports"]])
                           and any("podSelector" in peer and "namespaceSelector" not in peer
                                   and matches(peer["podSelector"], target) for peer in rule.get("to") or [])
                           for rule in p["spec"].get("egress", []) or [])
                   for p in policies)

    if not reaches(pod("gateway"), 8007):
        problems.add("the gateway's egress does not reach data-donation-service:8007")
    if not reaches(pod("submission-service"), 8017):
        problems.add("submission-service's egress does not reach data-donation-service:8017")
    return sorted(problems)


def federation_network_rules(policies: list[dict], matches, pod, candidates: set) -> list[str]:
    """The federation component: its callback port only from the gateway's pods (no namespace, address or other pod);
    its pods' egress only to DNS, the database (narrowed with the other clients) and the federation gateway's
    ipBlock on 443, set by the overlay; the gateway's egress reaching the callback."""
    problems: set[str] = set()
    callback = pod("federation-service")
    port = FEDERATION_CALLBACK_PORT
    for p in policies:
        name = p["metadata"]["name"]
        if "Ingress" not in p["spec"].get("policyTypes", ["Ingress"]) or not matches(p["spec"].get("podSelector", {}), callback):
            continue
        for rule in p["spec"].get("ingress", []) or []:
            ports = [x.get("port") for x in rule.get("ports", [])]
            if ports and port not in ports:
                continue
            if not rule.get("from"):
                problems.add(f"NetworkPolicy {name}: federation-callback:{port} is open to anyone")
            for peer in rule.get("from") or []:
                others = {c for c in candidates if "podSelector" in peer and matches(peer["podSelector"], pod(*c))}
                others -= {("gateway", "server")}
                if set(peer) != {"podSelector"} or others:
                    problems.add(f"NetworkPolicy {name}: federation-callback:{port} is open to {peer} (only the gateway's "
                                 "pods may reach it)")
    # The runs (CronJobs) call the federation gateway; the callback server (callback-only) must not.
    for component in ("server", "job"):
        source = pod("federation-service", component)
        reaches_gateway = False
        for p in policies:
            name = p["metadata"]["name"]
            if "Egress" not in p["spec"].get("policyTypes", []) or not matches(p["spec"].get("podSelector", {}), source):
                continue
            for rule in p["spec"].get("egress", []) or []:
                ports = sorted({x.get("port") for x in rule.get("ports", [])})
                peers = rule.get("to") or []
                if ports == [53] and peers and all(
                        peer.get("podSelector", {}).get("matchLabels", {}).get("k8s-app") == "kube-dns" for peer in peers):
                    continue   # DNS
                if ports == [5432]:
                    continue   # the database, narrowed in every overlay (network_rules)
                if ports == [443] and peers and all(set(peer) == {"ipBlock"} for peer in peers):
                    for peer in peers:
                        cidr = peer["ipBlock"].get("cidr", "")
                        if cidr == FEDERATION_EGRESS_PLACEHOLDER:
                            problems.add(f"NetworkPolicy {name}: the federation gateway's address is the component's "
                                         f"placeholder {cidr}: the overlay sets it")
                        elif int(cidr.rpartition("/")[2] or 0) < 24:
                            problems.add(f"NetworkPolicy {name}: federation egress to {cidr}, wider than the federation "
                                         "gateway's addresses")
                    reaches_gateway = True
                    continue
                problems.add(f"NetworkPolicy {name}: federation-service ({component}) may open {ports or 'every port'} "
                             f"to {peers or 'anywhere'}; only DNS, the database and the federation gateway's ipBlock on "
                             "443 are allowed")
        if component == "job" and not reaches_gateway:
            problems.add("federation-service (job) has no egress to the federation gateway's ipBlock on 443")
        if component == "server" and reaches_gateway:
            problems.add("federation-service (server) may reach the federation gateway: the callback server takes "
                         "callbacks only")
    gateway = pod("gateway")
    if not any("Egress" in p["spec"].get("policyTypes", []) and matches(p["spec"].get("podSelector", {}), gateway)
               and any((not rule.get("ports") or port in [x.get("port") for x in rule["ports"]])
                       and any("podSelector" in peer and "namespaceSelector" not in peer
                               and matches(peer["podSelector"], callback) for peer in rule.get("to") or [])
                       for rule in p["spec"].get("egress", []) or [])
               for p in policies):
        problems.add(f"the gateway's egress does not reach federation-callback:{port}")
    return sorted(problems)


# ---------------------------------------------------------------------------------------------------------------
# Dockerfile


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
    args = {i["value"].split("=")[0] for i in instructions if i["instruction"] == "ARG"}
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


# ---------------------------------------------------------------------------------------------------------------
# env examples and every other place that sets a service's settings


def check_env_keys(ctx: Context) -> str:
    problems = []
    counted = 0
    for short, binary in SERVICES.items():
        known = ctx.help_keys(binary)
        path = ctx.deploy / "env" / f"{short}.env.example"
        if not path.exists():
            problems.append(f"{path.relative_to(ctx.root)} is missing")
            continue
        _, named = env_example_keys(path)
        missing, unknown = sorted(known - named), sorted(named - known)
        if missing:
            problems.append(f"{path.name} does not name {', '.join(missing)} (read by {binary}; add `# KEY=default`)")
        if unknown:
            problems.append(f"{path.name} names {', '.join(unknown)}, which {binary} does not read")
        counted += len(named)
    # Everything that sets a service's environment elsewhere must use keys the service reads, since unknown
    # variables are ignored silently: compose (env_file + environment) and the Kubernetes workloads.
    for name, svc in ctx.compose_config()["services"].items():
        binary = our_binary(str(svc.get("image", "")))
        if binary:
            unknown = sorted(set(svc.get("environment", {})) - ctx.help_keys(binary) - {"EN_SERVICE"})
            if unknown:
                problems.append(f"compose service {name} sets {', '.join(unknown)}, which {binary} does not read")
    for target in ("base", *OVERLAYS):
        docs = ctx.kustomize(target)
        configmaps = k8s_by_kind(docs, "ConfigMap")
        secrets = ctx.dev_secrets()
        if target in FEDERATION_OVERLAYS and not any(name.startswith("federation-config") for name in configmaps):
            problems.append(f"{target}: no ConfigMap federation-config (the federation component)")
        for kind_name, spec in pod_specs(docs):
            for c in spec.get("initContainers", []) + spec.get("containers", []):
                binary = our_binary(c.get("image", ""))
                if not binary:
                    continue
                keys = {e["name"] for e in c.get("env", [])}
                for source in c.get("envFrom", []):
                    if "configMapRef" in source:
                        cm = configmaps.get(source["configMapRef"]["name"])
                        if cm is None:
                            problems.append(f"{target} {kind_name}: ConfigMap {source['configMapRef']['name']} is not rendered")
                        else:
                            keys |= set(cm.get("data", {}))
                    if "secretRef" in source:
                        keys |= set(secrets.get(source["secretRef"]["name"], {}))
                unknown = sorted(keys - ctx.help_keys(binary))
                if unknown:
                    problems.append(f"{target} {kind_name} container {c['name']} sets {', '.join(unknown)}, "
                                    f"which {binary} does not read")
    if problems:
        raise CheckFailed("configuration keys", problems)
    return (f"deploy/env/*.env.example name exactly the {counted} settings the {len(SERVICES)} binaries read (--help); "
            "compose and Kubernetes (base, both overlays, the federation component's federation-config) set only "
            "known keys")


# ---------------------------------------------------------------------------------------------------------------
# gateway


def check_gateway(ctx: Context) -> str:
    template = (ctx.deploy / "gateway" / "gateway.conf.template").read_text()
    placeholders = set(PLACEHOLDER.findall(template))
    # The federation gateway's callback server, a second template where a deployment mounts it.
    federation_placeholders = set(PLACEHOLDER.findall((ctx.deploy / "gateway" / "federation.conf.template").read_text()))
    # The monitoring component's stub_status server (its overlays: the production example).
    status_placeholders = set(PLACEHOLDER.findall((ctx.deploy / "gateway" / "status.conf.template").read_text()))
    problems = []
    services = ctx.compose_config()["services"]
    gateway = services.get("gateway", {})
    compose_env = {k: str(v) for k, v in gateway.get("environment", {}).items()}
    volumes = " ".join(gateway.get("volumes", []))
    compose_federation = "federation.conf.template:/etc/nginx/templates/federation.conf.template" in volumes
    compose_placeholders = placeholders | (federation_placeholders if compose_federation else set())
    problems += [f"compose: {p}" for p in gateway_env_problems(compose_env, compose_placeholders)]
    if "gateway.conf.template:/etc/nginx/templates/gateway.conf.template" not in volumes:
        problems.append("compose: the template is not mounted at /etc/nginx/templates/gateway.conf.template")
    if "nginx.container.conf:/etc/nginx/nginx.conf" not in volumes:
        problems.append("compose: nginx.container.conf is not mounted over /etc/nginx/nginx.conf")
    if f"client-key.js:{compose_env.get('GATEWAY_CLIENT_KEY_JS')}:ro" not in volumes:
        problems.append("compose: client-key.js is not mounted at GATEWAY_CLIENT_KEY_JS")
    if f"signed-files.js:{compose_env.get('GATEWAY_SIGNED_FILES_JS')}:ro" not in volumes:
        problems.append("compose: signed-files.js is not mounted at GATEWAY_SIGNED_FILES_JS")
    if not any(v.split(":")[0].endswith("/client-key.envsh") and ENVSH_MOUNT.match(v.split(":")[1])
               for v in gateway.get("volumes", [])):
        problems.append("compose: client-key.envsh is not mounted as /docker-entrypoint.d/NN-….envsh (before the "
                        "template is rendered), so no per-start key for the per-client limits")
    if not any(str(t).split(":")[0] == "/etc/nginx/conf.d" for t in gateway.get("tmpfs", [])):
        problems.append("compose: /etc/nginx/conf.d (the rendered configuration with its keys) is not a tmpfs")
    if compose_env.get("GATEWAY_SECRET") != str(services.get("test-result-service", {}).get("environment", {}).get("GATEWAY_SECRET")):
        problems.append("compose: the gateway and test-result-service do not get the same GATEWAY_SECRET")
    for key in ("VERIFICATION", "SUBMISSION", "TESTRESULT", "PORTAL", "DATADONATION"):
        upstream = compose_env.get(f"GATEWAY_{key}_UPSTREAM", ":")
        host, _, port = upstream.rpartition(":")
        target = services.get(host)
        if not target or str(target.get("environment", {}).get("HTTP_PORT")) != port:
            problems.append(f"compose: GATEWAY_{key}_UPSTREAM={upstream} is not a service's HTTP_PORT")
        elif not set(gateway.get("networks", {})) & set(target.get("networks", {})):
            problems.append(f"compose: the gateway shares no network with {host}")
    if compose_federation:
        upstream = compose_env.get("GATEWAY_FEDERATION_UPSTREAM", ":")
        host, _, port = upstream.rpartition(":")
        target = services.get(host, {})
        if host != "federation-service" or str(target.get("environment", {}).get("HTTP_PORT")) != port:
            problems.append(f"compose: GATEWAY_FEDERATION_UPSTREAM={upstream} is not federation-service's HTTP_PORT")
        elif not set(gateway.get("networks", {})) & set(target.get("networks", {})):
            problems.append("compose: the gateway shares no network with federation-service")
        if compose_env.get("GATEWAY_SECRET") != str(target.get("environment", {}).get("GATEWAY_SECRET")):
            problems.append("compose: the gateway and federation-service do not get the same GATEWAY_SECRET")
        if f"{compose_env.get('GATEWAY_FEDERATION_PORT')}:{compose_env.get('GATEWAY_FEDERATION_PORT')}" not in [
                str(p) for p in gateway.get("ports", [])] and not any(
                str(p.get("target")) == compose_env.get("GATEWAY_FEDERATION_PORT") for p in gateway.get("ports", [])
                if isinstance(p, dict)):
            problems.append("compose: the callback server's port GATEWAY_FEDERATION_PORT is not published")
    cdn_mount = [v for v in gateway.get("volumes", []) if v.endswith(f":{compose_env.get('GATEWAY_CDN_ROOT')}:ro")]
    dist = services.get("distribution-service", {})
    dist_dir = dist.get("environment", {}).get("CDN_DIRECTORY")
    if not cdn_mount or not any(v.startswith(cdn_mount[0].split(":")[0] + ":") and v.split(":")[1] == dist_dir
                                for v in dist.get("volumes", [])):
        problems.append("compose: the gateway does not serve the volume distribution writes (CDN_DIRECTORY)")

    docs = ctx.kustomize("base")
    deployment = k8s_by_kind(docs, "Deployment").get("gateway")
    k8s_env: dict[str, str] = {}
    if deployment is None:
        problems.append("k8s: no gateway Deployment")
    else:
        container = deployment["spec"]["template"]["spec"]["containers"][0]
        k8s_env = k8s_container_env(container)
        problems += [f"k8s: {p}" for p in gateway_env_problems(k8s_env, placeholders)]
        mounts = {m["mountPath"]: m for m in container.get("volumeMounts", [])}
        if mounts.get("/etc/nginx/templates/gateway.conf.template", {}).get("subPath") != "gateway.conf.template":
            problems.append("k8s: the template is not mounted at /etc/nginx/templates/gateway.conf.template")
        if mounts.get("/etc/nginx/nginx.conf", {}).get("subPath") != "nginx.conf":
            problems.append("k8s: nginx.container.conf is not mounted over /etc/nginx/nginx.conf")
        if "/etc/nginx/conf.d" not in mounts:
            problems.append("k8s: /etc/nginx/conf.d (the rendered configuration) is not a writable volume")
        volumes = {v["name"]: v for v in deployment["spec"]["template"]["spec"].get("volumes", [])}
        if volumes.get(mounts.get("/etc/nginx/conf.d", {}).get("name"), {}).get("emptyDir", {}).get("medium") != "Memory":
            problems.append("k8s: /etc/nginx/conf.d (the rendered configuration with its keys) is not a memory-backed emptyDir")
        if mounts.get(k8s_env.get("GATEWAY_CLIENT_KEY_JS", ""), {}).get("subPath") != "client-key.js":
            problems.append("k8s: client-key.js is not mounted at GATEWAY_CLIENT_KEY_JS")
        if mounts.get(k8s_env.get("GATEWAY_SIGNED_FILES_JS", ""), {}).get("subPath") != "signed-files.js":
            problems.append("k8s: signed-files.js is not mounted at GATEWAY_SIGNED_FILES_JS")
        envsh = [m for path, m in mounts.items() if ENVSH_MOUNT.match(path) and m.get("subPath") == "client-key.envsh"]
        if not envsh:
            problems.append("k8s: client-key.envsh is not mounted as /docker-entrypoint.d/NN-….envsh")
        elif not volumes.get(envsh[0]["name"], {}).get("configMap", {}).get("defaultMode", 0o644) & 0o111:
            problems.append("k8s: client-key.envsh is not executable (the entrypoint ignores it then): set defaultMode")
        service = k8s_by_kind(docs, "Service").get("gateway", {})
        if service.get("spec", {}).get("externalTrafficPolicy") != "Local":
            problems.append("k8s: the gateway Service's externalTrafficPolicy is not Local: nginx would see node "
                            "addresses, and every client behind a node would share one per-client budget")
        tr = k8s_by_kind(docs, "Deployment").get("test-result-service", {})
        tr_env = {e["name"]: e for c in tr.get("spec", {}).get("template", {}).get("spec", {}).get("containers", [])
                  for e in c.get("env", [])}
        tr_ref = tr_env.get("GATEWAY_SECRET", {}).get("valueFrom", {}).get("secretKeyRef", {})
        if k8s_env.get("GATEWAY_SECRET") != f"<secret {tr_ref.get('name')}/{tr_ref.get('key')}>":
            problems.append("k8s: the gateway and test-result-service do not read GATEWAY_SECRET from one Secret key")
        k8s_services = k8s_by_kind(docs, "Service")
        for key in ("VERIFICATION", "SUBMISSION", "TESTRESULT", "PORTAL", "DATADONATION"):
            upstream = k8s_env.get(f"GATEWAY_{key}_UPSTREAM", ":")
            host, _, port = upstream.rpartition(":")
            svc = k8s_services.get(host)
            if not svc or int(port or 0) not in [p["port"] for p in svc["spec"]["ports"]]:
                problems.append(f"k8s: GATEWAY_{key}_UPSTREAM={upstream} is not a Service port")
    # The federation component's gateway (its overlays): the fourth server's template and CA mounted, its port on the
    # Service, the callback's Service as upstream, one GATEWAY_SECRET for both.
    federation_envs: list[tuple[str, dict[str, str]]] = []
    for target in FEDERATION_OVERLAYS:
        federation_env: dict[str, str] = {}
        problems += [f"k8s {target}: {p}" for p in k8s_federation_gateway_problems(
            ctx.kustomize(target), placeholders | federation_placeholders | status_placeholders, federation_env)]
        federation_envs.append((f"k8s-{target.rpartition('/')[2]}", federation_env))

    # What the template promises about addresses and limits, and the budgets each deployment sets.
    problems += gateway_template_problems(template)
    deployments = (("compose", compose_env), ("k8s", k8s_env), *federation_envs)
    for label, env in deployments:
        if env:
            problems += [f"{label}: {p}" for p in gateway_rate_problems(env)]
    # Render the template as each deployment does and load it with nginx -t, inside nginx.container.conf.
    for label, env in deployments:
        if env:
            problems += [f"{label}: {p}" for p in nginx_test(ctx, label, env)]
    if problems:
        raise CheckFailed("gateway configuration", problems)
    return (f"all {len(compose_placeholders)} ${{GATEWAY_*}} placeholders get values in compose and Kubernetes (the per-client "
            f"key at every start); every proxied route has a per-client and a global limit, registrations their own; "
            f"no address or per-client key in a log format or header; the renders (compose, Kubernetes, Kubernetes "
            f"with the federation component) pass nginx -t inside "
            f"nginx.container.conf")


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


def k8s_federation_gateway_problems(docs: list[dict], placeholders: set[str], env: dict[str, str]) -> list[str]:
    """The gateway of a render with the federation component; fills `env` with the gateway container's settings."""
    deployments = k8s_by_kind(docs, "Deployment")
    services = k8s_by_kind(docs, "Service")
    deployment = deployments.get("gateway")
    if deployment is None:
        return ["no gateway Deployment"]
    spec = deployment["spec"]["template"]["spec"]
    container = spec["containers"][0]
    env.update(k8s_container_env(container))
    problems = gateway_env_problems(env, placeholders)
    mounts = {m["mountPath"]: m for m in container.get("volumeMounts", [])}
    volumes = {v["name"]: v for v in spec.get("volumes", [])}
    template = mounts.get("/etc/nginx/templates/federation.conf.template", {})
    if template.get("subPath") != "federation.conf.template" or "configMap" not in volumes.get(template.get("name"), {}):
        problems.append("federation.conf.template is not mounted at /etc/nginx/templates/federation.conf.template")
    ca = env.get("GATEWAY_EFGS_CA", "")
    if not any(ca.startswith(path + "/") and "secret" in volumes.get(m["name"], {}) for path, m in mounts.items()):
        problems.append(f"GATEWAY_EFGS_CA={ca} is not a file of a mounted Secret")
    port = env.get("GATEWAY_FEDERATION_PORT", "")
    container_ports = {p.get("name"): p.get("containerPort") for p in container.get("ports", [])}
    service_ports = services.get("gateway", {}).get("spec", {}).get("ports", [])
    if not any(str(p["port"]) == port and str(container_ports.get(p.get("targetPort"), p.get("targetPort"))) == port
               for p in service_ports):
        problems.append(f"the gateway Service does not pass GATEWAY_FEDERATION_PORT={port} to that containerPort")
    upstream = env.get("GATEWAY_FEDERATION_UPSTREAM", ":")
    host, _, upstream_port = upstream.rpartition(":")
    svc = services.get(host)
    if host != "federation-callback" or not svc or int(upstream_port or 0) not in [p["port"] for p in svc["spec"]["ports"]]:
        problems.append(f"GATEWAY_FEDERATION_UPSTREAM={upstream} is not a port of the Service federation-callback")
    callback = deployments.get("federation-callback", {})
    callback_env = {k: v for c in callback.get("spec", {}).get("template", {}).get("spec", {}).get("containers", [])
                    for k, v in k8s_container_env(c).items()}
    if not env.get("GATEWAY_SECRET", "").startswith("<secret") or env.get("GATEWAY_SECRET") != callback_env.get("GATEWAY_SECRET"):
        problems.append("the gateway and federation-callback do not read GATEWAY_SECRET from one Secret key")
    return problems


def gateway_env_problems(env: dict[str, str], placeholders: set[str]) -> list[str]:
    problems = []
    missing = sorted(p for p in placeholders - GENERATED_PLACEHOLDERS if not env.get(p))
    if missing:
        problems.append(f"no value for {', '.join(missing)}")
    extra = sorted(k for k in env if k.startswith("GATEWAY_") and k not in placeholders)
    if extra:
        problems.append(f"{', '.join(extra)} set but not in the template")
    fixed = sorted(k for k in GENERATED_PLACEHOLDERS if k in env)
    if fixed:
        problems.append(f"{', '.join(fixed)} set: it is made anew at every start (client-key.envsh); a fixed key "
                        "would outlive restarts")
    filt = env.get("NGINX_ENVSUBST_FILTER")
    if not filt or any(not re.search(filt, p) for p in placeholders):
        problems.append("NGINX_ENVSUBST_FILTER does not admit every GATEWAY_* placeholder")
    if env.get("NGINX_ENVSUBST_OUTPUT_DIR", "/etc/nginx/conf.d") != "/etc/nginx/conf.d":
        problems.append("NGINX_ENVSUBST_OUTPUT_DIR is not /etc/nginx/conf.d (where nginx.container.conf includes from)")
    if env.get("GATEWAY_BIND") != "0.0.0.0":
        problems.append("GATEWAY_BIND is not 0.0.0.0")
    return problems


def nginx_blocks(text: str) -> list[dict]:
    """The blocks of an nginx configuration, comments removed: each {"header", "parents", "body"}; parents are the
    enclosing blocks (outermost first), body the block's own directives (not those of nested blocks). The first block
    is the file's top level."""
    top: dict = {"header": "", "parents": [], "body": []}
    blocks, stack, statement = [top], [top], ""
    for line in text.splitlines():
        for char in re.sub(r"(^|\s)#.*$", "", line) + "\n":
            if char == "{":
                block = {"header": " ".join(statement.split()), "parents": stack[1:], "body": []}
                blocks.append(block)
                stack = stack + [block]
                statement = ""
            elif char == "}":
                stack = stack[:-1]
                statement = ""
            elif char == ";":
                stack[-1]["body"].append(" ".join(statement.split()))
                statement = ""
            else:
                statement += char
    return blocks


def gateway_template_problems(template: str) -> list[str]:
    """The template's promises: no address (or per-client key) leaves nginx's memory, every proxied route of the app
    and portal servers has a per-client and a global limit, registrations a tight one of their own."""
    problems = []
    # ${NAME} (a placeholder, or nginx's own spelling of a variable) as $NAME, so its braces are not read as blocks.
    blocks = nginx_blocks(re.sub(r"\$\{(\w+)\}", r"$\1", template))
    statements = [(b, d) for b in blocks for d in b["body"]]
    # Where the address variables may appear: defining the per-client key, and keying a per-client zone.
    zones: dict[str, str] = {}
    for _, d in statements:
        match = re.match(r"limit_req_zone\s+\$(\w+)\s+zone=(\w+):", d)
        if match:
            zones[match.group(2)] = match.group(1)
    for b, d in statements + [(b, b["header"]) for b in blocks]:
        used = set(re.findall(r"\$\{?([a-z_]+)", d)) & ADDRESS_VARIABLES
        if not used:
            continue
        allowed = (re.match(r"limit_req_zone\s+\$gateway_client\s", d) and used == {"gateway_client"}) \
            or (re.match(r"js_set\s+\$gateway_client\s", d) and used == {"gateway_client"}) \
            or (re.match(r"js_var\s+\$gateway_client_key\s", d) and used == {"gateway_client_key"})
        if not allowed:
            problems.append(f"template: `{d[:80]}` uses {', '.join(sorted('$' + u for u in used))}: the "
                            "client's address and the per-client key may key a limit_req_zone only, never a log, "
                            "header or response")
    for b, d in statements:
        if d.startswith("log_format") and "$remote" in d:
            problems.append("template: a log format holds the client's address")
    per_client = {z for z, key in zones.items() if key == "gateway_client"}
    if not per_client:
        problems.append("template: no limit_req_zone is keyed by $gateway_client (per client)")
    global_zones = {z for z, key in zones.items() if key == "server_port"}
    for b in blocks:
        if not b["header"].startswith("location") or not any(d.startswith("proxy_pass") for d in b["body"]):
            continue
        server = next((x for x in b["parents"] if x["header"] == "server"), {"body": []})
        listen = " ".join(d for d in server["body"] if d.startswith("listen"))
        if "GATEWAY_LAB_PORT" in listen or b["header"] == "location = /static/portal.css":
            continue   # labs: one budget per client certificate; the portal's stylesheet: static and cached
        used = set(re.findall(r"limit_req\s+zone=(\w+)", " ".join(b["body"])))
        where = b["header"]
        if not used & per_client:
            problems.append(f"template: {where} has no per-client limit")
        if not used & global_zones:
            problems.append(f"template: {where} has no global ceiling")
        if "registrationToken" in where and "registration" not in used:
            problems.append(f"template: {where} lacks the registration budget (teleTAN guessing)")
    if "registration" in zones and zones["registration"] != "gateway_client":
        problems.append("template: the registration zone is not per client")
    return problems


def rate_per_second(rate: str) -> float | None:
    match = re.fullmatch(r"(\d+)r/([sm])", rate)
    if not match:
        return None
    return int(match.group(1)) / (1 if match.group(2) == "s" else 60)


def gateway_rate_problems(env: dict[str, str]) -> list[str]:
    """A deployment's budgets: well-formed, each client's below its ceiling, registrations below the app's."""
    problems = []
    rates = {}
    for key, value in env.items():
        if key.endswith("_RATE") and key.startswith("GATEWAY_"):
            rates[key] = rate_per_second(value)
            if rates[key] is None:
                problems.append(f"{key}={value} is not N r/s or N r/m")
        if key.endswith("_BURST") and key.startswith("GATEWAY_") and not re.fullmatch(r"\d+", value):
            problems.append(f"{key}={value} is not a number")
    def below(small: str, large: str, why: str) -> None:
        a, b = rates.get(small), rates.get(large)
        if a is not None and b is not None and a >= b:
            problems.append(f"{small} ({env[small]}) is not below {large} ({env[large]}): {why}")
    below("GATEWAY_APP_CLIENT_RATE", "GATEWAY_APP_RATE", "one client could spend every phone's budget")
    below("GATEWAY_PORTAL_CLIENT_RATE", "GATEWAY_PORTAL_RATE", "one client could spend every officer's budget")
    below("GATEWAY_REGISTRATION_RATE", "GATEWAY_APP_CLIENT_RATE", "registrations would have no budget of their own")
    return problems


def nginx_test(ctx: Context, label: str, env: dict[str, str]) -> list[str]:
    work = ctx.work / f"nginx-{label}"
    (work / "cdn").mkdir(parents=True, exist_ok=True)
    secrets = ctx.dev / "secrets"
    values = {k: v for k, v in env.items() if k.startswith("GATEWAY_")}
    values.update({
        "GATEWAY_TLS_CERT": str(secrets / "gateway.pem"),
        "GATEWAY_TLS_KEY": str(secrets / "gateway.key"),
        "GATEWAY_LAB_CA": str(secrets / "lab-ca.pem"),
        "GATEWAY_CDN_ROOT": str(work / "cdn"),
        "GATEWAY_SECRET": "x" * 48 if values.get("GATEWAY_SECRET", "").startswith("<secret") else values.get("GATEWAY_SECRET", ""),
        "GATEWAY_CLIENT_KEY_JS": str(ctx.deploy / "gateway" / "client-key.js"),
        "GATEWAY_SIGNED_FILES_JS": str(ctx.deploy / "gateway" / "signed-files.js"),
        "GATEWAY_EFGS_CA": str(secrets / "federation-callback-ca.pem"),
    })
    # GATEWAY_CLIENT_KEY: render.sh makes one, as client-key.envsh does in the container.
    # Upstream names resolve only inside the deployment: 127.0.0.1 with the same ports.
    for key in [k for k in values if k.endswith("_UPSTREAM")]:
        values[key] = "127.0.0.1:" + values[key].rpartition(":")[2]
    result = ctx.run([str(ctx.deploy / "gateway" / "render.sh")], env={"PATH": os.environ["PATH"], **values})
    if result.returncode != 0:
        return [f"render.sh: {result.stderr.strip()}"]
    (work / "gateway.conf").write_text(result.stdout)
    # The optional servers, where nginx.container.conf's includes find them: with federation the callback server
    # (federation*.conf), with the monitoring component the stub_status server (status*.conf).
    for name, setting in (("federation", "GATEWAY_FEDERATION_PORT"), ("status", "GATEWAY_STATUS_PORT")):
        for stale in work.glob(f"{name}*.conf"):
            stale.unlink()
        if setting not in values:
            continue
        result = ctx.run([str(ctx.deploy / "gateway" / "render.sh"), str(ctx.deploy / "gateway" / f"{name}.conf.template")],
                         env={"PATH": os.environ["PATH"], **values})
        if result.returncode != 0:
            return [f"render.sh {name}.conf.template: {result.stderr.strip()}"]
        (work / f"{name}.conf").write_text(result.stdout)
    main = (ctx.deploy / "gateway" / "nginx.container.conf").read_text()
    if "include /etc/nginx/conf.d/gateway.conf;" not in main:
        return ["nginx.container.conf does not include /etc/nginx/conf.d/gateway.conf"]
    problems = []
    if re.search(r"^\s*(access_log|log_format)\b", main, re.M):
        problems.append("nginx.container.conf defines its own access log or log format")
    if re.search(r"^\s*include\s+/etc/nginx/conf\.d/\*", main, re.M):
        problems.append("nginx.container.conf includes every conf.d file (the image's default.conf too)")
    if not re.search(r"^load_module\s+/usr/lib/nginx/modules/ngx_http_js_module\.so;", main, re.M):
        problems.append("nginx.container.conf does not load njs (the per-client limits' key needs it)")
    if "include /etc/nginx/conf.d/federation*.conf;" not in main:
        problems.append("nginx.container.conf does not include /etc/nginx/conf.d/federation*.conf (the callback server)")
    if "include /etc/nginx/conf.d/status*.conf;" not in main:
        problems.append("nginx.container.conf does not include /etc/nginx/conf.d/status*.conf (the stub_status server)")
    main = main.replace("/tmp/", f"{work}/").replace("/etc/nginx/conf.d/", f"{work}/")
    (work / "nginx.conf").write_text(main)
    nginx = shutil.which("nginx") or "/usr/sbin/nginx"
    result = ctx.run([nginx, "-t", "-q", "-p", str(work), "-c", str(work / "nginx.conf"), "-e", str(work / "error.log")])
    if result.returncode != 0:
        problems.append("nginx -t: " + " ".join((result.stdout + result.stderr).split()))
    return problems


# ---------------------------------------------------------------------------------------------------------------
# the binaries accept the configurations


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


# ---------------------------------------------------------------------------------------------------------------
# TLS to the database


BUNDLE_PATH = "/etc/ssl/certs/ca-certificates.crt"   # the one CA file the services' TLS (swift-nio-ssl) reads


def check_database_tls(ctx: Context) -> str:
    """Every connection to PostgreSQL in compose and the Kubernetes manifests is `sslmode=verify-full` with the CA
    bundle mounted where the binaries read it, the in-deployment databases serve TLS, and (as root) a binary with
    compose's configuration really connects over verified TLS, and is refused without the database's CA."""
    problems = []
    config = ctx.compose_config()
    services = config["services"]
    secret_files = {name: Path(spec["file"]).name for name, spec in config.get("secrets", {}).items()}
    hosts = set()
    connecting = 0
    for name, svc in sorted(services.items()):
        url = str(svc.get("environment", {}).get("DATABASE_URL", ""))
        if not our_binary(str(svc.get("image", ""))) or not url:
            continue
        connecting += 1
        parsed = urllib.parse.urlsplit(url)
        hosts.add(parsed.hostname)
        if urllib.parse.parse_qs(parsed.query).get("sslmode") != ["verify-full"]:
            problems.append(f"compose {name}: DATABASE_URL is not sslmode=verify-full")
        if not any(v.split(":")[1:2] == [BUNDLE_PATH] and v.split(":")[0].endswith("/database-ca-bundle.pem")
                   for v in svc.get("volumes", [])):
            problems.append(f"compose {name}: database-ca-bundle.pem is not mounted at {BUNDLE_PATH}")
    postgres = services.get("postgres", {})
    command = " ".join(postgres.get("command") or [])
    if "ssl=on" not in command or "ssl_cert_file" not in command or "ssl_key_file" not in command:
        problems.append("compose postgres: not started with ssl=on and its certificate and key")
    if {"postgres-tls-cert", "postgres-tls-key"} - {s if isinstance(s, str) else s["source"] for s in postgres.get("secrets", [])}:
        problems.append("compose postgres: the secrets postgres-tls-cert and postgres-tls-key are not mounted")
    # Kubernetes: every container of our images that gets a DATABASE_URL (a *-secrets Secret) mounts the bundle.
    secrets = ctx.dev_secrets()
    for target in ("base", *OVERLAYS):
        docs = ctx.kustomize(target)
        for kind_name, spec in pod_specs(docs):
            volumes = {v["name"]: v for v in spec.get("volumes", [])}
            for c in spec.get("initContainers", []) + spec.get("containers", []):
                refs = [e["secretRef"]["name"] for e in c.get("envFrom", []) if "secretRef" in e]
                if not our_binary(c.get("image", "")) or not any(r.endswith("-secrets") for r in refs):
                    continue
                connecting += 1
                mount = next((m for m in c.get("volumeMounts", []) if m["mountPath"] == BUNDLE_PATH), None)
                secret = volumes.get((mount or {}).get("name"), {}).get("secret", {})
                if not mount or mount.get("subPath") != "ca-certificates.crt" or secret.get("secretName") != "database-ca-bundle":
                    problems.append(f"{target} {kind_name} {c['name']}: the Secret database-ca-bundle is not mounted "
                                    f"at {BUNDLE_PATH}")
                if target == "overlays/local":
                    for ref in refs:
                        url = secrets.get(ref, {}).get("DATABASE_URL", b"").decode()
                        if url:
                            parsed = urllib.parse.urlsplit(url)
                            hosts.add(parsed.hostname)
                            if urllib.parse.parse_qs(parsed.query).get("sslmode") != ["verify-full"]:
                                problems.append(f"dev-secrets.sh: {ref} DATABASE_URL is not sslmode=verify-full")
        for name, sts in k8s_by_kind(docs, "StatefulSet").items():
            if name == "postgres":
                args = " ".join(sts["spec"]["template"]["spec"]["containers"][0].get("args", []))
                if "ssl=on" not in args:
                    problems.append(f"{target} StatefulSet/postgres: not started with ssl=on")
    # The development certificate of the database verifies, with the development bundle, for every host name used.
    bundle = ctx.dev / "secrets" / "database-ca-bundle.pem"
    for host in sorted(h for h in hosts if h):
        result = ctx.run(["openssl", "verify", "-CAfile", str(bundle), "-verify_hostname", host,
                          str(ctx.dev / "secrets" / "postgres.pem")])
        if result.returncode != 0:
            problems.append(f"dev-secrets.sh: postgres.pem does not verify for {host} with database-ca-bundle.pem: "
                            + " ".join((result.stdout + result.stderr).split())[:200])
    if problems:
        raise CheckFailed("TLS to the database", problems)
    live = database_tls_live(ctx, services, secret_files)
    return (f"all {connecting} containers that connect to PostgreSQL (compose, base, overlays) use sslmode=verify-full "
            f"with the CA bundle mounted at {BUNDLE_PATH}; the databases of compose and the local overlay serve TLS; "
            + live)


def database_tls_live(ctx: Context, services: dict, secret_files: dict[str, str]) -> str:
    """compose's migrate-test-result configuration against a throw-away PostgreSQL 15 that serves the development
    certificate, in a private mount namespace where `postgres` is 127.0.0.1 and the bundle is mounted as in compose:
    it must migrate; with the machine's own CA bundle (the image's, without the database's CA) it must be refused."""
    pg_bin = Path(os.environ.get("EN_PG_BIN", "/usr/lib/postgresql/15/bin"))
    unshare = shutil.which("unshare")
    if os.geteuid() != 0 or not unshare or not (pg_bin / "initdb").exists():
        return "the live TLS connection was not tried (it needs root, unshare and PostgreSQL 15)"
    svc = services["migrate-test-result"]
    env = {k: str(v) for k, v in svc.get("environment", {}).items()}
    mounts = compose_mounts(ctx, svc, secret_files)
    url = urllib.parse.urlsplit(env["DATABASE_URL"])
    port = 54997
    cluster = Path(tempfile.mkdtemp(prefix="deploy-check-tls-", dir="/tmp"))
    shutil.chown(cluster, "postgres", "postgres")
    as_postgres = ["runuser", "-u", "postgres", "--"]

    def sh(cmd: list[str]) -> subprocess.CompletedProcess:
        result = subprocess.run(as_postgres + cmd, capture_output=True, text=True, cwd="/", timeout=60)
        if result.returncode != 0:
            raise CheckFailed(f"{' '.join(cmd[:2])} failed", (result.stdout + result.stderr).strip().splitlines()[-8:])
        return result

    try:
        for name, mode in (("postgres.pem", 0o644), ("postgres.key", 0o600)):
            shutil.copyfile(ctx.dev / "secrets" / name, cluster / name)
            shutil.chown(cluster / name, "postgres", "postgres")
            os.chmod(cluster / name, mode)
        sh([str(pg_bin / "initdb"), "-D", f"{cluster}/data", "-U", "postgres", "--auth=trust", "--no-sync",
            "--no-instructions"])
        # The same server settings as compose's postgres command.
        sh([str(pg_bin / "pg_ctl"), "start", "-w", "-D", f"{cluster}/data", "-l", f"{cluster}/log", "-o",
            f"-p {port} -k {cluster} -c listen_addresses=127.0.0.1 -c ssl=on -c ssl_min_protocol_version=TLSv1.2 "
            f"-c ssl_cert_file={cluster}/postgres.pem -c ssl_key_file={cluster}/postgres.key"])
        psql = [str(pg_bin / "psql"), "-X", "-q", "-h", str(cluster), "-p", str(port), "-U", "postgres", "-v", "ON_ERROR_STOP=1"]
        sh(psql + ["-c", f"CREATE ROLE {url.username} LOGIN PASSWORD '{url.password}'"])
        sh(psql + ["-c", f"CREATE DATABASE {url.path.strip('/')} OWNER {url.username}"])
        hosts = cluster / "hosts"
        hosts.write_text(Path("/etc/hosts").read_text() + f"\n127.0.0.1 {url.hostname}\n")

        def migrate(bundle: str) -> subprocess.CompletedProcess:
            run_env = {"PATH": "/usr/bin:/bin", **remapped_settings(env, mounts)}
            run_env["DATABASE_URL"] = urllib.parse.urlunsplit(url._replace(netloc=f"{url.username}:{url.password}@{url.hostname}:{port}"))
            run_env["MIGRATE_ONLY"] = "true"
            script = f'mount --bind "$1" {BUNDLE_PATH} && mount --bind "$2" /etc/hosts && shift 2 && exec "$@"'
            return ctx.run([unshare, "--mount", "--propagation", "private", "sh", "-c", script, "--", bundle,
                            str(hosts), str(ctx.binary("test-result-service")), *(svc.get("command") or [])],
                           env=run_env, timeout=60, cwd=str(ctx.work))

        verified = migrate(mounts[BUNDLE_PATH])
        out = " ".join((verified.stdout + verified.stderr).split())
        if verified.returncode != 0 or "Migrations complete" not in out:
            raise CheckFailed("TLS to the database", [f"compose migrate-test-result over verify-full with "
                                                      f"database-ca-bundle.pem exited {verified.returncode}: {out[-300:]}"])
        refused = migrate(BUNDLE_PATH)   # the machine's own bundle: the public CAs only, as in the image
        out = " ".join((refused.stdout + refused.stderr).split())
        if refused.returncode == 0:
            raise CheckFailed("TLS to the database", ["verify-full connected without the database's CA: the server's "
                                                      "certificate is not being checked"])
    finally:
        subprocess.run(as_postgres + [str(pg_bin / "pg_ctl"), "stop", "-D", f"{cluster}/data", "-m", "immediate"],
                       capture_output=True, cwd="/")
        shutil.rmtree(cluster, ignore_errors=True)
    return ("test-result-service --migrate-only with compose's configuration migrates a throw-away PostgreSQL 15 over "
            "verified TLS with the bundle, and is refused with the image's bundle alone")


# ---------------------------------------------------------------------------------------------------------------
# PostgreSQL init script


def check_postgres(ctx: Context) -> str:
    pg_bin = Path(os.environ.get("EN_PG_BIN", "/usr/lib/postgresql/15/bin"))
    if not (pg_bin / "initdb").exists():
        raise CheckFailed(f"no PostgreSQL 15 binaries in {pg_bin}")
    cluster = Path(tempfile.mkdtemp(prefix="deploy-check-pg-", dir="/tmp"))
    as_user: list[str] = []
    if os.geteuid() == 0:
        as_user = ["runuser", "-u", "postgres", "--"]
        shutil.chown(cluster, "postgres", "postgres")
    env = {"PATH": f"{pg_bin}:/usr/bin:/bin", "PGHOST": str(cluster), "PGPORT": "54999"}
    dev_env = dict(line.split("=", 1) for line in (ctx.dev / ".env").read_text().splitlines()
                   if "=" in line and not line.startswith("#"))
    passwords = {k: v for k, v in dev_env.items() if k.endswith("_DB_PASSWORD")}
    # The optional roles (data donation's here) exist without a login until a run gets their password.
    without_datadonation = {k: v for k, v in passwords.items() if k != "DATADONATION_DB_PASSWORD"}

    def sh(cmd: list[str], extra: dict | None = None, check: bool = True) -> subprocess.CompletedProcess:
        result = subprocess.run(as_user + ["env", *[f"{k}={v}" for k, v in {**env, **(extra or {})}.items()], *cmd],
                                capture_output=True, text=True, cwd="/", timeout=60)
        if check and result.returncode != 0:
            raise CheckFailed(f"{' '.join(cmd[:2])} failed", (result.stdout + result.stderr).strip().splitlines()[-8:])
        return result

    try:
        sh(["initdb", "-D", f"{cluster}/data", "-U", "postgres", "--auth=trust", "--no-sync", "--no-instructions"])
        # The superuser (init.sh's own connection) by trust, every service role only with its password: so the
        # checks below also prove that init.sh set the passwords the services will use.
        sh(["sh", "-c", f"printf 'local all postgres trust\\nlocal all all scram-sha-256\\n' > {cluster}/data/pg_hba.conf"])
        sh(["pg_ctl", "start", "-w", "-D", f"{cluster}/data", "-l", f"{cluster}/log",
            "-o", f"-p 54999 -k {cluster} -c listen_addresses=''"])
        # A copy in the cluster's folder: run as postgres, the script must be readable by that user, which a clone
        # under a private home (/root, mode 700) is not.
        init = str(cluster / "init.sh")
        shutil.copyfile(ctx.deploy / "postgres" / "init.sh", init)
        os.chmod(init, 0o755)
        psql = ["psql", "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1"]

        def as_role(role: str, db: str, sql: str, password: str | None = None) -> subprocess.CompletedProcess:
            secret = password if password is not None else passwords.get(f"{role.upper()}_DB_PASSWORD", "")
            return sh(psql + ["-U", role, "-d", db, "-c", sql], {"PGPASSWORD": secret}, check=False)

        problems = []
        sh([init], without_datadonation)
        if as_role("datadonation", "datadonation", "SELECT 1").returncode == 0:
            problems.append("datadonation may log in without a password being configured")
        sh([init], passwords)   # a later run with the optional password gives the role its login
        sh([init], passwords)   # idempotent: a second run (password rotation) succeeds

        owners = sh(psql + ["-U", "postgres", "-c",
                            "SELECT string_agg(datname || '=' || pg_get_userbyid(datdba), ',' ORDER BY datname) "
                            "FROM pg_database WHERE datname NOT LIKE 'template%' AND datname <> 'postgres'"]).stdout.strip()
        expected = ("datadonation=datadonation,efgs=efgs,keys=submission,portal=portal,testresult=testresult,"
                    "verification=verification")
        if owners != expected:
            problems.append(f"databases and owners are {owners}, expected {expected}")
        if as_role("submission", "keys", "CREATE TABLE later_table (x int); INSERT INTO later_table VALUES (1)").returncode != 0:
            problems.append("submission cannot log in with SUBMISSION_DB_PASSWORD and create a table in keys")
        if as_role("submission", "keys", "SELECT 1", password="not-the-password").returncode == 0:
            problems.append("submission logs in with a wrong password")
        if as_role("distribution", "keys", "DELETE FROM later_table RETURNING x").returncode != 0:
            problems.append("distribution cannot read and delete a table submission creates later")
        if as_role("distribution", "keys", "INSERT INTO later_table VALUES (2)").returncode == 0:
            problems.append("distribution may insert into the keys tables")
        if as_role("federation", "keys", "INSERT INTO later_table VALUES (3); UPDATE later_table SET x = 4; "
                   "DELETE FROM later_table WHERE x = 4 RETURNING x").returncode != 0:
            problems.append("federation cannot insert, update and delete in a table submission creates later")
        if as_role("federation", "verification", "SELECT 1").returncode == 0:
            problems.append("federation may connect to verification")
        for role, db in (("verification", "verification"), ("testresult", "testresult"), ("portal", "portal")):
            if as_role(role, db, "SELECT 1").returncode != 0:
                problems.append(f"{role} cannot log in to {db} with its password")
        for role, db in (("distribution", "verification"), ("verification", "keys"), ("portal", "testresult"),
                         ("testresult", "portal"), ("submission", "verification")):
            if as_role(role, db, "SELECT 1").returncode == 0:
                problems.append(f"{role} may connect to {db}")
        if as_role("efgs", "efgs", "CREATE TABLE rehearsal (x int)").returncode != 0:
            problems.append("efgs cannot log in to efgs with EFGS_DB_PASSWORD and create a table")
        if as_role("efgs", "keys", "SELECT 1").returncode == 0:
            problems.append("efgs may connect to keys")
        if as_role("datadonation", "datadonation", "CREATE TABLE donations (x int)").returncode != 0:
            problems.append("datadonation cannot log in to datadonation with DATADONATION_DB_PASSWORD and create a table")
        for db in ("keys", "verification", "portal"):
            if as_role("datadonation", db, "SELECT 1").returncode == 0:
                problems.append(f"datadonation may connect to {db}")
        if as_role("submission", "datadonation", "SELECT 1").returncode == 0:
            problems.append("submission may connect to datadonation")
        # The analysts' group role: no login of its own, CONNECT on datadonation only; a member's login (what an
        # operator creates per analyst) opens datadonation and reads what the migration grants, nothing else.
        analyst = sh(psql + ["-U", "postgres", "-c",
                             "SELECT rolcanlogin, has_database_privilege('datadonation_analyst', 'datadonation', 'CONNECT'), "
                             "has_database_privilege('datadonation_analyst', 'keys', 'CONNECT') "
                             "FROM pg_roles WHERE rolname = 'datadonation_analyst'"]).stdout.strip()
        if analyst != "f|t|f":
            problems.append(f"datadonation_analyst (login, CONNECT datadonation, CONNECT keys) is {analyst or 'missing'}, "
                            "expected a role without login that may connect to datadonation only")
        sh(psql + ["-U", "postgres", "-c", "CREATE ROLE alice LOGIN PASSWORD 'alice-password-123' IN ROLE datadonation_analyst"])
        sh(psql + ["-U", "datadonation", "-d", "datadonation", "-c", "GRANT SELECT ON donations TO datadonation_analyst"],
           {"PGPASSWORD": passwords.get("DATADONATION_DB_PASSWORD", "")})
        if as_role("alice", "datadonation", "SELECT count(*) FROM donations", password="alice-password-123").returncode != 0:
            problems.append("a member of datadonation_analyst cannot read a table granted to the role")
        if as_role("alice", "datadonation", "INSERT INTO donations VALUES (1)", password="alice-password-123").returncode == 0:
            problems.append("a member of datadonation_analyst may write")
        if as_role("alice", "keys", "SELECT 1", password="alice-password-123").returncode == 0:
            problems.append("a member of datadonation_analyst may connect to keys")
    finally:
        subprocess.run(as_user + [str(pg_bin / "pg_ctl"), "stop", "-D", f"{cluster}/data", "-m", "immediate"],
                       capture_output=True, cwd="/")
        shutil.rmtree(cluster, ignore_errors=True)
    if problems:
        raise CheckFailed("deploy/postgres/init.sh", problems)
    return ("deploy/postgres/init.sh creates the six databases and roles on a throw-away PostgreSQL 15 (three times); "
            "each service role logs in with its password and no other, an optional one only once it is given; "
            "distribution reads and deletes later tables of keys, federation also inserts and updates; the rehearsal "
            "gateway owns efgs; no role opens another's database; datadonation_analyst has no login, its members read "
            "datadonation only")

# The metrics prometheus-nginx-exporter makes of nginx's stub_status (the gateway's scrape job).
NGINX_EXPORTER_METRICS = {"nginx_up", "nginx_connections_accepted", "nginx_connections_active",
                          "nginx_connections_handled", "nginx_connections_reading", "nginx_connections_waiting",
                          "nginx_connections_writing", "nginx_http_requests_total"}
# The metrics of prometheus-blackbox-exporter's probes that the rules read (the gateway's TLS certificate).
BLACKBOX_EXPORTER_METRICS = {"probe_success", "probe_ssl_earliest_cert_expiry", "probe_duration_seconds",
                             "probe_ssl_last_chain_expiry_timestamp_seconds"}
# Grafana's own variables in a panel's expression, and what promtool sees in their place.
GRAFANA_VARIABLES = {"__rate_interval": "5m", "__interval": "1m", "__range": "1h", "__interval_ms": "60000",
                     "__range_s": "3600", "__range_ms": "3600000"}
GRAFANA_VARIABLE = re.compile(r"\$\{(\w+)(?::\w+)?\}|\[\[(\w+)\]\]|\$(\w+)")
PROMQL_STRING = re.compile(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'|`[^`]*`')
PROMQL_NAME = re.compile(r"(?<![\w:.])([a-zA-Z_:][a-zA-Z0-9_:]*)")


def expression_metrics(expr: str) -> set[str]:
    """The metric and recording-rule names an expression reads that are ours (en_*, http_server_*, nginx_*, probe_*, or
    recording rules: names with a colon). Label values are removed first; label names and functions never start so."""
    bare = PROMQL_STRING.sub('""', expr)
    return {name for name in PROMQL_NAME.findall(bare)
            if ":" in name or name.startswith(("en_", "http_server_", "nginx_", "probe_"))}


def metric_problems(where: str, expr: str, sources: str, recorded: set[str]) -> list[str]:
    problems = []
    for name in sorted(expression_metrics(expr)):
        if ":" in name:
            if name not in recorded:
                problems.append(f"{where}: {name} is no recording rule of rules.yaml")
        elif name.startswith("nginx_"):
            if name not in NGINX_EXPORTER_METRICS:
                problems.append(f"{where}: {name} is not a metric of prometheus-nginx-exporter")
        elif name.startswith("probe_"):
            if name not in BLACKBOX_EXPORTER_METRICS:
                problems.append(f"{where}: {name} is not a metric of prometheus-blackbox-exporter")
        elif f'"{re.sub(r"_(bucket|sum|count)$", "", name)}"' not in sources and f'"{name}"' not in sources:
            problems.append(f"{where}: no service defines the metric {name}")
    return problems


def check_observability(ctx: Context) -> str:
    """deploy/observability: promtool checks alerts.yaml and rules.yaml and runs alerts.test.yaml; every alert has a
    severity and a runbook that is a heading of deploy/README.md; every dashboard is well-formed (title, uid, panels,
    unique ids) and promtool accepts each panel's expression with Grafana's variables substituted; and every metric
    a rule, alert or panel reads is one the services define (en_*, http_server_*, as a quoted string in Services/ or
    Shared/), one of prometheus-nginx-exporter (nginx_*) or prometheus-blackbox-exporter (probe_*), or a recording
    rule of rules.yaml."""
    folder = ctx.deploy / "observability"
    promtool = shutil.which("promtool")
    if not promtool:
        raise CheckFailed("promtool is missing (Debian package prometheus)")
    problems: list[str] = []
    rule_files = [folder / "rules.yaml", folder / "alerts.yaml"]
    for path in rule_files:
        result = ctx.run([promtool, "check", "rules", str(path)])
        if result.returncode != 0:
            problems += [f"promtool check rules {path.name}: {line}" for line in
                         (result.stdout + result.stderr).strip().splitlines() if line.strip()]
    result = ctx.run([promtool, "test", "rules", "alerts.test.yaml"], cwd=folder)
    if result.returncode != 0:
        problems += [f"promtool test rules alerts.test.yaml: {line}" for line in
                     (result.stdout + result.stderr).strip().splitlines()[-40:] if line.strip()]
    test_groups = yaml.safe_load((folder / "alerts.test.yaml").read_text()).get("tests", [])
    cases = sum(len(t.get("alert_rule_test", [])) + len(t.get("promql_expr_test", [])) for t in test_groups)

    headings = {re.sub(r"[^a-z0-9 -]", "", line.lstrip("#").strip().lower()).replace(" ", "-")
                for line in (ctx.deploy / "README.md").read_text().splitlines() if line.startswith("#")}
    sources = "\n".join(p.read_text() for p in (ctx.root / "Services").rglob("*.swift"))
    sources += "\n".join(p.read_text() for p in (ctx.root / "Shared").rglob("*.swift"))
    # The gateway's counters, which mtail makes of its access log: each program compiles, and what it declares counts
    # as defined.
    mtail = shutil.which("mtail")
    for program in sorted(folder.glob("*.mtail")):
        if not mtail:
            problems.append(f"{program.name}: mtail is missing (Debian package mtail)")
            break
        result = ctx.run([mtail, "--progs", str(program), "--compile_only"])
        if result.returncode != 0:
            problems += [f"mtail --compile_only {program.name}: {line}" for line in
                         (result.stdout + result.stderr).strip().splitlines() if line.strip()]
        sources += "\n".join(f'"{name}"' for name in
                             re.findall(r"^\s*(?:counter|gauge|histogram)\s+(\w+)", program.read_text(), re.M))
    rules = {path.name: [rule for group in (yaml.safe_load(path.read_text()) or {}).get("groups", [])
                         for rule in group.get("rules", [])] for path in rule_files}
    recorded = {rule["record"] for rule in rules["rules.yaml"] if rule.get("record")}
    alerts = [rule for rule in rules["alerts.yaml"] if rule.get("alert")]
    for file, file_rules in rules.items():
        for rule in file_rules:
            name = rule.get("alert") or rule.get("record") or "?"
            problems += metric_problems(f"{file} {name}", str(rule.get("expr", "")), sources, recorded)
    for rule in alerts:
        name = rule["alert"]
        if rule.get("labels", {}).get("severity") not in ("warning", "critical"):
            problems.append(f"alerts.yaml {name}: severity is not warning or critical")
        if not rule.get("annotations", {}).get("summary"):
            problems.append(f"alerts.yaml {name}: no summary")
        runbook = rule.get("annotations", {}).get("runbook", "")
        if not runbook.startswith("deploy/README.md#") or runbook.split("#", 1)[1] not in headings:
            problems.append(f"alerts.yaml {name}: runbook {runbook!r} is not a heading of deploy/README.md")
    if not alerts:
        problems.append("alerts.yaml: no alert rules")

    # Every panel's expression, variables substituted, as a recording rule of one generated file for promtool.
    dashboards = sorted((folder / "dashboards").glob("*.json"))
    generated: list[dict] = []
    origin: dict[str, str] = {}
    uids: dict[str, str] = {}
    for path in dashboards:
        label = f"dashboards/{path.name}"
        try:
            board = json.loads(path.read_text())
        except json.JSONDecodeError as error:
            problems.append(f"{label}: not JSON: {error}")
            continue
        for key in ("title", "uid", "panels"):
            if not board.get(key):
                problems.append(f"{label}: no {key}")
        if board.get("uid") in uids:
            problems.append(f"{label}: uid {board['uid']!r} is also that of {uids[board['uid']]}")
        uids[board.get("uid")] = label
        if board.get("schemaVersion") != 39:
            problems.append(f"{label}: schemaVersion is {board.get('schemaVersion')!r}, not 39")
        variables = {v.get("name"): v for v in board.get("templating", {}).get("list", [])}
        if variables.get("datasource", {}).get("type") != "datasource":
            problems.append(f"{label}: no datasource variable")
        panels = [p for top in board.get("panels", []) for p in [top] + top.get("panels", [])]
        ids = [p.get("id") for p in panels]
        for duplicate in sorted({i for i in ids if ids.count(i) > 1}, key=str):
            problems.append(f"{label}: panel id {duplicate} is not unique")
        for panel in panels:
            where = f"{label} panel {panel.get('id')} ({panel.get('title', '')!r})"
            if panel.get("type") != "row" and "gridPos" not in panel:
                problems.append(f"{where}: no gridPos")
            for target in panel.get("targets", []):
                expr = target.get("expr", "")
                if not expr:
                    continue
                if re.search(r"\b(rate|irate|increase)\([^\[]*\[(?!\$__rate_interval\]|\d+[smhdwy]\])", expr):
                    problems.append(f"{where}: a range that is neither $__rate_interval nor fixed")
                unknown = set()

                def substitute(match: re.Match) -> str:
                    name = match.group(1) or match.group(2) or match.group(3)
                    if name in GRAFANA_VARIABLES:
                        return GRAFANA_VARIABLES[name]
                    if name in variables:
                        return ".+"   # our variables stand in label matchers (=~"$service")
                    unknown.add(name)
                    return match.group(0)

                promql = GRAFANA_VARIABLE.sub(substitute, expr)
                for name in sorted(unknown):
                    problems.append(f"{where}: ${name} is no variable of the dashboard")
                problems += metric_problems(where, promql, sources, recorded)
                record = f"panel:{len(generated)}"
                origin[record] = f"{where} {target.get('refId', '')}"
                generated.append({"record": record, "expr": promql})
    if not dashboards:
        problems.append("no dashboards in deploy/observability/dashboards")
    panel_rules = ctx.work / "dashboard-expressions.yaml"
    panel_rules.write_text(yaml.safe_dump({"groups": [{"name": "dashboards", "rules": generated}]}, sort_keys=False))
    result = ctx.run([promtool, "check", "rules", str(panel_rules)])
    if result.returncode != 0:
        output = result.stdout + result.stderr
        for line in output.strip().splitlines():
            # promtool names the failing rule by its position ("group "dashboards", rule 3, ..."): map it back.
            found = re.search(r"rule (\d+)", line)
            if found and 0 < int(found.group(1)) <= len(generated):
                line = f"{origin[generated[int(found.group(1)) - 1]['record']]}: {line.strip()}"
            if line.strip() and not line.startswith("Checking"):
                problems.append(f"promtool check rules (panel expressions): {line.strip()}")
    if problems:
        raise CheckFailed("deploy/observability", problems)
    return (f"deploy/observability: alerts.yaml ({len(alerts)} alerts) and rules.yaml ({len(recorded)} recording "
            f"rules) pass promtool check rules, alerts.test.yaml ({len(test_groups)} tests, {cases} cases) passes "
            f"promtool test rules, each "
            f"alert has a severity and a runbook heading; {len(dashboards)} dashboards well-formed with "
            f"{len(generated)} expressions promtool accepts; every metric read is one the services, mtail, the "
            f"nginx or the blackbox exporter define, or a recording rule")


CHECKS = [
    ("compose", check_compose),
    ("kubernetes", check_k8s),
    ("dockerfile", check_dockerfile),
    ("env-keys", check_env_keys),
    ("gateway", check_gateway),
    ("config", check_config),
    ("database-tls", check_database_tls),
    ("postgres-init", check_postgres),
    ("observability", check_observability),
]


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--root", required=True)
    parser.add_argument("--work", required=True)
    parser.add_argument("--bin-dir", required=True)
    parser.add_argument("--kubectl", required=True)
    parser.add_argument("--k8s-versions", required=True)
    parser.add_argument("--dev-secrets", required=True)
    parser.add_argument("--only", nargs="*")
    args = parser.parse_args()
    ctx = Context(args)
    failed = 0
    for name, check in CHECKS:
        if args.only and name not in args.only:
            continue
        try:
            summary = check(ctx)
            print(f"ok     {name}: {summary}", flush=True)
        except CheckFailed as failure:
            failed += 1
            print(f"FAILED {name}: {failure.summary}", flush=True)
            for line in failure.details:
                print(f"         {line}", flush=True)
        except Exception as error:  # a bug in a check is a failure too, never a silent pass
            failed += 1
            print(f"FAILED {name}: {type(error).__name__}: {error}", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
