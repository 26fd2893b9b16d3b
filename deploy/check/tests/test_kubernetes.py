"""The Kubernetes rules (deploycheck.kubernetes): pod hygiene, probes, jobs, autoscalers, the optional components; each
fires on a render broken in one place, and none on the committed base and overlays."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from conftest import container, fires, named

from deploycheck.common import CheckFailed
from deploycheck.kubernetes import (checkov_problems, federation_rules, gateway_probe_problems,
                                    k8s_internal_url_problems, k8s_rules, monitoring_rules)

PRODUCTION = "overlays/production-example"
ROOT = Path(__file__).resolve().parents[3]


@pytest.mark.parametrize("target", ["base", "overlays/local", PRODUCTION])
def test_committed_renders_pass(render, target):
    assert k8s_rules(render(target), overlay=target != "base") == []


def test_checkov_passes_the_committed_overlays_and_names_each_break(render, tmp_path):
    settings = ROOT / "deploy" / "check"
    docs = render("overlays/local")
    path = tmp_path / "local.yaml"
    path.write_text(yaml.safe_dump_all(docs))
    assert checkov_problems(path, settings) == []
    breaks = [
        ("portal-service", lambda c: c["securityContext"].update(readOnlyRootFilesystem=False), "CKV_K8S_22"),
        ("submission-service", lambda c: c["securityContext"].update(allowPrivilegeEscalation=True), "CKV_K8S_20"),
        ("verification-service", lambda c: c["securityContext"]["capabilities"].update(drop=["NET_RAW"]),
         "CKV_K8S_37"),
        ("test-result-service", lambda c: c["resources"].pop("limits"), "CKV_K8S_11"),
        ("data-donation-service", lambda c: c.update(image=c["image"].split(":")[0]), "CKV_K8S_14"),
    ]
    for deployment, break_it, _ in breaks:
        break_it(container(docs, "Deployment", deployment))
    named(docs, "Deployment", "gateway")["metadata"]["annotations"].pop("checkov.io/skip1")
    path.write_text(yaml.safe_dump_all(docs))
    problems = checkov_problems(path, settings)
    for deployment, _, check in breaks:
        assert any(p.startswith(f"checkov {check} ") and p.endswith(f"Deployment/{deployment}") for p in problems)
    assert any(p.startswith("checkov CKV_K8S_40 ") and p.endswith("Deployment/gateway") for p in problems)


def test_checkov_that_reads_nothing_is_no_pass(tmp_path):
    empty = tmp_path / "empty.yaml"
    empty.write_text("# no resource\n")
    with pytest.raises(CheckFailed, match="checkov checked no Kubernetes resource"):
        checkov_problems(empty, ROOT / "deploy" / "check")


def test_committed_monitoring_component_passes(render):
    assert monitoring_rules(render(PRODUCTION)) == []


def pod_spec(docs: list[dict], kind: str, name: str) -> dict:
    spec = named(docs, kind, name)["spec"]
    return (spec["jobTemplate"]["spec"]["template"] if kind == "CronJob" else spec["template"])["spec"]


@pytest.mark.parametrize("break_it, fragment", [
    (lambda s: s["securityContext"].pop("runAsNonRoot"), "Deployment/portal-service: runAsNonRoot is not set"),
    (lambda s: s["securityContext"].pop("seccompProfile"), "Deployment/portal-service: seccompProfile is not"),
    (lambda s: s["containers"][0]["resources"].pop("requests"),
     "container portal-service: resource requests are missing"),
    (lambda s: s["containers"][0].pop("readinessProbe"), "container portal-service: readiness and liveness probes"),
    (lambda s: s["containers"][0]["readinessProbe"]["httpGet"].update(path="/"),
     "readiness probe is not /health/ready"),
    (lambda s: s["containers"][0]["livenessProbe"]["httpGet"].update(path="/"), "liveness probe is not /health/live"),
])
def test_pod_hygiene_fires(render, break_it, fragment):
    docs = render("base")
    break_it(pod_spec(docs, "Deployment", "portal-service"))
    assert fires(k8s_rules(docs), fragment)


def test_a_second_container_with_a_readiness_probe_fires(render):
    docs = render(PRODUCTION)
    spec = pod_spec(docs, "Deployment", "gateway")
    assert len(spec["containers"]) > 1
    spec["containers"][1]["readinessProbe"] = {"tcpSocket": {"port": 9113}}
    assert fires(k8s_rules(docs, overlay=True), "a second container needs a liveness probe and no readiness probe")


@pytest.mark.parametrize("kind, name, fragment", [
    ("Deployment", "submission-service", "no Deployment submission-service"),
    ("Service", "verification-service", "no Service verification-service"),
    ("Job", "migrate-portal", "no Job migrate-portal running --migrate-only"),
    ("HorizontalPodAutoscaler", "test-result-service", "no HorizontalPodAutoscaler for test-result-service"),
    ("PodDisruptionBudget", "gateway", "Deployment gateway: no PodDisruptionBudget"),
    ("CronJob", "distribution", "no CronJob distribution"),
])
def test_a_missing_object_fires(render, kind, name, fragment):
    docs = [d for d in render("base") if not (d["kind"] == kind and d["metadata"]["name"] == name)]
    assert fires(k8s_rules(docs), fragment)


@pytest.mark.parametrize("change, fragment", [
    ({"concurrencyPolicy": "Allow"}, "CronJob distribution: concurrencyPolicy is not Forbid"),
    ({"schedule": "*/5 * * * *"}, "CronJob distribution: schedule is not hourly"),
])
def test_distribution_cronjob_rules_fire(render, change, fragment):
    docs = render("base")
    named(docs, "CronJob", "distribution")["spec"].update(change)
    assert fires(k8s_rules(docs), fragment)


def test_distribution_cronjob_running_something_else_fires(render):
    docs = render("base")
    container(docs, "CronJob", "distribution")["args"] = ["serve"]
    assert fires(k8s_rules(docs), "CronJob distribution: does not run `distribution-service run`")


def test_distribution_served_and_scheduled_fires(render):
    served = named(render(PRODUCTION), "Deployment", "distribution-service")
    docs = render("base") + [served]
    assert fires(k8s_rules(docs), "both CronJob distribution and Deployment distribution-service")


@pytest.mark.parametrize("break_it, fragment", [
    (lambda d: d["spec"].update(replicas=2), "not one replica with strategy Recreate"),
    (lambda d: d["spec"]["template"]["spec"]["containers"][0].update(args=["run"]),
     "does not run `distribution-service serve`"),
])
def test_distribution_serve_pod_rules_fire(render, break_it, fragment):
    docs = render(PRODUCTION)
    break_it(named(docs, "Deployment", "distribution-service"))
    assert fires(k8s_rules(docs, overlay=True), fragment)


def test_a_scrape_annotation_on_the_wrong_port_fires(render):
    docs = render("base")
    named(docs, "Deployment", "submission-service")["spec"]["template"]["metadata"]["annotations"][
        "prometheus.io/port"] = "8001"
    assert fires(k8s_rules(docs), "Deployment/submission-service: prometheus.io/port is not its metrics containerPort")


def test_monitoring_policy_opening_more_than_metrics_fires(render):
    docs = render("base")
    rule = named(docs, "NetworkPolicy", "metrics-from-monitoring")["spec"]["ingress"][0]
    rule["ports"].append({"port": 8001, "protocol": "TCP"})
    assert fires(k8s_rules(docs), "NetworkPolicy/metrics-from-monitoring opens [8001, 9090]")


def test_an_internal_url_not_naming_an_internal_port_fires(render):
    docs = render("base")
    configmap = next(d for d in docs if d["kind"] == "ConfigMap" and d["metadata"]["name"].startswith("submission-"))
    assert k8s_internal_url_problems(docs) == []
    configmap["data"]["VERIFICATION_INTERNAL_URL"] = "http://verification-service:8002"
    assert fires(k8s_internal_url_problems(docs), "VERIFICATION_INTERNAL_URL=http://verification-service:8002 is not")


def env(docs: list[dict], name: str) -> list[dict]:
    return container(docs, "Deployment", name)["env"]


def set_env(docs: list[dict], deployment: str, key: str, value: str) -> None:
    entries = env(docs, deployment)
    entries[:] = [e for e in entries if e["name"] != key] + [{"name": key, "value": value}]


def test_committed_federation_component_passes(render):
    assert federation_rules(render(PRODUCTION)) == []


@pytest.mark.parametrize("deployment, key, value, fragment", [
    ("federation-callback", "FEDERATION_CALLBACK_ONLY", "false", "FEDERATION_CALLBACK_ONLY is not true"),
    ("federation-callback", "CALLBACK_CERT_HEADER", "X-Other", "the callback is not taken through the gateway"),
    ("federation-callback", "HTTP_PORT", "8007", "HTTP_PORT and the containerPort are not 8006"),
    ("federation-callback", "EFGS_URL", "https://efgs.invalid", "EFGS_URL is not set"),
    ("federation-service", "FEDERATION_CALLBACK_ONLY", "true", "FEDERATION_CALLBACK_ONLY is set, so it would not run"),
    ("federation-service", "CALLBACK_CA_FILE", "/ca.pem", "takes callbacks (they are federation-callback's)"),
    ("federation-service", "HTTP_PORT", "8006", "Deployment federation-service: HTTP_PORT is not the metrics port"),
])
def test_federation_settings_rules_fire(render, deployment, key, value, fragment):
    docs = render(PRODUCTION)
    set_env(docs, deployment, key, value)
    assert fires(federation_rules(docs), fragment)


def test_federation_callback_with_the_signing_keys_fires(render):
    docs = render(PRODUCTION)
    pod = named(docs, "Deployment", "federation-callback")["spec"]["template"]["spec"]
    pod.setdefault("volumes", []).append({"name": "keys", "secret": {"secretName": "federation-certificates"}})
    assert fires(federation_rules(docs), "mounts federation-certificates")


def test_federation_runner_not_labelled_as_job_fires(render):
    docs = render(PRODUCTION)
    labels = named(docs, "Deployment", "federation-service")["spec"]["template"]["metadata"]["labels"]
    labels["app.kubernetes.io/component"] = "server"
    assert fires(federation_rules(docs), "its pods are not labelled component=job")


def test_federation_cronjobs_when_not_served(render):
    docs = [d for d in render(PRODUCTION)
            if not (d["kind"] == "Deployment" and d["metadata"]["name"] == "federation-service")]
    assert fires(federation_rules(docs), "no CronJob federation-upload")


def test_missing_monitors_fire(render):
    docs = [d for d in render(PRODUCTION) if d["kind"] != "ServiceMonitor"]
    assert fires(monitoring_rules(docs), "no ServiceMonitor")
    docs = [d for d in render(PRODUCTION) if d["kind"] != "PodMonitor"]
    assert fires(monitoring_rules(docs), "no PodMonitor selects the gateway's pods")
    docs = [d for d in render(PRODUCTION) if d["kind"] != "PrometheusRule"]
    assert fires(monitoring_rules(docs), "no PrometheusRule en-backend-alerts")


def test_a_service_monitor_missing_a_service_fires(render):
    docs = render(PRODUCTION)
    monitor = named(docs, "ServiceMonitor", "en-services")["spec"]
    monitor["selector"]["matchExpressions"][0]["values"].remove("portal-service")
    assert fires(monitoring_rules(docs), "does not select portal-service, which serves the metrics port")


def test_a_service_monitor_with_the_wrong_job_fires(render):
    docs = render(PRODUCTION)
    endpoint = named(docs, "ServiceMonitor", "en-services")["spec"]["endpoints"][0]
    endpoint["relabelings"][0]["replacement"] = "services"
    assert fires(monitoring_rules(docs), "job is not set to en-services")


def test_probe_rules_fire(render):
    docs = render(PRODUCTION)
    assert gateway_probe_problems(docs) == []
    static = named(docs, "Probe", "gateway-tls")["spec"]["targets"]["staticConfig"]
    static["static"].remove("gateway.en-backend.svc:8445")
    static["relabelingConfigs"][0]["replacement"] = "portal"
    problems = gateway_probe_problems(docs)
    assert fires(problems, "the gateway's port portal (8445) is not probed")
    assert fires(problems, "gateway.en-backend.svc:8443 is not labelled server=app")
