"""The metric rules (deploycheck.observability): which names an expression reads, and that each is defined by a
service, an exporter or a recording rule; the committed rules and alerts pass, and each rule fires on a name
nothing defines."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from conftest import fires
from deploycheck.observability import expression_metrics, metric_problems

ROOT = Path(__file__).resolve().parents[3]
OBSERVABILITY = ROOT / "deploy" / "observability"

SOURCES = 'Counter(label: "en_requests_total")\nHistogram(label: "en_latency_seconds")\n'
RECORDED = {"service:en_requests:rate5m"}


@pytest.mark.parametrize("expr, names", [
    ("up == 0", set()),
    ("sum by (service) (rate(http_server_requests_total[5m]))", {"http_server_requests_total"}),
    ('en_a{service="en_b"} + en_c', {"en_a", "en_c"}),
    ('en_a{path="\\"en_b", route=~\'en_c\', x=~`en_d`}', {"en_a"}),
    ("label_replace(en_x, 'dst', 'en_y', 'src', '(.*)')", {"en_x"}),
    ("service:http_server_requests_5xx:ratio_rate5m > 0.01", {"service:http_server_requests_5xx:ratio_rate5m"}),
    ("max_over_time(service:en_x:ratio[1h:5m])", {"service:en_x:ratio"}),
    ("nginx_up == 0 or probe_success == 0", {"nginx_up", "probe_success"}),
    ("time() - en_last_success_timestamp_seconds offset 1h > 7200", {"en_last_success_timestamp_seconds"}),
    ("histogram_quantile(0.99, sum by (le) (rate(en_latency_seconds_bucket[5m])))", {"en_latency_seconds_bucket"}),
    ("process_resident_memory_bytes + go_goroutines", set()),
], ids=["foreign", "http-server", "label-value", "quoted-values", "string-arguments", "recording-rule", "subquery",
        "exporters", "offset", "histogram", "other-metrics"])
def test_expression_metrics(expr, names):
    assert expression_metrics(expr) == names


@pytest.mark.parametrize("expr", [
    "sum(rate(en_requests_total[5m])) / service:en_requests:rate5m",
    "histogram_quantile(0.9, sum by (le) (rate(en_latency_seconds_bucket[5m])))",
    "en_latency_seconds_sum / en_latency_seconds_count",
    "nginx_up == 0 or rate(nginx_http_requests_total[5m]) == 0",
    "probe_ssl_earliest_cert_expiry - time() < 86400 or probe_success == 0",
    'up{job="en_undefined_total"} == 0',
], ids=["counter-and-rule", "bucket", "sum-count", "nginx", "blackbox", "label-value"])
def test_defined_metrics_pass(expr):
    assert metric_problems("alerts.yaml A", expr, SOURCES, RECORDED) == []


@pytest.mark.parametrize("expr, fragment", [
    ("service:en_errors:rate5m > 0", "alerts.yaml A: service:en_errors:rate5m is no recording rule of rules.yaml"),
    ("nginx_connections_dropped > 0", "alerts.yaml A: nginx_connections_dropped is not a metric of "
                                      "prometheus-nginx-exporter"),
    ("probe_http_status_code != 200", "alerts.yaml A: probe_http_status_code is not a metric of "
                                      "prometheus-blackbox-exporter"),
    ("rate(en_errors_total[5m]) > 0", "alerts.yaml A: no service defines the metric en_errors_total"),
    ("rate(en_latency_seconds_total[5m])", "alerts.yaml A: no service defines the metric en_latency_seconds_total"),
    ("sum(http_server_requests_total)", "alerts.yaml A: no service defines the metric http_server_requests_total"),
    ("en_requests_total / en_request", "alerts.yaml A: no service defines the metric en_request"),
], ids=["recording-rule", "nginx", "blackbox", "service", "histogram-suffix", "http-server", "prefix-of-a-name"])
def test_undefined_metrics_fire(expr, fragment):
    problems = metric_problems("alerts.yaml A", expr, SOURCES, RECORDED)
    assert fires(problems, fragment)
    assert len(problems) == 1


def test_every_name_read_is_reported():
    assert metric_problems("x", "en_b + en_a + service:c:rate5m", SOURCES, RECORDED) == [
        "x: no service defines the metric en_a", "x: no service defines the metric en_b",
        "x: service:c:rate5m is no recording rule of rules.yaml"]


@pytest.fixture(scope="module")
def sources() -> str:
    """What check_observability counts as defined: the quoted strings of the Swift sources, mtail's declarations."""
    text = "\n".join(p.read_text() for folder in ("Services", "Shared") for p in (ROOT / folder).rglob("*.swift"))
    for program in OBSERVABILITY.glob("*.mtail"):
        text += "\n".join(f'"{name}"' for name in
                          re.findall(r"^\s*(?:counter|gauge|histogram)\s+(\w+)", program.read_text(), re.M))
    return text


def rules(name: str) -> list[dict]:
    return [rule for group in yaml.safe_load((OBSERVABILITY / name).read_text())["groups"] for rule in group["rules"]]


RECORDED_RULES = {rule["record"] for rule in rules("rules.yaml") if rule.get("record")}


@pytest.mark.parametrize("file", ["rules.yaml", "alerts.yaml"])
def test_committed_rules_read_defined_metrics(sources, file):
    assert RECORDED_RULES
    read = [(rule.get("alert") or rule["record"], str(rule["expr"])) for rule in rules(file)]
    assert any(expression_metrics(expr) for _, expr in read)
    problems = [p for name, expr in read for p in metric_problems(f"{file} {name}", expr, sources, RECORDED_RULES)]
    assert problems == []


def test_committed_alert_breaks_on_a_renamed_metric(sources):
    alert = next(rule for rule in rules("alerts.yaml") if "en_service_ready" in str(rule["expr"]))
    where = f"alerts.yaml {alert['alert']}"
    assert metric_problems(where, alert["expr"], sources, RECORDED_RULES) == []
    renamed = alert["expr"].replace("en_service_ready", "en_service_readiness")
    assert fires(metric_problems(where, renamed, sources, RECORDED_RULES),
                 "no service defines the metric en_service_readiness")
    assert fires(metric_problems(where, alert["expr"], sources.replace('"en_service_ready"', ""), RECORDED_RULES),
                 "no service defines the metric en_service_ready")
