"""deploy/k8s: the rendered base and overlays: pod hygiene, probes, jobs, autoscalers, the optional components."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import urllib.parse
from pathlib import Path

import yaml

from .common import (CheckFailed, Context, FEDERATION_CALLBACK_PORT, FEDERATION_OVERLAYS, FEDERATION_SITE_SETTINGS,
                     OVERLAYS, federation_rendered, k8s_by_kind, k8s_container_env, our_binary, pod_specs)
from .network import network_rules


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
    for target in OVERLAYS:
        problems += [f"{target}: {p}" for p in checkov_problems(ctx.kustomize_path(target), ctx.deploy / "check")]
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
            f"against {' and '.join(ctx.k8s_versions)} (base: {summary}); checkov's Kubernetes checks pass on both "
            f"overlays (deploy/check/checkov.yaml); database egress only from the pods that "
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


def checkov_problems(render: Path, settings: Path) -> list[str]:
    """checkov's Kubernetes checks on a render, with the fleet's settings (`settings`/checkov.yaml); a resource's own
    exceptions are its checkov.io/skipN annotations. One problem per failed check and resource."""
    checkov = Path(sys.executable).parent / "checkov"
    result = subprocess.run([str(checkov), "--file", str(render), "--config-file", str(settings / "checkov.yaml"),
                             "--output", "json", "--quiet", "--skip-download"], capture_output=True, text=True)
    try:
        reports = json.loads(result.stdout)
    except json.JSONDecodeError:
        raise CheckFailed(f"checkov gave no report on {render.name} (exit {result.returncode})",
                          (result.stdout + result.stderr).strip().splitlines()[-5:])
    # A render checkov could not read gives a report without results (or with parsing errors): never a pass.
    reports = reports if isinstance(reports, list) else [reports]
    kubernetes = [r for r in reports if r.get("check_type") == "kubernetes" and "results" in r]
    if not kubernetes or any(r.get("summary", {}).get("parsing_errors") for r in reports) \
            or sum(r.get("summary", {}).get("resource_count", 0) for r in kubernetes) == 0:
        raise CheckFailed(f"checkov checked no Kubernetes resource of {render.name}",
                          [json.dumps(r.get("summary", r))[:300] for r in reports])
    problems = []
    for report in kubernetes:
        for failed in report["results"].get("failed_checks", []):
            resource = failed["resource"].split(".")
            problems.append(f"checkov {failed['check_id']} ({failed['check_name']}): {resource[0]}/{resource[-1]}")
    return sorted(problems)


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
    # Pod hygiene that checkov does not check as strictly (checkov_problems covers privilege escalation, the read-only
    # root filesystem, capabilities, limits, image tags and probes being there): runAsNonRoot itself (checkov is
    # content with a runAsUser), the pod's own seccomp profile (checkov is content with the containers' and passes
    # init containers by), requests (checkov takes limits for them); the probes' paths.
    for kind_name, spec in pod_specs(docs):
        psc = spec.get("securityContext", {})
        if not psc.get("runAsNonRoot"):
            problems.append(f"{kind_name}: runAsNonRoot is not set")
        if psc.get("seccompProfile", {}).get("type") != "RuntimeDefault":
            problems.append(f"{kind_name}: seccompProfile is not RuntimeDefault")
        for c in spec.get("initContainers", []) + spec.get("containers", []):
            where = f"{kind_name} container {c['name']}"
            if not c.get("resources", {}).get("requests"):
                problems.append(f"{where}: resource requests are missing")
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
